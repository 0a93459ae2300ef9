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

Second order: a gradient loop is a loop like any other, but its body also reads the values it
restores. Their gradients, one per iteration, are pushed onto stacks in turn: a stack's
gradient is a stack, which seeds the restored node at each iteration of the forward loop's
next gradient loop.
"""
from ..autodiff.gradients import gradients
from ..nodes import Placeholder
from ..ops.elementwise_ops import cast, greater, zeros_like
from ..ops.registry import register_gradient
from ..shapes import is_fully_known
from .stacks import StackPop
from .subgraph import is_float, owner, saving
from .while_loop import WhileLoop, trace_loop


def _zeros_for(var, adjoint):
    """Zeros for a loop variable the body's outputs do not depend on (its own shape, each iteration)."""
    return zeros_like(adjoint) if is_fully_known(var.shape) else zeros_like(var)


def _like(grad, node):
    """`grad` in `node`'s dtype: a loop variable keeps its dtype, while float32 * int64 computes in float64."""
    return grad if grad is None or grad.dtype == node.dtype else cast(grad, node.dtype)


def _pop(stack, step, like, name):
    return StackPop(stack, step, element_shape=like.shape, element_dtype=like.dtype, name=name)


@register_gradient(WhileLoop)
def _while_grad(op, grads):
    body = op.body
    floats = [i for i in range(op.n_vars) if is_float(body.inputs[i])]
    stacked = [(op.recorded[j].node, grads[op.stack_index(j)]) for j in range(len(op.recorded))
               if grads[op.stack_index(j)] is not None]  # second order: gradients of the values it recorded
    if not any(grads[i] is not None for i in floats) and not stacked:
        return [None] * len(op.inputs)
    skip = getattr(op, "skip_input_indices", frozenset())
    wrt = [c for c in op.captures if is_float(c) and c in body.captures  # what only the test reads gets none
           and op.n_vars + op.captures.index(c) not in skip]
    restored = [node for _, node in body.restores if is_float(node)]  # op is itself a gradient loop
    adjoints = [_like(grads[i], op.output(i)) if grads[i] is not None else zeros_like(op.output(i)) for i in floats]
    start = [op.output(op.iterations_index, name="iterations")] + adjoints + [zeros_like(c) for c in wrt]
    made = {}

    def test(k, *state):
        return greater(k, 0)

    def backward_body(k, *state):
        step = made["step"] = k - 1
        adjoint, accumulated = state[:len(floats)], state[len(floats):]
        # a recorded value's gradient at this iteration, popped from its stack like a saved value (so that a
        # gradient of this loop reaches that stack too)
        made["seeds"] = [(_pop(g, step, node, "pop_grad"), Placeholder(node.shape, node.dtype, name="grad_seed"))
                         for node, g in stacked]
        ys = [body.outputs[i] for i in floats] + [node for node, _ in stacked]
        seeds = list(adjoint) + [seed for _, seed in made["seeds"]]
        xs = [body.inputs[i] for i in floats] + wrt + restored
        found = gradients(ys, xs, grad_ys=seeds, stop_gradients=wrt + restored)
        new_adjoint = [_like(g, body.inputs[i]) if g is not None else _zeros_for(body.inputs[i], a)
                       for i, g, a in zip(floats, found, adjoint)]
        new_accumulated = [total if g is None else total + _like(g, c)
                           for total, g, c in zip(accumulated, found[len(floats):len(floats) + len(wrt)], wrt)]
        made["restored"] = found[len(floats) + len(wrt):]
        return [step] + new_adjoint + new_accumulated

    with saving(body):  # the forward body's values read by the gradient body are saved values, not recomputed
        back_test, back_body = trace_loop(test, backward_body, start, "while_grad",
                                          also=lambda: [g for g in made["restored"] if g is not None]
                                          + [pop for pop, _ in made["seeds"]])
        back_body.restores.extend(made["seeds"])
        _restore_saved_values(op, back_body, made["step"])
    backward = WhileLoop(start, back_test, back_body, name="WhileGrad")
    results = [backward.output(i + 1) for i in range(len(floats) + len(wrt))]
    by_input = dict(zip(floats, results[:len(floats)]))
    by_input.update((op.n_vars + op.captures.index(c), r) for c, r in zip(wrt, results[len(floats):]))
    stack_of = {id(node): pop.inputs[0] for pop, node in body.restores}
    for node, grad in zip(restored, made["restored"]):
        if grad is not None:  # the restored value's gradient at each iteration: a stack, for the stack it came from
            stack = stack_of[id(node)]
            by_input[op.inputs.index(stack)] = backward.output(backward.stack_index(backward.record(grad)))
    return [by_input.get(i) for i in range(len(op.inputs))]


def _restore_saved_values(op, back_body, step):
    """Make the forward loop record each saved value the gradient body reads, and pop it there instead."""
    saved = [c for c in back_body.captures if owner(c) is op.body]
    captures = [c for c in back_body.captures if owner(c) is not op.body]
    for node in saved:
        short = node.name.rsplit("/", 1)[-1]
        stack = op.output(op.stack_index(op.record(node)), name=f"stack_{short}")
        with op.graph.name_scope(back_body.label + "/"):
            pop = _pop(stack, step, node, f"pop_{short}")
        back_body.adopt(pop)
        back_body.restores.append((pop, node))
        captures.append(stack)
    back_body.captures = tuple(sorted(captures, key=lambda n: n.creation_index))
