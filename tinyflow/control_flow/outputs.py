"""Ops with several outputs: a control-flow op's value is a tuple, and `Output` nodes read its entries.

    loop = WhileLoop(...)            one node: runs the loop once per run, value (h, i, iterations, ...)
    h = Output(loop, 0)              ordinary nodes with a shape and dtype each

The gradient engine (autodiff/gradients.py) hands what arrives at `Output(op, k)` to output k of `op`, whose
gradient function gets one gradient per output. Plans tell the op's kernel which outputs they read
(`select_outputs`), so a cond computes only those and a loop records its stacks only for gradient plans.
"""
import numpy as np

from ..backends import NumpyBackend
from ..nodes import Operation
from ..ops.registry import register_gradient


class ControlFlowOp(Operation):
    """Base of ops whose kernel (`kernel_class`, see SubgraphKernel) runs subgraphs.

    Subclasses define `subgraphs` (the subgraphs it runs), `output_count` and `output_spec(index)`, the
    (shape, dtype) of an output.
    """

    abstract = True
    kernel_class = None
    # the gradient engine sets `skip_input_indices` before calling the gradient function: the inputs no gradient
    # is asked for (a loop then keeps no running sum for data it merely reads)
    skips_inputs_off_path = True

    def bind_kernel(self, backend):
        """The kernel running this op's subgraphs on `backend`."""
        return self.kernel_class(self, backend)

    def compute(self, *values):
        """The kernel on host values with the numpy backend (used by backends that cannot bind it)."""
        return self.bind_kernel(NumpyBackend())(*values)

    def infer_shape(self, *shapes):
        return None  # the value is a tuple: each Output node has a shape

    def infer_dtype(self, *dtypes):
        return None

    @property
    def output_dtypes(self):
        """The dtype of each output (a stack's: that of its values); the gradient engine reads it."""
        return [self.output_spec(i)[1] or self.stack_dtype(i) for i in range(self.output_count)]

    def stack_dtype(self, index):
        """The dtype of the values in output `index` if it is a stack (see stacks.py), else None."""
        return None

    def output(self, index, name=None):
        """A new Output node reading entry `index` of this op's value (built where it is asked for)."""
        scope = self.name.rsplit("/", 1)[0] + "/" if "/" in self.name else ""  # next to the op, in its scope
        with self.graph.name_scope(scope):
            return Output(self, index, name=name or f"output{index}")

    @property
    def subgraph_nodes(self):
        """Every node of the subgraphs (pictures draw them inside clusters)."""
        return [n for sub in self.subgraphs for n in list(sub.inputs) + list(sub.nodes)]


class SubgraphKernel:
    """A control-flow op's bound kernel: its sub-plans (cached in `plans`), and the outputs its plan reads."""

    selected = None  # None: every output

    def __init__(self, op, backend):
        self.op, self.backend, self.plans = op, backend, {}

    def select_outputs(self, readers, fetched):
        """Called once by the plan with the nodes reading this op and whether the op itself is fetched."""
        indices = {getattr(r, "output_index", None) for r in readers}
        self.selected = None if fetched or None in indices else indices

    def wants(self, index):
        return self.selected is None or index in self.selected


def unaliased(values, inputs):
    """`values` with copies of those that are one of the `inputs` (which may be a Variable's value)."""
    return [v.copy() if isinstance(v, np.ndarray) and any(v is x for x in inputs) else v for v in values]


class Output(Operation):
    """Entry `index` of a control-flow op's tuple value.  Gradient: handed to that output of the op."""

    def __init__(self, op, index, name=None):
        self.index, self._of = index, op
        super().__init__(op, name=name)

    @property
    def stack_dtype(self):
        """The dtype of the values of the stack this node reads, or None (the gradient engine differentiates
        stacks: a stack's gradient is a stack of per-iteration gradients)."""
        return self._of.stack_dtype(self.index)

    @staticmethod
    def add_stacks(stacks):
        """The sum of several stack-valued gradients (the engine's AddN for stacks)."""
        from .stacks import StackAddN
        return StackAddN(*stacks)

    @property
    def output_index(self):
        """Which output of its input op this node reads (the gradient engine and plans look for it)."""
        return self.index

    def infer_shape(self, op_shape):
        return self._of.output_spec(self.index)[0]

    def infer_dtype(self, op_dtype):
        return self._of.output_spec(self.index)[1]

    def compute(self, value):
        return value[self.index]

    def bind_kernel(self, backend):
        """Any backend: pick the entry (device arrays stay where they are)."""
        index = self.index
        return lambda value: value[index]


@register_gradient(Output)
def _output_grad(op, grad):
    return [grad]  # the engine files it under output `op.index` of the op
