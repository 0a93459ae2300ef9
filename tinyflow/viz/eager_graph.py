"""Pictures of eager mode: the backward graph a Tensor recorded (like torchviz's make_dot), and its
backward pass step by step.

The picture's boxes are the recorded ops (grad_fns) with where the user's code
made them, orange boxes the leaves gradients accumulate into; arrows go from
inputs to the op that used them, so backward runs against the arrows.
"""
import numpy as np

from ..errors import TinyflowError
from .backprop import _CURRENT, _DONE, _PARTIAL, _WAITING, BackpropSteps
from .graphviz_render import STYLES, summarize

_ROOT = dict(shape="box", style="filled", fillcolor="#c3e6cb", color="#2e7d32")


def _recorded(tensor):
    """(ops, leaves, edges) reachable from the tensor's grad_fn; edges are (source, op, input index)."""
    from ..eager import Tensor
    if not isinstance(tensor, Tensor):
        raise TinyflowError(f"backward_graph draws an eager Tensor's recorded graph, got {tensor!r}; "
                            "for graph nodes use tfl.viz.to_graphviz")
    ops, leaves, edges, stack = [], [], [], [tensor.grad_fn] if tensor.grad_fn is not None else []
    seen = set(map(id, stack))
    while stack:
        fn = stack.pop()
        ops.append(fn)
        for index, source in enumerate(fn._next or ()):
            if source is None:
                continue
            edges.append((source, fn, index))
            if id(source) not in seen:
                seen.add(id(source))
                (leaves if isinstance(source, Tensor) else stack).append(source)
    return ops, leaves, edges


def _leaf_label(leaf):
    owner = leaf._owner
    name = f"Variable '{owner.name}'" if owner is not None else "leaf tensor"
    return f"{name}\\n{list(leaf.shape)} {leaf.dtype}"


def _op_label(fn):
    site = f"\\nat {fn.creation_site}" if getattr(fn, "_site", None) else ""
    freed = "\\n(freed by backward)" if fn._next is None else ""
    return f"{fn.op_type}\\n{list(fn.shape) if fn.shape is not None else ''}{site}{freed}"


def backward_graph(tensor, show_values=False):
    """A graphviz.Digraph of the ops `tensor` recorded on its way from the leaves (torchviz's make_dot)."""
    import graphviz
    ops, leaves, edges = _recorded(tensor)
    dot = graphviz.Digraph("backward", graph_attr=dict(rankdir="BT", fontname="Helvetica"),
                           node_attr=dict(fontname="Helvetica", fontsize="10"))
    for leaf in leaves:
        label = _leaf_label(leaf) + (f"\\n{summarize(leaf.numpy())}" if show_values else "")
        dot.node(f"n{id(leaf)}", label, **STYLES["variable"])
    for fn in ops:
        dot.node(f"n{id(fn)}", _op_label(fn), **STYLES["op"])
    value = f"\\n{summarize(tensor.numpy())}" if show_values else ""
    dot.node("root", f"tensor {list(tensor.shape)}{value}", **_ROOT)
    for source, fn, index in edges:
        dot.edge(f"n{id(source)}", f"n{id(fn)}", label=str(index) if len(fn._next or ()) > 1 else "")
    if tensor.grad_fn is not None:
        dot.edge(f"n{id(tensor.grad_fn)}", "root")
    return dot


def eager_backprop_steps(tensor, grad=None):
    """One picture per op the eager backward pass processes (the tensor's `.grad`s are not touched).

    Each frame shows the recorded ops: the one just processed in yellow, finished ones
    green with the gradient of their output, waiting ones with how many consumers still
    owe them a contribution.
    """
    import graphviz

    from ..eager.autograd import backward
    from .explorer.eager_data import op_steps
    ops, leaves, edges = _recorded(tensor)
    if not ops:
        raise TinyflowError("this tensor recorded no ops: there is no backward pass to show "
                            "(did its inputs require grad?)")
    records = []
    backward([tensor], None if grad is None else [grad], retain_graph=True, sink={},
             trace=lambda step: records.extend(op_steps(step)))
    frames = []
    for step, (current, _, counts) in enumerate(records):
        done = {fn: g for fn, g, _ in records[:step + 1]}
        dot = graphviz.Digraph(f"step{step}", graph_attr=dict(
            rankdir="BT", fontname="Helvetica", labelloc="t",
            label=f"step {step + 1} of {len(records)}: backward through {current.op_type}"),
            node_attr=dict(fontname="Helvetica", fontsize="10", shape="box"))
        for leaf in leaves:
            arrived = any(fn in done for source, fn, _ in edges if source is leaf)
            dot.node(f"n{id(leaf)}", _leaf_label(leaf), **(_DONE if arrived else _WAITING))
        for fn in ops:
            if fn in done:
                style, extra = (_CURRENT if fn is current else _DONE), f"grad {summarize(done[fn])}"
            else:
                pending = counts.get(fn, 0)
                style, extra = (_PARTIAL if pending < _incoming(fn, edges) else _WAITING), f"pending {pending}"
            dot.node(f"n{id(fn)}", f"{fn.op_type}\\n{extra}", **style)
        for source, fn, _ in edges:
            dot.edge(f"n{id(source)}", f"n{id(fn)}")
        frames.append(dot)
    return BackpropSteps(frames, [fn.op_type for fn, _, _ in records])


def _incoming(fn, edges):
    return sum(1 for source, _, _ in edges if source is fn)
