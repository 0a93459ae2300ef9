"""The explorer's data for an eager Tensor: the ops it recorded with their outputs, the leaves they read, and the
eager engine's own backward walk into a private sink (the tensors' `.grad` stay untouched).
"""
import numpy as np

from ...eager.autograd import backward
from ...eager.tensor import Tensor
from ...errors import TinyflowError
from ..eager_graph import leaf_step, recorded
from .graph_data import record, trace_walk, walk_data


def eager_data(tensor):
    """The page's data for an eager Tensor's recorded graph (`recorded` in eager_graph.py)."""
    ops, leaves, edges = recorded(tensor)
    order = leaves + ops if ops else [tensor]  # leaves first, then each op after what it read; or a lone leaf
    names = _names(order)
    inputs = {fn: [None] * len(fn._next or ()) for fn in ops}
    for source, fn, index in edges:
        inputs[fn][index] = source
    index_of = {item: i for i, item in enumerate(order)}
    notes, walk, pending, grads = [], [], {}, {}
    if ops:
        sink = dict.fromkeys(leaves)
        seed = None if tensor.size == 1 else [np.ones(tensor.shape, tensor.dtype)]
        try:
            walk, pending, grads = trace_walk(
                lambda trace: backward([tensor], seed, retain_graph=True, sink=sink, trace=trace), names, leaf_step)
            grads.update((leaf, g) for leaf, g in sink.items() if g is not None)
        except TinyflowError as err:
            notes.append(f"no backprop walk: {err}")
    records = []
    for item in order:
        if isinstance(item, Tensor):  # a leaf
            records.append(record(names[item], "Tensor", item.shape, item.dtype, "", "variable", "", [],
                                  item.numpy(), grads.get(item)))
        else:
            records.append(record(names[item], item.op_type, item.shape, item.dtype, item.creation_site, "op", "",
                                  [index_of[s] for s in inputs[item] if s is not None], getattr(item, "_out", None),
                                  grads.get(item)))
    data = {"source": "eager", "nodes": records, "groups": {}, "forward_order": [names[item] for item in order],
            "backprop_order": [step["node"] for step in walk], "notes": notes}
    if walk:
        data["backprop"] = walk_data(walk, pending, names, lambda g: g.numpy() if hasattr(g, "numpy") else g,
                                     tensor.grad_fn)
    return data


def _names(order):
    """Readable unique names: a Variable's name for its leaf, the op type for ops (Mul, Mul_1, ...)."""
    names, used = {}, {}
    for item in order:
        owner = getattr(item, "_owner", None)
        base = getattr(owner, "name", None) or ("leaf" if item.op_type == "Tensor" else item.op_type)
        count = used.get(base, 0)
        used[base] = count + 1
        names[item] = base if count == 0 else f"{base}_{count}"
    return names
