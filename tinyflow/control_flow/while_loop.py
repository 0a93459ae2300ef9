"""tfl.while_loop: run a body subgraph while a test subgraph holds.

The WhileLoop op's inputs are the initial loop variables, then the captures of the test and the body. Its value
is a tuple, read by Output nodes: (final loop variables..., the number of iterations, the recorded stacks...).
The kernel runs the test's and the body's cached sub-plans until the test fails (or `maximum_iterations` steps
ran, as in TensorFlow). When a gradient of the loop is built, the body gets one StackPush per value the gradient
needs (`record`); plans that read those stacks make the kernel push, at every iteration, a reference to each
such value (see stacks.py and while_grad.py).
"""
from collections import namedtuple

import numpy as np

from ..errors import ShapeError, TinyflowError
from ..graph import get_default_graph
from ..nodes import Operation, Placeholder, as_node
from ..shapes import shapes_compatible
from .cond import is_eager
from .outputs import ControlFlowOp, SubgraphKernel, unaliased
from .stacks import StackInput, StackPush, StackValue
from .subgraph import Subgraph, merged_captures, sub_plan, truth

Recorded = namedtuple("Recorded", "node stack push")  # a body node, the stack input it is pushed on, the push


class _LoopKernel(SubgraphKernel):
    """Run the test's and the body's sub-plans until the test fails or the bound is hit."""

    def __call__(self, *values):
        op, backend, plans = self.op, self.backend, self.plans
        n, limit, inputs = op.n_vars, op.maximum_iterations, op.body.inputs
        loop, captured = list(values[:n]), values[n:]
        recording = [j for j in range(len(op.recorded)) if self.wants(op.stack_index(j))]
        stacks = {j: StackValue(op.recorded[j].node.name) for j in recording}
        base = dict(zip(op.captures, captured))
        base.update((op.recorded[j].stack, stacks[j]) for j in recording)
        fed = list(inputs) + list(base)
        restores = op.body.restores  # a gradient loop: values of the forward iteration, popped first
        restored = [node for _, node in restores]
        test = sub_plan(plans, "test", [op.test.outputs[0]], fed, backend)
        body = sub_plan(plans, ("body", tuple(recording)),
                        list(op.body.outputs) + [op.recorded[j].push for j in recording], fed + restored, backend)
        pops = sub_plan(plans, "pops", [pop for pop, _ in restores], fed, backend) if restores else None
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
        self.recorded = []  # Recorded entries, one per stack (added when the gradient is built)
        # a gradient loop's (StackPop, forward node) pairs: the pop's value stands for the node's (pictures)
        self.restored_values = body.restores
        super().__init__(*loop_vars, *self.captures, name=name)

    @property
    def branch_outputs(self):
        """The test and what the body returns (pictures draw dashed edges from them to the op)."""
        return [self.test.outputs[0]] + list(self.body.outputs)

    @property
    def output_count(self):
        return self.n_vars + 1 + len(self.recorded)

    def stack_index(self, j):
        """The index of the output holding stack `j`."""
        return self.n_vars + 1 + j

    def output_spec(self, index):
        if index < self.n_vars:
            var = self.body.inputs[index]
            return var.shape, var.dtype
        if index == self.n_vars:
            return (), np.dtype(np.int64)
        return None, None  # a stack

    def stack_dtype(self, index):
        if index <= self.n_vars:
            return None
        return self.recorded[index - self.n_vars - 1].node.dtype

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


def _eager_while_loop(cond_fn, body_fn, loop_vars, maximum_iterations, single):
    """while_loop on eager Tensors: a Python loop (constants among the loop variables become Tensors)."""
    values = [v if is_eager(v) else Operation.eager.Tensor(v.value) for v in loop_vars]
    steps = 0
    while (maximum_iterations is None or steps < maximum_iterations) and bool(np.asarray(cond_fn(*values))):
        out = body_fn(*values)
        values = list(out) if isinstance(out, (list, tuple)) else [out]
        steps += 1
    return values[0] if single else values


