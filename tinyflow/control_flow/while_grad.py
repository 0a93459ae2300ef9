"""The gradient of a while loop: a second while loop running the body's gradient in reverse (TF1 style).

Forward, iteration t maps the loop variables v(t) to v(t+1) = body(v(t), captures). Backward,
with a(t) the gradient reaching v(t) and n the number of iterations that ran:

    a(n) = the gradients of the loop's outputs
    for t = n-1 down to 0:   a(t)          = (d body / d v)(t)ᵀ · a(t+1)
                             captures_grad += (d body / d captures)(t)ᵀ · a(t+1)

The gradient loop's variables are [k, a..., captures_grad...] with k counting n down to 0.
Its body is built by the ordinary gradients() on the forward body; the forward nodes those
gradient ops read (h, h_prev, ...) are *saved values*: the forward loop pushes each onto a
stack (WhileLoop.record), and the gradient body's StackPop nodes pop iteration k-1's value,
which stands in for the forward node while the gradient body runs (Subgraph.restores).
"""
from ..autodiff.gradients import gradients
from ..ops.math_ops import greater, zeros_like
from ..ops.registry import register_gradient
from ..shapes import is_fully_known
from .stacks import StackPop
from .subgraph import is_float, owner, saving
from .while_loop import WhileLoop, trace_loop


def _zeros_for(var, adjoint):
    """Zeros for a loop variable the body's outputs do not depend on (its own shape, each iteration)."""
    return zeros_like(adjoint) if is_fully_known(var.shape) else zeros_like(var)


@register_gradient(WhileLoop)
def _while_grad(op, grads):
    body = op.body
    floats = [i for i in range(op.n_vars) if is_float(body.inputs[i])]
    seeded = [i for i in floats if grads[i] is not None]
    if not seeded:
        return [None] * len(op.inputs)
    wrt = [c for c in op.captures if is_float(c) and c in body.captures]  # what only the test reads gets none
    adjoints = [grads[i] if grads[i] is not None else zeros_like(op.output(i)) for i in floats]
    start = [op.output(op.iterations_index, name="iterations")] + adjoints + [zeros_like(c) for c in wrt]
    step_of = {}

    def test(k, *state):
        return greater(k, 0)

    def backward_body(k, *state):
        step = step_of["step"] = k - 1
        adjoint, accumulated = state[:len(floats)], state[len(floats):]
        xs = [body.inputs[i] for i in floats] + wrt
        found = gradients([body.outputs[i] for i in floats], xs, grad_ys=list(adjoint), stop_gradients=wrt)
        new_adjoint = [g if g is not None else _zeros_for(body.inputs[i], a)
                       for i, g, a in zip(floats, found, adjoint)]
        new_accumulated = [total if g is None else total + g for total, g in zip(accumulated, found[len(floats):])]
        return [step] + new_adjoint + new_accumulated

    with saving(body):  # the forward body's nodes read by the gradient body are saved values, not recomputed
        back_test, back_body = trace_loop(test, backward_body, start, "while_grad")
    _restore_saved_values(op, back_body, step_of["step"])
    backward = WhileLoop(start, back_test, back_body, name="WhileGrad")
    results = [backward.output(i + 1) for i in range(len(floats) + len(wrt))]
    by_var = dict(zip(floats, results[:len(floats)]))
    by_capture = dict(zip(wrt, results[len(floats):]))
    return [by_var.get(i) for i in range(op.n_vars)] + [by_capture.get(c) for c in op.captures]


def _restore_saved_values(op, back_body, step):
    """Make the forward loop record each saved value the gradient body reads, and pop it there instead."""
    saved = [c for c in back_body.captures if owner(c) is op.body]
    captures = [c for c in back_body.captures if owner(c) is not op.body]
    for node in saved:
        stack = op.output(op.stack_index(op.record(node)), name=f"stack_{node.name.rsplit('/', 1)[-1]}")
        with op.graph.name_scope(back_body.label + "/"):
            pop = StackPop(stack, step, element_shape=node.shape, element_dtype=node.dtype,
                           name=f"pop_{node.name.rsplit('/', 1)[-1]}")
        back_body.adopt(pop)
        back_body.restores.append((pop, node))
        captures.append(stack)
    back_body.captures = tuple(sorted(captures, key=lambda n: n.creation_index))
