"""Constant folding: an op whose inputs are all constants is replaced by its value.

Rule:  op(c1, ..., cn)  ->  Constant(op.compute(c1, ..., cn))
when the op is pure (not stateful, not random), not fetched (a fetch stays a fresh
array every run), and its value has at most FOLD_LIMIT elements (a folded constant
lives as long as the plan does). The value is computed once, with the op's numpy
reference kernel; an op that fails is left alone so the run reports the error.
"""
import math

import numpy as np

from ..nodes import Constant
from .ir import folded_constant, is_leaf, is_pure

FOLD_LIMIT = 1 << 20  # elements


def fold_constants(graph):
    """A copy of `graph` with every foldable all-constant op replaced by a Constant; (graph, counts)."""
    graph = graph.copy()
    folded = 0
    for node in list(graph.nodes):
        if is_leaf(node) or node in graph.fed or not is_pure(node) or graph.is_fetched(node):
            continue
        if not node.inputs or not all(isinstance(i, Constant) for i in node.inputs):
            continue
        if node.shape is None or None in node.shape or math.prod(node.shape) > FOLD_LIMIT:
            continue
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(node.compute(*[i.value for i in node.inputs]))
        except Exception:  # noqa: BLE001 - left for the run, which names the node in its error
            continue
        if value.shape != tuple(node.shape) or value.dtype != node.dtype:
            continue
        graph.replace(node, folded_constant(value, node))
        folded += 1
    graph.prune()
    return graph, {"folded": folded}
