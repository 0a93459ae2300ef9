"""tfl.while_loop: run a body subgraph while a test subgraph holds, and its gradient.

The WhileLoop op's inputs are the initial loop variables, then the captures of the test and the body; its value, read by
Output nodes, is (final loop variables..., the number of iterations, the recorded stacks...).

The gradient is a second while loop running the body's gradient in reverse (TF1 style). Forward, iteration t maps the
loop variables v(t) to v(t+1) = body(v(t), captures). Backward, with a(t) the gradient reaching v(t) and n the number of
iterations that ran:

    a(n) = the gradients of the loop's outputs
    for t = n-1 down to 0:   a(t)          = (d body / d v)(t)ᵀ · a(t+1)
                             captures_grad += (d body / d captures)(t)ᵀ · a(t+1)

The gradient loop's variables are [k, a..., captures_grad...] with k counting n down to 0. Its body is built by the
ordinary gradients() on the forward body; the forward nodes those gradient ops read (h, h_prev, ...) are *saved values*:
the forward loop pushes each onto a stack (WhileLoop.record; only plans reading the stacks push), and the gradient
body's StackPop nodes pop iteration k-1's value, which stands in for the forward node (Subgraph.restores).

Second order: a gradient loop is a loop like any other, but its body also reads the values it restores. Their gradients,
one per iteration, are pushed onto stacks in turn: a stack's gradient is a stack, which seeds the restored node at each
iteration of the forward loop's next gradient loop.
"""
from collections import namedtuple

import numpy as np

from ..autodiff.gradients import gradients, is_float
from ..errors import ShapeError, TinyflowError
from ..graph import get_default_graph
from ..nodes import Operation, Placeholder, as_node, is_eager
from ..ops.array_ops import checks
from ..ops.elementwise_ops import cast, greater, zeros_like
from ..ops.registry import register_gradient
from ..shapes import is_fully_known, shapes_compatible
from .stacks import StackInput, StackPop, StackPush, StackValue
from .subgraph import (ControlFlowOp, Subgraph, SubgraphKernel, merged_captures, owner, saving,
                       truth, typeless, unaliased)

Recorded = namedtuple("Recorded", "node stack push")  # a body node, the stack input it is pushed on, the push


class _LoopKernel(SubgraphKernel):
    """Run the test's and the body's sub-plans until the test fails or the bound is hit."""

    def __call__(self, *values):
        op, backend = self.op, self.backend
        n, limit, inputs = op.n_vars, op.maximum_iterations, op.body.inputs
        loop, captured = list(values[:n]), values[n:]
        recording = [j for j in range(len(op.recorded)) if self.wants(op.stack_index(j))]
        stacks = {j: StackValue(op.recorded[j].node.name) for j in recording}
        base = dict(zip(op.captures, captured))
        base.update((op.recorded[j].stack, stacks[j]) for j in recording)
        fed = list(inputs) + list(base)
        restores = op.body.restores  # a gradient loop: values of the forward iteration, popped first
        restored = [node for _, node in restores]
        test = self.plan("test", [op.test.outputs[0]], fed)
        body = self.plan(("body", tuple(recording)), list(op.body.outputs) + [op.recorded[j].push for j in recording],
                         fed + restored)
        pops = self.plan("pops", [pop for pop, _ in restores], fed) if restores else None
        steps = 0
        while limit is None or steps < limit:
            feeds = dict(base)
            feeds.update(zip(inputs, loop))
            if not truth(backend.to_host(test.run(feeds)[0]), op):
                break
            if pops is not None:
                feeds.update(zip(restored, pops.run(feeds)))
            loop = body.run(feeds)[:n]
            steps += 1
        recorded = tuple(stacks.get(j) for j in range(len(op.recorded)))
        return tuple(unaliased(loop, values)) + (np.int64(steps),) + recorded


