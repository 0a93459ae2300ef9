"""Algebraic simplification: rewrite rules that are exact in floating point.

    x * 1, 1 * x, x / 1, x ** 1, x + 0, 0 + x, x - 0  ->  x
        only when the constant cannot change x's shape (it broadcasts into x) or dtype.
        x + 0 turns -0.0 into +0.0; they compare equal, so this is accepted.
    x - x  ->  zeros_like(x)   only when x is provably finite (inf - inf and NaN - NaN are NaN)
    -(-x)  ->  x
    identity(x), stop_gradient(x)  ->  x    (a plan computes values, not gradients)
    reshape(reshape(x, s1), s2)  ->  reshape(x, s2);   reshape(x, x's own static shape) -> x
    transpose(transpose(x, p), q)  ->  transpose(x, p∘q);   the identity permutation -> x
A fetched node is never replaced by another node (a fetch stays its own array).
"""
import numpy as np

from ..nodes import Constant
from ..ops.elementwise_ops import ZerosLike
from ..shapes import is_fully_known
from .ir import broadcasts_into, clone, make_node

_NEUTRAL_RIGHT = {"Multiply": 1, "Divide": 1, "Power": 1, "Add": 0, "Subtract": 0}
_NEUTRAL_LEFT = {"Multiply": 1, "Add": 0}


def simplify(graph):
    """A copy of `graph` with the rules above applied until none matches; (graph, counts)."""
    graph = graph.copy()
    simplified = 0
    while True:
        # a rule may build a node another rule applies to (reshape of a merged reshape): sweep again
        count = graph.rewrite(_rewrite)  # (rewrite skips fed nodes; no rule matches a leaf)
        if not count:
            return graph, {"simplified": simplified}
        simplified += count
        graph.nodes.sort(key=lambda n: n.creation_index)


def _rewrite(node):
    """The node computing the same value more simply, or None."""
    op, inputs = node.op_type, node.inputs
    if op in _NEUTRAL_RIGHT and _is_neutral(inputs[1], _NEUTRAL_RIGHT[op], inputs[0], node):
        return inputs[0]
    if op in _NEUTRAL_LEFT and _is_neutral(inputs[0], _NEUTRAL_LEFT[op], inputs[1], node):
        return inputs[1]
    if op == "Subtract" and inputs[0] is inputs[1] and (  # x holds no inf or NaN
            inputs[0].op_type in ("ZerosLike", "OnesLike")
            or isinstance(inputs[0], Constant) and np.all(np.isfinite(inputs[0].value))):
        return make_node(ZerosLike, (inputs[0],), node)
    if op == "Negative" and inputs[0].op_type == "Negative":
        return inputs[0].inputs[0]
    if op in ("Identity", "StopGradient"):
        return inputs[0]
    if op == "Reshape":
        source = inputs[0]
        if source.op_type == "Reshape":
            return clone(node, (source.inputs[0],))
        if is_fully_known(source.shape) and tuple(source.shape) == node.target and source.dtype == node.dtype:
            return source
    if op == "Transpose" and inputs[0].op_type == "Transpose" and None not in (node.axes, inputs[0].axes):
        inner = inputs[0]
        axes = tuple(inner.axes[q] for q in node.axes)
        if axes == tuple(range(len(axes))):
            return inner.inputs[0]
        merged = clone(node, (inner.inputs[0],))
        merged.axes = axes
        return merged
    return None


def _is_neutral(constant, neutral, other, node):
    """Whether `constant` is all `neutral` and leaves `other` unchanged in shape and dtype."""
    if not isinstance(constant, Constant) or other.dtype != node.dtype or other.shape != node.shape:
        return False
    return broadcasts_into(constant.value.shape, other.shape) and bool(np.all(constant.value == neutral))
