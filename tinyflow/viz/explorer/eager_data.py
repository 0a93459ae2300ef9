"""The explorer's data for an eager Tensor: the ops it recorded with their outputs, the leaves they read, and the
eager engine's own backward walk into a private sink (the tensors' `.grad` stay untouched).
"""
import numpy as np

from ...eager.autograd import backward
from ...eager.tensor import Tensor
from ...errors import TinyflowError
from ..backprop_steps import trace_walk
from ..eager_graph import eager_names, leaf_step, recorded, recorded_inputs, recorded_output, tensor_value
from .graph_data import record, walk_data


def eager_data(tensor):
    """The page's data for an eager Tensor's recorded graph (`recorded` in eager_graph.py)."""
    ops, leaves = recorded(tensor)
    order = leaves + ops if ops else [tensor]  # leaves first, then each op after what it read; or a lone leaf
    names = eager_names(order)
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
        leaf = isinstance(item, Tensor)
        records.append(record(names[item], item.op_type, item.shape, item.dtype, "" if leaf else item.creation_site,
                              "variable" if leaf else "op", "",
                              [index_of[s] for s in recorded_inputs(item) or () if s is not None],
                              item.numpy() if leaf else recorded_output(item), grads.get(item)))
    return {"source": "eager", "nodes": records, "groups": {}, "forward_order": [names[item] for item in order],
            "notes": notes, **walk_data(walk, pending, names, tensor_value, tensor.grad_fn)}
