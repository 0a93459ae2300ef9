"""Validating what users put in `feed_dict`: known node, representable dtype, matching shape."""
import numpy as np

from ..errors import FeedError, GraphError
from ..nodes import Node
from ..shapes import matches


def resolve_key(graph, key, fetch=False):
    """The node a feed_dict key (or a fetch) names: a node of `graph`, or a node name."""
    if isinstance(key, str):
        return graph.get_node(key)
    if isinstance(key, Node) and key.graph is graph:
        return key
    what, error = ("fetch", GraphError) if fetch else ("feed_dict key", FeedError)
    if hasattr(key, "graph"):  # a node of another graph, or an eager Tensor
        raise error(f"{what} {key!r} belongs to another graph than this Session's; "
                    "create the Session for the graph the node is in: tfl.Session(graph=node.graph)")
    raise error(f"cannot use {key!r} as a {what}: use graph nodes or node names"
                + (" (or lists, tuples and dicts of them)" if fetch else ""))


def _fail(node, needed_by, problem, fix):
    who = f"{node.op_type} '{node.name}' (shape {node.shape}, dtype {node.dtype})"
    need = f" It is needed by fetch '{needed_by.name}'." if needed_by is not None else ""
    raise FeedError(f"cannot feed {who}: {problem}.{need} {fix}")


def check_feed(node, value, needed_by):
    """`value` as an array of the node's dtype, or FeedError saying what is wrong. Conversions must keep every
    value: fractional or out-of-range numbers for an integer node, and finite numbers too large for a float node
    (1e39 for float32), are refused instead of silently becoming something else."""
    if isinstance(value, Node):
        _fail(node, needed_by, f"got the graph node {value!r}", "Feed numpy arrays; run the node first.")
    if node.dtype is None:
        _fail(node, needed_by, "it has no value to replace", "Feed only nodes that produce values.")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        _fail(node, needed_by, f"the value cannot become an array ({err})", "Feed a numpy array.")
    target = node.dtype
    if array.dtype != target:
        if array.dtype.kind not in "biuf":
            _fail(node, needed_by, f"values of dtype {array.dtype} are not numbers",
                  f"Feed numbers convertible to {target}.")
        if target.kind in "iub":
            if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
                _fail(node, needed_by, "the value has NaN or infinite entries", "Feed finite whole numbers.")
            converted = array.astype(target)
            if not np.array_equal(converted, array):
                _fail(node, needed_by, f"some values of dtype {array.dtype} cannot be represented as {target} "
                      "(fractional or out of range)", "Round them, or use a Placeholder of a wider dtype.")
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                converted = array.astype(target)
            overflowed = np.isinf(converted) & np.isfinite(array)
            if overflowed.any():
                _fail(node, needed_by, f"{int(overflowed.sum())} value(s) of dtype {array.dtype}, such as "
                      f"{array[overflowed].flat[0]!r}, lie outside the range of {target} and would become inf",
                      f"Rescale the data, or use a Placeholder of a wider dtype (e.g. dtype='float64').")
        array = converted
    if not matches(node.shape, array.shape):
        _fail(node, needed_by, f"the value has shape {array.shape}",
              f"Feed an array of shape {node.shape} (None = any size).")
    return array