def _loop_input(start, i):
    """The placeholder standing for loop variable i inside the loop."""
    if getattr(start, "typeless", False):  # no value yet (tinyflow/jit/undefined.py): typed by the body
        p = Placeholder(None, "float32", name=f"loop_var{i}")
        p.dtype, p.typeless = None, True
        return p
    return Placeholder(start.shape, start.dtype, name=f"loop_var{i}")


def _take_type(start, p, out, scope):
    """A loop variable without a value before the loop: it takes the type the body gives it."""
    if p.consumers:
        raise TinyflowError(f"while_loop '{scope}': a loop variable has no value before the loop, but the body "
                            f"reads it ({p.consumers[0].op_type} '{p.consumers[0].name}') before assigning it; give "
                            "it a value before the loop")
    p.shape, p.dtype, p.typeless = out.shape, out.dtype, False
    start.resolve(out.shape, out.dtype)


def trace_loop(cond_fn, body_fn, loop_vars, scope, also=None):
    """(test, body) subgraphs of a loop over `loop_vars`, traced on fresh loop-variable placeholders.

    `also()` names body nodes the loop will record besides the loop variables (see Subgraph.trace)."""
    inputs = [_loop_input(v, i) for i, v in enumerate(loop_vars)]
    test = Subgraph.trace(cond_fn, inputs, scope="cond")
    body = Subgraph.trace(body_fn, inputs, scope="body", also=also)
    for p in inputs:  # the loop-variable placeholders belong to the loop, never to the outer graph
        p.subgraph = body
    for start, p, out in zip(loop_vars, inputs, body.outputs):
        if getattr(p, "typeless", False) and out.dtype is not None:
            _take_type(start, p, out, scope)
    if len(test.outputs) != 1 or test.outputs[0].dtype != np.bool_:
        raise TinyflowError(f"while_loop '{scope}': cond_fn must return one boolean node (e.g. i < 10), "
                            f"got {[(o.name, str(o.dtype)) for o in test.outputs]}")
    if len(body.outputs) != len(inputs):
        raise TinyflowError(f"while_loop '{scope}': body_fn returned {len(body.outputs)} value(s) for "
                            f"{len(inputs)} loop variable(s); return one new value per loop variable")
    for i, (p, out) in enumerate(zip(inputs, body.outputs)):
        if getattr(p, "typeless", False) or getattr(out, "typeless", False):
            continue  # no value on this path yet: nothing reads it
        if out.dtype != p.dtype or not shapes_compatible(out.shape, p.shape):
            raise ShapeError(f"while_loop '{scope}': loop variable {i} is {p.dtype} of shape {p.shape} before "
                             f"the loop but body_fn makes it {out.dtype} of shape {out.shape}; a loop variable "
                             "must keep its dtype and shape (cast it, or start from a value of the final shape)")
    return test, body


def while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=None, name=None):
    """Repeat `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)` is true (graph control flow).

    `cond_fn` returns a scalar boolean node; `body_fn` one node per loop variable, of its dtype and a compatible
    shape. With `maximum_iterations=N` the loop stops after N steps (as TensorFlow's). Returns the final loop
    variables (one node if `loop_vars` was one node); loops are differentiable.
    """
    single = not isinstance(loop_vars, (list, tuple))
    loop_vars = [as_node(v) for v in ([loop_vars] if single else loop_vars)]
    if maximum_iterations is not None and (not isinstance(maximum_iterations, (int, np.integer))
                                           or isinstance(maximum_iterations, bool) or maximum_iterations < 0):
        raise TinyflowError(f"maximum_iterations must be a non-negative int or None, got {maximum_iterations!r}")
    if any(is_eager(v) for v in loop_vars):
        return _eager_while_loop(cond_fn, body_fn, loop_vars, maximum_iterations, single)
    graph = get_default_graph()
    with graph.name_scope(name or "while") as scope:
        test, body = trace_loop(cond_fn, body_fn, loop_vars, scope)
        op = WhileLoop(loop_vars, test, body, maximum_iterations, name="While")
        outputs = [op.output(i) for i in range(op.n_vars)]
    return outputs[0] if single else outputs