class WhileLoop(ControlFlowOp):
    """`while test(*vars): vars = body(*vars)`, at most `maximum_iterations` times; see the module docstring."""

    kernel_class = _LoopKernel

    def __init__(self, loop_vars, test, body, maximum_iterations=None, name=None):
        self.test, self.body, self.subgraphs = test, body, [test, body]
        self.maximum_iterations = maximum_iterations
        self.n_vars = self.iterations_index = len(loop_vars)  # the output after the loop variables counts iterations
        self.captures = merged_captures(test, body)
        self.branch_outputs = [test.outputs[0], *body.outputs]  # pictures: dashed edges to the op
        self.recorded = []  # Recorded entries, one per stack (added when the gradient is built)
        super().__init__(*loop_vars, *self.captures, name=name)

    @property
    def output_count(self):
        return self.n_vars + 1 + len(self.recorded)

    def stack_index(self, j):
        """The index of the output holding stack `j`."""
        return self.n_vars + 1 + j

    def output_spec(self, index):
        if index < self.n_vars:
            return self.body.inputs[index].shape, self.body.inputs[index].dtype
        return ((), np.dtype(np.int64)) if index == self.n_vars else (None, None)  # the count, or a stack

    def stack_dtype(self, index):
        return None if index <= self.n_vars else self.recorded[index - self.n_vars - 1].node.dtype

    def record(self, node):
        """Push `node` (a node of the body) on a stack at every iteration; returns the stack's number."""
        for j, entry in enumerate(self.recorded):
            if entry.node is node:
                return j
        short = node.name.rsplit("/", 1)[-1]
        with self.graph.name_scope(self.body.label + "/"):
            stack = StackInput(name=f"stack_{short}")
            push = StackPush(stack, node, name=f"push_{short}")
        self.body.adopt(stack)
        self.body.adopt(push)
        self.recorded.append(Recorded(node, stack, push))
        return len(self.recorded) - 1


def trace_loop(cond_fn, body_fn, loop_vars, scope, also=None):
    """(test, body) subgraphs traced on fresh placeholders for `loop_vars`; `also()`: see Subgraph.trace."""
    inputs = [Placeholder(v.shape, v.dtype or "float32", name=f"loop_var{i}") for i, v in enumerate(loop_vars)]
    for start, p in zip(loop_vars, inputs):
        if typeless(start):  # no value yet (tinyflow/jit/values.py): typed by the body
            p.shape, p.dtype, p.typeless = None, None, True
    test = Subgraph.trace(cond_fn, inputs, scope="cond")
    body = Subgraph.trace(body_fn, inputs, scope="body", also=also)
    body.claim(inputs)  # the loop-variable placeholders belong to the loop, never to the outer graph
    for start, p, out in zip(loop_vars, inputs, body.outputs):
        if typeless(p) and out.dtype is not None:  # it takes the type the body gives it
            if p.consumers:
                raise TinyflowError(f"while_loop '{scope}': a loop variable has no value before the loop, but the "
                                    f"body reads it ({p.consumers[0].op_type} '{p.consumers[0].name}') before "
                                    "assigning it; give it a value before the loop")
            p.shape, p.dtype, p.typeless = out.shape, out.dtype, False
            start.resolve(out.shape, out.dtype)
    if len(test.outputs) != 1 or test.outputs[0].dtype != np.bool_:
        raise TinyflowError(f"while_loop '{scope}': cond_fn must return one boolean node (e.g. i < 10), "
                            f"got {[(o.name, str(o.dtype)) for o in test.outputs]}")
    if len(body.outputs) != len(inputs):
        raise TinyflowError(f"while_loop '{scope}': body_fn returned {len(body.outputs)} value(s) for "
                            f"{len(inputs)} loop variable(s); return one new value per loop variable")
    for i, (p, out) in enumerate(zip(inputs, body.outputs)):
        if typeless(p) or typeless(out):
            continue  # no value on this path yet: nothing reads it
        if out.dtype != p.dtype or not shapes_compatible(out.shape, p.shape):
            raise ShapeError(f"while_loop '{scope}': loop variable {i} is {p.dtype} of shape {p.shape} before "
                             f"the loop but body_fn makes it {out.dtype} of shape {out.shape}; a loop variable "
                             "must keep its dtype and shape (cast it, or start from a value of the final shape)")
    return test, body


