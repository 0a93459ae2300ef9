"""Constant folding: an op whose inputs are all constants is replaced by its value.

Rule:  op(c1, ..., cn)  ->  Constant(op.compute(c1, ..., cn))   for a pure op, not fetched (a fetch stays a fresh
array), of at most FOLD_LIMIT elements (it lives as long as the plan); an op that fails is left for the run to report.
Rule:  zeros_like(x), ones_like(x)  ->  Constant of x's static shape   when that is known and no stateful op leads to x
(backprop seeds the loss's gradient with ones_like(loss); folding drops x's subgraph from the plan).
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
