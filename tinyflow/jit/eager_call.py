"""A to_static call inside eager autograd: the traced program is one recorded op, its backward a traced graph.

    f = tfl.jit.to_static(layer)
    loss = tfl.nn.mse_loss(f(x), y); loss.backward(); opt.step()   # as if layer(x) had run eagerly

With grad mode on, a call of a pure program (no state change, evaluation mode) with one floating-point output is a
`RunProgram` op: its forward runs the cached plan, its gradient the program's backward graph (built once by graph-mode
autodiff). With `create_graph=True` each gradient is a recorded call of the backward graph, differentiable again.
"""
import numpy as np

from ..autodiff.gradients import gradients
from ..eager import Tensor, is_grad_enabled
from ..eager.runtime import variable_leaf
from ..graph import ancestors
from ..nodes import Node, Operation, Placeholder, Variable
from ..ops.registry import register_gradient


class GraphFunction:
    """One node of a traced graph as a function of some Placeholders (and of the trainable Variables it reads)."""

    def __init__(self, session, inputs, output, training_feed, name):
        self.session, self.inputs, self.output = session, list(inputs), output
        self.training_feed, self.name = training_feed, name
        self.parameters = [n for n in ancestors([output]) if isinstance(n, Variable) and n.trainable
                           and n.dtype.kind == "f"]
        self._derivatives = None
        self.built = []  # the nodes of its backward graph, once built

    def __call__(self, values):
        """The output's value (numpy) for these input values."""
        return self.session.run(self.output, {**dict(zip(self.inputs, values)), **self.training_feed})

    def derivatives(self):
        """Per input, then per parameter: the GraphFunction (of the inputs and the output's seed) of its gradient."""
        if self._derivatives is None:
            graph = self.output.graph
            start = len(graph.nodes)
            with graph.as_default(), graph.name_scope(f"{self.name}/backward"):
                self._seed = Placeholder(self.output.shape, self.output.dtype, name="output_grad")
                grads = gradients([self.output], self.inputs + self.parameters, grad_ys=[self._seed])
            self.session.accept_graph_growth()  # grown on purpose, once per function
            self.built = graph.nodes[start:]
            self._derivatives = [None if g is None else GraphFunction(self.session, self.inputs + [self._seed], g,
                                                                      self.training_feed, f"{self.name}/backward")
                                 for g in grads]
        return self._derivatives

    def all_built(self):
        """The nodes of its backward graphs, those of its derivatives' included."""
        return self.built + [n for d in self._derivatives or () if d is not None for n in d.all_built()]

    def gradient_values(self, values, seed):
        """The gradients (numpy, or None) for every input then every parameter, from one run."""
        derivatives = self.derivatives()
        fetches = [d.output for d in derivatives if d is not None]
        feed = {**dict(zip(self.inputs + [self._seed], [*values, np.asarray(seed)])), **self.training_feed}
        results = iter(self.session.run(fetches, feed) if fetches else [])
        return [None if d is None else next(results) for d in derivatives]


def why_not_recordable(program):
    """Why calls of this program cannot join eager autograd; None when they can."""
    out = program.outputs[0] if len(program.outputs) == 1 else None
    if program.side_effects:
        return "changes state (an optimizer step or assign inside it)"
    if program.training:  # its backward would run the forward again: another dropout mask, wrong gradients
        return "runs in training mode (f.train())"
    if not isinstance(out, Node) or out.dtype is None or out.dtype.kind != "f":
        return "does not return exactly one floating-point tensor"
    return None


class RunProgram(Operation):
    """One eager call of a GraphFunction: inputs are the fed Tensors then the eager leaves of its parameters."""

    abstract = True  # internal to to_static: never a graph node, so it stays out of the op registry

    def __init__(self, function, tensors):
        self.function, self.feed_count = function, len(tensors)
        super().__init__(*tensors, *[variable_leaf(p) for p in function.parameters])

    def infer_shape(self, *shapes):
        return self.function.output.shape

    def infer_dtype(self, *dtypes):
        return self.function.output.dtype

    def compute(self, *values):
        return self.function(values[:self.feed_count])


@register_gradient(RunProgram)
def _run_program_gradient(op, grad):
    fed = op.inputs[:op.feed_count]
    if is_grad_enabled():  # backward(create_graph=True): gradients that are recorded calls, differentiable again
        return [None if d is None else RunProgram(d, list(fed) + [grad]) for d in op.function.derivatives()]
    return op.function.gradient_values([t.numpy() for t in fed], grad.numpy())


def call_recorded(program, session, arrays, tensors_in):
    """Run `program` as a recorded eager op when something it depends on requires grad; else None."""
    if not is_grad_enabled() or not any(isinstance(t, Tensor) for t in tensors_in) or why_not_recordable(program):
        return None
    function = program.function or GraphFunction(session, program.inputs, program.outputs[0], program.training_feed,
                                                 program.fn_name)
    tensors = [t if isinstance(t, Tensor) else Tensor(a) for t, a in zip(tensors_in, arrays)]
    if not function.parameters and not any(t.requires_grad for t in tensors):
        return None
    program.function = function
    return RunProgram(function, tensors)
