"""Reverse-mode autodiff on the graph: `gradients(ys, xs)` builds gradient nodes by the backward walk (backprop.py).

Each gradient is a node built by the registered gradient function; what it returns is checked (one gradient per input,
of the input's shape or one broadcasting made from it) and summed down to the input's shape here, in one place; several
contributions to one node are summed by one AddN. An op with several outputs (control flow: a tuple that Output nodes
read) collects its contributions per output, and its gradient function gets one gradient per output.
"""
import numpy as np

from ..errors import ArgumentError, GradientError, describe
from ..graph import ancestors
from ..nodes import Node, as_node
from ..ops.array_ops import AddN, summed_slice_gradients
from ..ops.broadcasting import SumToShapeOf
from ..ops.elementwise_ops import OnesLike
from ..shapes import can_reduce_to, is_fully_known, shapes_compatible
from ..ops.registry import NOT_DIFFERENTIABLE, gradient_function
from .backprop import backprop


def is_float(dtype):
    """Whether values of `dtype` (None: unknown) are floating point: only those get gradients."""
    return dtype is not None and np.issubdtype(dtype, np.floating)


def _output_dtypes(node):
    """The dtypes of an op with several outputs (control flow), None for an ordinary node."""
    return getattr(node, "output_dtypes", None)


def nodes_between(ys, xs, stop=frozenset()):
    """The float-valued nodes that lie on some path from an x to a y (x and y included), not entering `stop`."""
    needed = ancestors(ys)
    between, stack = set(), [x for x in xs if x in needed]
    while stack:
        node = stack.pop()
        # a gradient flows through a float value, a float stack (a loop's per-iteration values), or an op with
        # several outputs one of which is a float
        dtypes = _output_dtypes(node) or (node.dtype, getattr(node, "stack_dtype", None))
        if node not in between and any(is_float(d) for d in dtypes):
            between.add(node)
            stack.extend(c for c in node.consumers if c in needed and c not in stop)
    return between


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _sum(contributions):
    if len(contributions) <= 1:
        return contributions[0] if contributions else None
    if getattr(contributions[0], "stack_dtype", None) is not None:  # a stack's gradients: summed iteration by iteration
        return contributions[0].add_stacks(contributions)
    contributions = summed_slice_gradients(contributions)
    return AddN(*contributions) if len(contributions) > 1 else contributions[0]


def _same_shape_at_run_time(op, index):
    """True when input `index` of an elementwise op surely has the output's run-time shape: an unknown (None) axis of
    the input could still be stretched by broadcasting, unless no other input has it with a size but a known 1."""
    inp, out = op.inputs[index].shape, op.shape
    if inp is None or out is None or len(inp) != len(out):
        return False
    others = [other.shape for j, other in enumerate(op.inputs) if j != index]
    for axis, (dim_in, dim_out) in enumerate(zip(inp, out)):
        if dim_in is not None and dim_in != dim_out:
            return False
        if dim_in is None:
            for shape in others:  # another input whose size on this axis may not be 1 could stretch this one
                aligned = None if shape is None else axis - (len(out) - len(shape))
                if aligned is None or aligned >= 0 and shape[aligned] != 1:
                    return False
    return True


def _fit_to_input(grad, op, index):
    """Check one returned gradient and sum it down to its input's shape if broadcasting widened it."""
    inp = op.inputs[index]
    if _output_dtypes(inp) is not None or getattr(inp, "stack_dtype", None) is not None:
        return grad  # an Output node's gradient (filed under its output of `inp`), or a stack's
    grad = as_node(grad, like=inp)
    if getattr(op, "elementwise", False) and grad.shape == op.shape and _same_shape_at_run_time(op, index):
        return grad  # provably nothing to sum: skip the no-op node (fewer steps per run)
    return fit_to_shape(grad, op, index, grad.shape, inp.shape, is_fully_known(grad.shape))


def fit_to_shape(grad, op, index, grad_shape, input_shape, known=True):
    """Input `index`'s gradient summed down to its shape (graph and eager), or GradientError naming a bad shape."""
    if known and grad_shape == input_shape:
        return grad
    if not can_reduce_to(grad_shape, input_shape):
        name = getattr(op.inputs[index], "name", None)  # an eager Tensor has none
        named = f"{name!r}, " if name else ""
        raise GradientError(
            f"the gradient function of {describe(op)} returned a gradient of shape {grad_shape} for input "
            f"{index} ({named}shape {input_shape}); it must have the input's shape, or a shape "
            f"that broadcasting made from it. Fix the gradient function registered for '{op.op_type}'.")
    return SumToShapeOf(grad, op.inputs[index])


