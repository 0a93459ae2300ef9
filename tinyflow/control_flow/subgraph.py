"""What control-flow ops share: subgraphs, the multi-output op base, and the Output nodes reading its entries.

A subgraph holds the nodes a branch or loop-body function built (in the same graph, in a name scope) and the outer
nodes they read, its *captures*: the op's kernel runs a cached sub-plan fed the captures' values. While a loop body's
gradient is built, the body's nodes are *saved values*: captured (popped from a stack), never recomputed (`saving`).

A control-flow op's value is a tuple; `Output(op, k)` nodes read its entries, and the gradient engine hands what
arrives at `Output(op, k)` to output k of `op`. Plans tell the op's kernel which outputs they read
(`select_outputs`), so a cond computes only those and a loop records its stacks only for gradient plans.
"""
import contextlib

import numpy as np

from ..backends import NumpyBackend
from ..errors import ArgumentError, ShapeError, TinyflowError
from ..graph import get_default_graph
from ..nodes import Constant, Node, Operation, Placeholder, as_node
from ..ops.registry import register_gradient
from ..session.plan import ExecutionPlan
from .stacks import add_stacks

_saving = []  # forward loop bodies whose gradient is being built: their nodes are read as saved values


class Subgraph:
    """The nodes a function built, its inputs (placeholders), the outer nodes they read (captures), its outputs."""

    def __init__(self, graph, nodes, outputs, inputs=(), label="", also=()):
        self.graph, self.nodes, self.outputs, self.inputs, self.label = graph, nodes, outputs, tuple(inputs), label
        self.restores = []  # (pop node, forward node): a gradient body's saved values, see while_loop.py
        self.captures = _captures(self, also)

    @classmethod
    def trace(cls, fn, inputs=(), scope="branch", also=None):
        """Call `fn(*inputs)` in a name scope and collect what it built; `also()`: more nodes it computes (recorded)."""
        graph = get_default_graph()
        start = len(graph.nodes)
        with graph.name_scope(scope) as label:
            if not callable(fn):
                raise ArgumentError(f"'{label}' needs a function building its nodes, got {fn!r}; pass e.g. "
                                    "lambda: x + 1 (tfl.cond) or lambda i: i + 1 (tfl.while_loop)")
            result = fn(*inputs)
            single = not isinstance(result, (list, tuple))
            outputs = [result] if single else list(result)
            if not outputs:
                raise TinyflowError(f"the function {getattr(fn, '__qualname__', repr(fn))} of '{label}' returned "
                                    "no value; return one node or a list/tuple of nodes")
            like = next((o for o in outputs if isinstance(o, Node)), None)
            outputs = [as_node(o, like=like) for o in outputs]
        # nodes a subgraph adopted while this function ran (a forward loop's stack pushes) stay that subgraph's;
        # those of an inner subgraph stay the inner one's
        nodes = [n for n in graph.nodes[start:] if not getattr(n, "adopted", False)]
        mine = [n for n in nodes if n.subgraph is None]
        sub = cls(graph, nodes, outputs, inputs, label, also() if also is not None else ())
        sub.single = single
        sub.claim(mine)
        return sub

    def claim(self, nodes):
        """Mark `nodes` as this subgraph's (see `owner`)."""
        for node in nodes:
            node.subgraph = self

    def set_outputs(self, outputs):
        """Replace the outputs (a converted `if` knows them once both branches ran) and find the captures again."""
        self.outputs, self.single = list(outputs), False
        self.captures = _captures(self)

    def adopt(self, node):
        """Make `node`, built after the trace, part of this subgraph (a gradient body's stack pops)."""
        self.claim([node])
        node.adopted = True
        self.nodes.append(node)


@contextlib.contextmanager
def saving(body):
    """While the gradient of loop body `body` is built, its nodes are saved values, never recomputed."""
    _saving.append(body)
    try:
        yield
    finally:
        _saving.pop()


