"""The explorer's data for an eager Tensor: the ops it recorded (its grad_fns) and the leaves they read.

Values are what the ops computed (each keeps its output until a backward pass frees it); gradients come from
the eager engine's own backward pass, run with a trace and a private sink (the tensors' `.grad` stay untouched).
"""
import numpy as np

from ...eager.tensor import Tensor
from ...errors import TinyflowError
from ..eager_graph import _recorded
from .graph_data import record


def eager_data(tensor):
    """The page's data for an eager Tensor's recorded graph (`_recorded` in eager_graph.py)."""
    ops, leaves, edges = _recorded(tensor)
    order = leaves + ops if ops else [tensor]  # leaves first, then each op after what it read; or a lone leaf
    names = _names(order)
    inputs = {fn: [None] * len(fn._next or ()) for fn in ops}
    for source, fn, index in edges:
        inputs[fn][index] = source
    index_of = {item: i for i, item in enumerate(order)}
    notes, walk, grads = [], [], {}
    if ops:
        sink = dict.fromkeys(leaves)
        try:
            walk = trace_backward(tensor, None if tensor.size == 1 else np.ones(tensor.shape, tensor.dtype), sink)
            grads = {leaf: g.numpy() if hasattr(g, "numpy") else g for leaf, g in sink.items() if g is not None}
        except TinyflowError as err:
            notes.append(f"no backprop walk: {err}")
        grads.update((fn, g) for fn, g, _ in walk)
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
            "backprop_order": [names[fn] for fn, _, _ in walk], "notes": notes}
    if walk:
        data["backprop"] = _walk_data(walk, names, edges)
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


def trace_backward(tensor, grad=None, sink=None):
    """The eager engine's walk from `tensor` (seeded with `grad`): [(op, its output's gradient, pending counts)].
    Leaves' gradients go to `sink` ({leaf: None}), never to `.grad`."""
    from ...eager.autograd import backward
    walk = []
    backward([tensor], None if grad is None else [grad], retain_graph=True, sink={} if sink is None else sink,
             trace=lambda step: walk.extend(op_steps(step)))
    return walk


def op_steps(step):
    """[(op, its output's gradient, the pending counts)] for a step of the walk through an op ([] for a leaf)."""
    if step["node"].__class__ is Tensor or step["grad"] is None:
        return []
    return [(step["node"], np.array(step["grad"].numpy()), dict(step["pending"]))]


def _walk_data(walk, names, edges):
    """Steps as the page replays them; the eager engine keeps its partial sums to itself, so contributions
    are counted, not summed."""
    feeds = {}
    for source, fn, _ in edges:
        feeds.setdefault(fn, []).append(source)
    first_fn, _, after_first = walk[0]
    pending = dict(after_first)
    for source in feeds.get(first_fn, ()):
        if source in pending:
            pending[source] += 1
    steps = []
    for fn, _, counts in walk:
        targets = feeds.get(fn, [])
        steps.append({"node": names[fn], "received": None,
                      "delivered": [[names[s], None, None] for s in targets if s in names],
                      "released": [names[s] for s in dict.fromkeys(targets) if counts.get(s) == 0 and s in names],
                      "queue": None, "queue_size": None})
    return {"loss": names[first_fn], "wrt": [], "steps": steps,
            "pending": {names[fn]: count for fn, count in pending.items() if fn in names}}