def while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=None, name=None):
    """Repeat `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)` (a scalar boolean node) is true, at most
    `maximum_iterations` times; body_fn returns one node per loop variable, keeping its dtype and shape. Returns the
    final loop variables (one node if `loop_vars` was one); differentiable."""
    single = not isinstance(loop_vars, (list, tuple))
    loop_vars = [as_node(v) for v in ([loop_vars] if single else loop_vars)]
    if maximum_iterations is not None:
        maximum_iterations = checks("while_loop", name).integer("maximum_iterations", maximum_iterations, minimum=0)
    if any(is_eager(v) for v in loop_vars):  # a Python loop (constants among the loop variables become Tensors)
        values = [v if is_eager(v) else Operation.eager.Tensor(v.value) for v in loop_vars]
        steps = 0
        while (maximum_iterations is None or steps < maximum_iterations) and cond_fn(*values):
            out = body_fn(*values)
            values = list(out) if isinstance(out, (list, tuple)) else [out]
            steps += 1
        return values[0] if single else values
    with get_default_graph().name_scope(name or "while") as scope:
        test, body = trace_loop(cond_fn, body_fn, loop_vars, scope)
        op = WhileLoop(loop_vars, test, body, maximum_iterations, name="While")
        outputs = [op.output(i) for i in range(op.n_vars)]
    return outputs[0] if single else outputs


def _like(grad, node):
    """`grad` in `node`'s dtype: a loop variable keeps its dtype, while float32 * int64 computes in float64."""
    return grad if grad is None or grad.dtype == node.dtype else cast(grad, node.dtype)


def _pop(stack, step, like, name):
    return StackPop(stack, step, element_shape=like.shape, element_dtype=like.dtype, name=name)


@register_gradient(WhileLoop)
def _while_grad(op, grads):
    body = op.body
    floats = [i for i in range(op.n_vars) if is_float(body.inputs[i].dtype)]
    stacked = [(op.recorded[j].node, grads[op.stack_index(j)]) for j in range(len(op.recorded))
               if grads[op.stack_index(j)] is not None]  # second order: gradients of the values it recorded
    if not any(grads[i] is not None for i in floats) and not stacked:
        return [None] * len(op.inputs)
    skip = getattr(op, "skip_input_indices", frozenset())
    wrt = [c for c in op.captures if is_float(c.dtype) and c in body.captures  # what only the test reads gets none
           and op.n_vars + op.captures.index(c) not in skip]
    restored = [node for _, node in body.restores if is_float(node.dtype)]  # op is itself a gradient loop
    adjoints = [_like(grads[i], op.output(i)) if grads[i] is not None else zeros_like(op.output(i)) for i in floats]
    start = [op.output(op.iterations_index, name="iterations")] + adjoints + [zeros_like(c) for c in wrt]
    made = {}

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
        # a loop variable the body's outputs do not depend on: zeros of its own shape, each iteration
        new_adjoint = [_like(g, body.inputs[i]) if g is not None
                       else zeros_like(a if is_fully_known(body.inputs[i].shape) else body.inputs[i])
                       for i, g, a in zip(floats, found, adjoint)]
        new_accumulated = [total if g is None else total + _like(g, c)
                           for total, g, c in zip(accumulated, found[len(floats):len(floats) + len(wrt)], wrt)]
        made["restored"] = found[len(floats) + len(wrt):]
        return [step] + new_adjoint + new_accumulated

    with saving(body):  # the forward body's values read by the gradient body are saved values, not recomputed
        back_test, back_body = trace_loop(lambda k, *state: greater(k, 0), backward_body, start, "while_grad",
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
            by_input[op.inputs.index(stack_of[id(node)])] = backward.output(backward.stack_index(backward.record(grad)))
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
