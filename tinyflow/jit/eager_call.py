"""A to_static call inside eager autograd: the traced program is one recorded op, its backward a traced graph.

    f = tfl.jit.to_static(layer)
    loss = tfl.nn.mse_loss(f(x), y); loss.backward(); opt.step()   # as if layer(x) had run eagerly

When grad mode is on and the program is a pure function (no optimizer step or other state
change) with one floating-point output that depends on something requiring grad (a trainable
Variable, or a Tensor argument with requires_grad), the call becomes a `RunProgram` op: its
forward runs the cached plan, and its gradient runs a second cached plan, the program's
backward graph (built once per program by graph-mode autodiff), seeded with the incoming
gradient. Gradients reach the Tensor arguments and the Variables' `.grad`, as in eager mode.
"""
import numpy as np

from ..autodiff.gradients import gradients
from ..ops.registry import register_gradient
from ..graph import ancestors
from ..nodes import Node, Operation, Placeholder, Variable


class ProgramGradient:
    """The backward graph of a one-output program: gradients of the output for its inputs and parameters."""

    def __init__(self, program, session):
        out = program.outputs[0]
        self.program, self.session = program, session
        self.parameters = [n for n in ancestors([out]) if isinstance(n, Variable) and n.trainable
                           and n.dtype.kind == "f"]
        with program.graph.as_default(), program.graph.name_scope(f"{program.fn_name}/backward"):
            self.seed = Placeholder(out.shape, out.dtype, name="output_grad")
            targets = list(program.inputs) + self.parameters
            self.grads = gradients([out], targets, grad_ys=[self.seed])
        session._graph_size = len(program.graph.nodes)  # grown on purpose, once per program
        self._fetches = [g for g in self.grads if g is not None]

    def run(self, feeds, grad, training_feed):
        """One gradient (numpy array or None) per program input, then per parameter."""
        feed = dict(zip(self.program.inputs, feeds))
        feed[self.seed] = np.asarray(grad)
        feed.update(training_feed)
        values = iter(self.session.run(self._fetches, feed) if self._fetches else [])
        return [next(values) if g is not None else None for g in self.grads]


def differentiable(program):
    """Whether calls of this program can join eager autograd (one float output, no state changes)."""
    outputs = program.outputs
    return (len(outputs) == 1 and isinstance(outputs[0], Node) and not program.side_effects
            and outputs[0].dtype is not None and outputs[0].dtype.kind == "f")


class RunProgram(Operation):
    """One eager call of a traced program: inputs are the fed Tensors then the parameters' eager leaves."""

    abstract = True  # internal to to_static: never a graph node, so it stays out of the op registry

    def __init__(self, program, session, gradient, tensors, leaves):
        self.program, self.session, self.gradient, self.feed_count = program, session, gradient, len(tensors)
        super().__init__(*tensors, *leaves)

    def infer_shape(self, *shapes):
        return self.program.outputs[0].shape

    def infer_dtype(self, *dtypes):
        return self.program.outputs[0].dtype

    def training_feed(self):
        flag = self.program.graph.training_flag
        return {} if flag is None else {flag: self.program.training}

    def compute(self, *values):
        feed = dict(zip(self.program.inputs, values[:self.feed_count]))
        feed.update(self.training_feed())
        return self.session.run(self.program.outputs[0], feed)


@register_gradient(RunProgram)
def _run_program_gradient(op, grad):
    feeds = [t.numpy() for t in op.inputs[:op.feed_count]]
    return op.gradient.run(feeds, grad.numpy(), op.training_feed())


def call_recorded(program, session, arrays, tensors_in):
    """Run `program` as a recorded eager op when something it depends on requires grad; else None."""
    from ..eager import Tensor, is_grad_enabled
    from ..eager.runtime import variable_leaf
    if not is_grad_enabled() or not any(isinstance(t, Tensor) for t in tensors_in) or not differentiable(program):
        return None
    gradient = program.__dict__.get("_gradient")
    parameters = gradient.parameters if gradient is not None else [
        n for n in ancestors([program.outputs[0]]) if isinstance(n, Variable) and n.trainable and n.dtype.kind == "f"]
    tensors = [t if isinstance(t, Tensor) else Tensor(a) for t, a in zip(tensors_in, arrays)]
    if not parameters and not any(t.requires_grad for t in tensors):
        return None
    if program.training:  # its backward would run the forward again: another dropout mask, wrong gradients
        return None
    if gradient is None:
        gradient = program._gradient = ProgramGradient(program, session)
    return RunProgram(program, session, gradient, tensors, [variable_leaf(p) for p in parameters])
