"""Constant folding: an op whose inputs are all constants is replaced by its value.

Rule:  op(c1, ..., cn)  ->  Constant(op.compute(c1, ..., cn))
when the op is pure (not stateful, not random), not fetched (a fetch stays a fresh array every run), and its value has
at most FOLD_LIMIT elements (a folded constant lives as long as the plan does). The value is computed once, with the
op's numpy reference kernel; an op that fails is left alone so the run reports the error.

Rule:  zeros_like(x), ones_like(x)  ->  Constant(zeros / ones of x's static shape)
when x's shape is fully known and no stateful op (an assign, an optimizer update) leads to x: their value depends on x's
shape only, not on x's value (backprop seeds the loss's gradient with ones_like(loss), a scalar), but folding drops x's
subgraph from the plan.
"""
import math

import numpy as np

from ..nodes import Constant
from ..shapes import is_fully_known
from .ir import folded_constant, is_pure

FOLD_LIMIT = 1 << 20  # elements
SHAPE_ONLY = {"ZerosLike": np.zeros, "OnesLike": np.ones}  # op type -> its value from a shape and dtype


def fold_constants(graph):
    """A copy of `graph` with every foldable all-constant op replaced by a Constant; (graph, counts)."""
    graph = graph.copy()
    with_effects = set()  # ops a stateful op leads to: the nodes come in topological order

    def rule(node):
        if getattr(node, "stateful", False) or any(i in with_effects for i in node.inputs):
            with_effects.add(node)
        return folded(node, with_effects)
    return graph, {"folded": graph.rewrite(rule)}


def folded(node, with_effects=frozenset()):
    """The Constant holding `node`'s value, or None when it is not foldable."""
    if not is_pure(node) or not node.inputs or not is_fully_known(node.shape) or math.prod(node.shape) > FOLD_LIMIT:
        return None  # (leaves are not pure: they are never folded)
    if node.op_type in SHAPE_ONLY and node.dtype is not None and node.inputs[0] not in with_effects:
        return folded_constant(SHAPE_ONLY[node.op_type](node.shape, node.dtype), node)
    if not all(isinstance(i, Constant) for i in node.inputs):
        return None
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(node.compute(*[i.value for i in node.inputs]))
    except Exception:  # noqa: BLE001 - left for the run, which names the node in its error
        return None
    if value.shape != tuple(node.shape) or value.dtype != node.dtype:
        return None
    return folded_constant(value, node)
