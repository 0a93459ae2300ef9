"""tfl.cond: run one of two subgraphs, chosen at run time by a boolean node.

The Cond op's inputs are the predicate and both branches' captures; its value is the taken branch's outputs (a tuple,
read by Output nodes): only the taken branch runs, and only the outputs the plan reads. Gradient: d cond = cond(pred,
d true branch, d false branch), each taken with respect to the captures, seeded with the outputs' gradients.
"""

from ..autodiff.gradients import gradients, is_float
from ..errors import ShapeError, TinyflowError
from ..graph import get_default_graph
from ..nodes import as_node, is_eager
from ..ops.elementwise_ops import zeros_like
from ..ops.registry import register_gradient
from .subgraph import ControlFlowOp, Subgraph, SubgraphKernel, merged_captures, truth, typeless, unaliased


class _CondKernel(SubgraphKernel):
    """Evaluate pred, run the taken branch's sub-plan for the outputs this plan reads."""

    def __call__(self, pred, *captured):
        op = self.op
        branch = op.true_branch if truth(self.backend.to_host(pred), op) else op.false_branch
        wanted = [i for i in range(op.output_count) if self.wants(i)]
        plan = self.plan((id(branch), tuple(wanted)), [branch.outputs[i] for i in wanted], op.captures)
        values = dict(zip(wanted, unaliased(plan.run(dict(zip(op.captures, captured))), captured)))
        return tuple(values.get(i) for i in range(op.output_count))


class Cond(ControlFlowOp):
    """The outputs of `true_branch` if pred else those of `false_branch`; only the taken branch runs."""

    kernel_class = _CondKernel

    def __init__(self, pred, true_branch, false_branch, name=None):
        self.true_branch, self.false_branch, self.subgraphs = true_branch, false_branch, [true_branch, false_branch]
        self.output_count = len(true_branch.outputs)
        if len(false_branch.outputs) != self.output_count:
            raise TinyflowError(f"cond: the true branch returns {len(true_branch.outputs)} value(s) and the false "
                                f"branch {len(false_branch.outputs)}; both must return the same number")
        for i, (a, b) in enumerate(zip(true_branch.outputs, false_branch.outputs)):
            if a.dtype != b.dtype and not typeless(a) and not typeless(b):
                raise ShapeError(f"cond: output {i} of the branches has dtype {a.dtype} in the true branch and "
                                 f"{b.dtype} in the false one; cast one of them with tfl.cast so both agree")
        self.captures = merged_captures(true_branch, false_branch)
        self.branch_outputs = [*true_branch.outputs, *false_branch.outputs]  # pictures: dashed edges to the op
        super().__init__(pred, *self.captures, name=name)

    def output_spec(self, index):
        a, b = self.true_branch.outputs[index], self.false_branch.outputs[index]
        if typeless(a) or typeless(b):  # a value with no type yet: the other branch's
            a = b = b if typeless(a) else a
        if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
            return None, a.dtype
        return tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.dtype  # disagreeing dims: unknown

    def infer_shape(self, pred_shape, *capture_shapes):
        if pred_shape is not None and any(d is not None and d != 1 for d in pred_shape):
            raise ShapeError(f"the condition must be a single value, got shape {pred_shape}; "
                             "reduce it first, e.g. tfl.reduce_max(x > 0)")
        return None


def cond(pred, true_fn, false_fn, name=None):
    """`true_fn()` if the scalar boolean node `pred` is true when run, else `false_fn()` (no arguments, same dtypes)."""
    if is_eager(pred):  # eager mode: Python decides, and autograd records the branch that ran
        return true_fn() if pred else false_fn()  # (Tensor.__bool__ says why a tensor of several values fails)
    with get_default_graph().name_scope(name or "cond"):
        true_branch = Subgraph.trace(true_fn, scope="true")
        false_branch = Subgraph.trace(false_fn, scope="false")
        op = Cond(as_node(pred), true_branch, false_branch, name="Cond")
        outputs = [op.output(i) for i in range(op.output_count)]
    return outputs[0] if true_branch.single and false_branch.single else outputs


def _gradient_in(branch, indices, seeds, wrt):
    """d branch.outputs[indices] / d wrt seeded with `seeds` (zeros where unconnected), stopping at the captures: the
    outer backward pass adds the paths between them."""
    grads = gradients([branch.outputs[i] for i in indices], wrt, grad_ys=seeds, stop_gradients=wrt)
    return [zeros_like(c) if g is None else g for c, g in zip(wrt, grads)]


@register_gradient(Cond)
def _cond_grad(op, grads):
    skip = getattr(op, "skip_input_indices", frozenset())
    wrt = [c for i, c in enumerate(op.captures, 1) if is_float(c.dtype) and i not in skip]
    seeded = [i for i, g in enumerate(grads) if g is not None]
    if not wrt or not seeded:
        return [None] * len(op.inputs)
    seeds = [grads[i] for i in seeded]
    result = cond(op.inputs[0], lambda: _gradient_in(op.true_branch, seeded, seeds, wrt),
                  lambda: _gradient_in(op.false_branch, seeded, seeds, wrt), name="cond_grad")
    by_capture = dict(zip(wrt, result if isinstance(result, list) else [result]))
    return [None] + [by_capture.get(c) for c in op.captures]