def one_per_input(result, op):
    """A gradient function's result as one gradient per input of `op` (graph or eager), or GradientError."""
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(result) != len(op.inputs):
        raise GradientError(
            f"the gradient function of {describe(op)} returned {len(result)} gradient(s) for "
            f"{len(op.inputs)} input(s); return exactly one per input (None where there is none).")
    return result


class GraphWalk:
    """What the backward walk (backprop.py) needs from graph mode: gradients are new nodes of the graph."""

    def __init__(self, between, stop):
        self.between, self.stop, self.grads = between, stop, {}

    def parents(self, node, grad):
        parents = [i if i in self.between else None for i in node.inputs] if node not in self.stop else ()
        if not any(p is not None for p in parents):
            return None
        if isinstance(grad, tuple):  # the one contribution to an op with several outputs: per output
            grad = self.add(node, [grad])
        self.grads[node] = grad
        fn = None if grad is None else gradient_function(node)
        if fn is None or fn is NOT_DIFFERENTIABLE:
            return parents, [None] * len(parents)
        # control flow builds gradients only for the inputs needed
        if getattr(node, "skips_inputs_off_path", False):
            node.skip_input_indices = frozenset(i for i, p in enumerate(parents) if p is None)  # (TF's name)
        with node.graph.name_scope(f"{node.name}_grad"):
            grads = [None if g is None or p is None else _fit_to_input(g, node, i)
                     for i, (p, g) in enumerate(zip(parents, one_per_input(fn(node, grad), node)))]
        # an input with several outputs (control flow) collects its contributions per output
        return parents, [(node.output_index, g) if g is not None and _output_dtypes(p) is not None else g
                         for p, g in zip(parents, grads)]

    def add(self, node, contributions):
        if _output_dtypes(node) is None:
            return _sum(contributions)
        per_output = [[] for _ in _output_dtypes(node)]  # (output index, gradient) pairs, summed per output
        for index, grad in contributions:
            per_output[index].append(grad)
        per_output = [_sum(c) for c in per_output]
        return per_output if any(g is not None for g in per_output) else None

    def deliver(self, node, grad):
        self.grads[node] = grad

    def recount(self, waiting):
        return {node: 1 for node in waiting}  # exact from the start: nothing more becomes ready


def gradients(ys, xs, grad_ys=None, trace=None, stop_gradients=()):
    """Gradient nodes of sum(ys) with respect to each of xs (None where x does not affect ys).

    `grad_ys` seeds the walk (default ones, so a non-scalar y is summed). `stop_gradients` are constants (as in TF):
    gradients reach them but go no further (partial derivatives). `trace(step)` sees each step plus the set `between`.
    """
    ys, xs = _as_list(ys), _as_list(xs)
    grad_ys = [None] * len(ys) if grad_ys is None else _as_list(grad_ys)
    if len(grad_ys) != len(ys):
        raise GradientError(f"got {len(grad_ys)} grad_ys for {len(ys)} ys; pass one seed per y")
    for node in ys + xs:
        if not isinstance(node, Node):
            raise ArgumentError(f"gradients() takes graph nodes, got {node!r}: build ys and xs with tinyflow ops "
                                "(for eager Tensors use y.backward())")
    graph = ys[0].graph
    stop = frozenset(_as_list(stop_gradients))
    between = nodes_between(ys, xs, stop)
    pending = {node: sum(1 for c in node.consumers if c in between and c not in stop) for node in between}
    walk = GraphWalk(between, stop)
    with graph.name_scope("gradients"), graph.role("gradient"):
        seeds = {}
        for y, seed in zip(ys, grad_ys):
            if y not in between:
                continue
            seed = OnesLike(y) if seed is None else as_node(seed, like=y)
            if not shapes_compatible(seed.shape, y.shape):
                raise GradientError(f"grad_ys entry of shape {seed.shape} does not match {describe(y)} "
                                    f"of shape {y.shape}")
            seeds[y] = _sum([seeds[y], seed]) if y in seeds else seed
        backprop(seeds, pending, walk, trace if trace is None else lambda step: trace(dict(step, between=between)))
    return [walk.grads.get(x) for x in xs]
