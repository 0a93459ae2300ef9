"""Common-subexpression elimination: two nodes computing the same thing become one.

Rule:  a = op(x, y; attrs), b = op(x, y; attrs)  ->  readers of b read a   (commutative ops' inputs sorted; small equal
Constants merged first, so `x * 2` built twice matches). Random and stateful ops are never merged, nor fetches dropped.
"""
import numpy as np

from ..nodes import Constant
from .ir import attribute_key, is_pure

COMMUTATIVE = frozenset({"Add", "Multiply", "Maximum", "Minimum", "Equal"})
SMALL_CONSTANT = 64  # elements; bigger constants are compared by identity only


def eliminate_common_subexpressions(graph):
    """A copy of `graph` where each distinct (op, inputs, attributes) is computed once; (graph, counts)."""
    graph = graph.copy()
    seen = {}

    def first_of_its_kind(node):
        key = _key(node, graph)
        return None if key is None else seen.setdefault(key, node)
    return graph, {"merged": graph.rewrite(first_of_its_kind)}


def _key(node, graph):
    if isinstance(node, Constant):
        value = node.value
        if value.size > SMALL_CONSTANT:
            return None
        return ("Constant", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if node in graph.fed or not is_pure(node):  # (leaves are not pure)
        return None
    inputs = [id(i) for i in node.inputs]
    if node.op_type in COMMUTATIVE:
        inputs.sort()
    return (type(node), tuple(inputs), attribute_key(node))
