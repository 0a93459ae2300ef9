"""Pictures of eager mode: the backward graph a Tensor recorded (like torchviz's make_dot), its ops where the user's
code made them, arrows from inputs to the op that used them; and its backward pass step by step."""
import numpy as np

from ..eager.autograd import backward
from ..eager.tensor import Tensor
from ..errors import TinyflowError
from .backprop_steps import CURRENT, DONE, PARTIAL, WAITING, BackpropSteps, frame
from .graphviz_render import STYLES, digraph, summarize


def recorded(tensor):
    """(ops, leaves, edges) reachable from the tensor's grad_fn, ops in the order they ran (each after the ops it
    read: a depth-first postorder), leaves as first reached; edges are (source, op, input index)."""
    if not isinstance(tensor, Tensor):
        raise TinyflowError(f"backward_graph draws an eager Tensor's recorded graph, got {tensor!r}; "
                            "for graph nodes use tfl.viz.to_graphviz")
    ops, leaves, edges, seen = [], [], [], set()
    stack = [(tensor.grad_fn, False)] if tensor.grad_fn is not None else []
    while stack:
        fn, expanded = stack.pop()
        if expanded:
            ops.append(fn)
            continue
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        stack.append((fn, True))
        for index, source in reversed(list(enumerate(fn._next or ()))):  # input 0 is expanded first
            if source is not None:
                edges.append((source, fn, index))
            if source is None or id(source) in seen:  # by identity: == on Tensors compares values
                continue
            if isinstance(source, Tensor):  # a leaf
                seen.add(id(source))
                leaves.append(source)
            else:
                stack.append((source, False))
    return ops, leaves, edges


def _leaf_label(leaf):
    name = f"Variable '{leaf._owner.name}'" if leaf._owner is not None else "leaf tensor"
    return f"{name}\\n{list(leaf.shape)} {leaf.dtype}"


def backward_graph(tensor, show_values=False):
    """A graphviz.Digraph of the ops `tensor` recorded on its way from the leaves (torchviz's make_dot)."""
    ops, leaves, edges = recorded(tensor)
    dot = digraph("backward", rankdir="BT")
    for leaf in leaves:
        label = _leaf_label(leaf) + (f"\\n{summarize(leaf.numpy())}" if show_values else "")
        dot.node(f"n{id(leaf)}", label, **STYLES["variable"])
    for fn in ops:
        site = f"\\nat {fn.creation_site}" if getattr(fn, "site", None) else ""
        freed = "\\n(freed by backward)" if fn._next is None else ""
        dot.node(f"n{id(fn)}", f"{fn.op_type}\\n{list(fn.shape) if fn.shape is not None else ''}{site}{freed}",
                 **STYLES["op"])
    value = f"\\n{summarize(tensor.numpy())}" if show_values else ""
    dot.node("root", f"tensor {list(tensor.shape)}{value}", shape="box", style="filled", fillcolor="#c3e6cb",
             color="#2e7d32")
    for source, fn, index in edges:
        dot.edge(f"n{id(source)}", f"n{id(fn)}", label=str(index) if len(fn._next or ()) > 1 else "")
    if tensor.grad_fn is not None:
        dot.edge(f"n{id(tensor.grad_fn)}", "root")
    return dot


def eager_backprop_steps(tensor, grad=None):
    """One picture per op the eager backward pass processes (the tensor's `.grad`s are not touched)."""
    ops, leaves, edges = recorded(tensor)
    if not ops:
        raise TinyflowError("this tensor recorded no ops: there is no backward pass to show "
                            "(did its inputs require grad?)")
    records = []  # a private sink keeps the tensors' .grad as they were; the graph is retained for their backward
    backward([tensor], None if grad is None else [grad], retain_graph=True, sink={},
             trace=lambda step: records.extend(op_steps(step)))
    consumers = {fn: sum(1 for source, _, _ in edges if source is fn) for fn in ops}
    links = [(f"n{id(source)}", f"n{id(fn)}") for source, fn, _ in edges]
    frames = []
    for step, (current, _, counts) in enumerate(records):
        done = {fn: g for fn, g, _ in records[:step + 1]}
        nodes = [(f"n{id(leaf)}", [_leaf_label(leaf)],
                  DONE if any(fn in done for source, fn, _ in edges if source is leaf) else WAITING) for leaf in leaves]
        for fn in ops:
            if fn in done:
                nodes.append((f"n{id(fn)}", [fn.op_type, f"grad {summarize(done[fn])}"],
                               CURRENT if fn is current else DONE))
            else:
                pending = counts.get(fn, 0)
                nodes.append((f"n{id(fn)}", [fn.op_type, f"pending {pending}"],
                               PARTIAL if pending < consumers[fn] else WAITING))
        frames.append(frame(step, len(records), f"backward through {current.op_type}", nodes, links))
    return BackpropSteps(frames, [fn.op_type for fn, _, _ in records])


def leaf_step(step):
    """Whether a step of the eager walk delivers to a leaf (or passes nothing on): the pictures show ops."""
    return step["node"].__class__ is Tensor or step["grad"] is None


def op_steps(step):
    """[(op, its output's gradient, the pending counts)] for a step of the walk through an op ([] for a leaf)."""
    return [] if leaf_step(step) else [(step["node"], np.array(step["grad"].numpy()), dict(step["pending"]))]