def owner(node):
    """The subgraph a node's value comes from (None: the outer graph); a value restored from a stack: its body."""
    saved_by = next((body for body in _saving if any(node is value for _, value in body.restores)), None)
    owned_by = saved_by or getattr(node, "subgraph", None)
    return owned_by if isinstance(owned_by, Subgraph) else None


def _captures(sub, also=()):
    """Outer nodes the subgraph reads, in creation order. A node built inside *another, finished* subgraph
    (a forward branch read by its gradient branch) is recomputed here, not captured (capturing it would make
    the outer plan run a branch not taken), except in a loop body whose gradient is built (saved values)."""
    own = set(sub.nodes) | set(sub.inputs)
    captured, stack, seen = set(), list(sub.outputs) + list(also), set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        owned_by = owner(node)
        recompute = (owned_by not in (None, sub) and not isinstance(node, Placeholder)
                     and (owned_by not in _saving or isinstance(node, Constant)))
        if node in own or recompute:
            own.add(node)
            stack.extend(node.inputs)
        else:
            captured.add(node)
    leaked = [n for n in captured if isinstance(n, Placeholder) and owner(n) not in (None, *_saving)]
    if leaked:
        raise TinyflowError(f"'{sub.label}' reads {leaked[0].name}, a loop variable of a finished while_loop; "
                            "use the while_loop's outputs instead")
    sub.nodes = sorted(own - set(sub.inputs), key=lambda n: n.creation_index)
    return tuple(sorted(captured, key=lambda n: n.creation_index))


def truth(value, op):
    """A condition's value as a Python bool (it must hold one value)."""
    value = np.asarray(value)
    if value.size != 1:
        raise ShapeError(f"the condition of {op.op_type} '{op.name}' has shape {value.shape}; it must be one "
                         "value (reduce it, e.g. tfl.reduce_max(x > 0) for 'any')")
    return bool(value.reshape(()))


def merged_captures(*subgraphs):
    """The captures of all `subgraphs`, each once, in creation order."""
    return tuple(sorted(set().union(*[sub.captures for sub in subgraphs]), key=lambda n: n.creation_index))


def typeless(node):
    """A graph value with no type yet (tinyflow/jit/values.py): a variable with no value on this path."""
    return isinstance(node, Node) and getattr(node, "typeless", False)


class ControlFlowOp(Operation):
    """Base of ops whose `kernel_class` runs subgraphs; subclasses define `subgraphs`, `output_count`, `output_spec`."""

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

    def plan(self, key, fetches, fed):
        """The cached ExecutionPlan computing `fetches` from the `fed` nodes (built on first use)."""
        if key not in self.plans:
            self.plans[key] = ExecutionPlan(list(fetches), frozenset(fed), self.backend)
        return self.plans[key]


def unaliased(values, inputs):
    """`values` with copies of those that are one of the `inputs` (which may be a Variable's value)."""
    return [v.copy() if isinstance(v, np.ndarray) and any(v is x for x in inputs) else v for v in values]


class Output(Operation):
    """Entry `index` of a control-flow op's tuple value.  Gradient: handed to that output of the op."""

    add_stacks = staticmethod(add_stacks)

    def __init__(self, op, index, name=None):
        self.index = self.output_index = index  # output_index: what the gradient engine and plans look for
        self._of = op
        self.stack_dtype = op.stack_dtype(index)  # a stack's value dtype, or None (its gradient is a stack)
        super().__init__(op, name=name)

    def infer_shape(self, op_shape):
        return self._of.output_spec(self.index)[0]

    def infer_dtype(self, op_dtype):
        return self._of.output_spec(self.index)[1]

    def compute(self, value):
        return value[self.index]

    def bind_kernel(self, backend):
        """Any backend: pick the entry (device arrays stay where they are)."""
        return self.compute


register_gradient(Output)(lambda op, grad: [grad])  # the engine files it under output `op.index` of the op
