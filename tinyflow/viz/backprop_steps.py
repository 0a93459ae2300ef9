"""Backprop, step by step: one picture per node the backward walk takes (graph nodes or eager tensors), replayed
from the walk's own trace; and eager mode's backward graph, the ops a Tensor recorded (like torchviz's make_dot)."""
import base64
import html
import io
import os
import pathlib
from collections.abc import Mapping
from itertools import islice

from ..autodiff.gradients import gradients
from ..eager.autograd import backward, leaf_variable, recorded_inputs
from ..eager.tensor import Tensor
from ..errors import TinyflowError
from ..graph import ancestors
from ..nodes import Node
from .graphviz_render import (STYLES, VizError, digraph, dot_available, label, no_dot_html, require_dot,
                              run_values, summarize)

# the node just taken; finished ones (with their gradient); ones that received part of theirs; waiting ones
CURRENT = dict(style="filled,bold", fillcolor="#ffe066", color="#b8860b", penwidth="2.5")
DONE = dict(style="filled", fillcolor="#d3f0d3", color="#2e7d32")
PARTIAL = dict(style="filled", fillcolor="#ffe3e3", color="#b33a3a")
WAITING = dict(style="filled", fillcolor="#ffffff", color="#555555")
QUEUE_SHOWN = 12  # names of the queue kept per step (the rest is counted)
PAGER = pathlib.Path(__file__).with_name("explorer") / "static" / "steps.js"  # the Previous / Next buttons' script


class BackpropSteps(list):
    """The frames of one backward pass (a graphviz.Digraph each, `.order` the nodes taken), to save and show."""

    def __init__(self, frames, order):
        super().__init__(frames)
        self.order = order

    def save_frames(self, folder, fmt="png"):
        """Write frame_000.png, frame_001.png, ... into `folder`; returns the paths."""
        require_dot()
        os.makedirs(folder, exist_ok=True)
        paths = [os.path.join(folder, f"frame_{i:03d}.{fmt}") for i in range(len(self))]
        for path, frame in zip(paths, self):
            pathlib.Path(path).write_bytes(frame.pipe(format=fmt))
        return paths

    def save_gif(self, path, seconds_per_frame=1.5):
        """One animated GIF of all frames (drawn on a common canvas size)."""
        from PIL import Image
        images = [Image.open(io.BytesIO(frame.pipe(format="png"))).convert("RGB") for frame in self]
        width, height = max(i.width for i in images), max(i.height for i in images)
        canvases = [Image.new("RGB", (width, height), "white") for _ in images]
        for canvas, image in zip(canvases, images):
            canvas.paste(image, ((width - image.width) // 2, 0))
        canvases[0].save(path, save_all=True, append_images=canvases[1:], loop=0,
                         duration=int(seconds_per_frame * 1000))
        return path

    def to_html(self):
        """A self-contained HTML page with every frame and Previous / Next buttons."""
        slides = "".join(
            f'<div class="tf-step" style="display:{"block" if i == 0 else "none"}">'
            f'<img src="data:image/svg+xml;base64,{base64.b64encode(f.pipe(format="svg")).decode()}"/></div>'
            for i, f in enumerate(self))
        uid = f"tfsteps{id(self)}"
        return (f'<div id="{uid}">{slides}<p><button onclick="tfStep(\'{uid}\',-1)">Previous</button> '
                f'<button onclick="tfStep(\'{uid}\',1)">Next</button> <span class="tf-pos">1 / {len(self)}</span></p>'
                f"<script>{PAGER.read_text(encoding='utf-8')}</script></div>")

    def save_html(self, path):
        """Write `to_html()` as a page."""
        pathlib.Path(path).write_text(f"<!doctype html><meta charset='utf-8'><title>backprop steps</title>"
                                      f"<body style='font-family:sans-serif'><h3>Backprop, step by step: "
                                      f"{html.escape(' → '.join(self.order))}</h3>{self.to_html()}</body>",
                                      encoding="utf-8")
        return path

    def _repr_html_(self):
        return self.to_html() if dot_available() else no_dot_html(*self)


def trace_walk(backward, names, skip=None):
    """Run `backward(trace)`: (its steps not `skip`ped, nodes as `names` calls them; pending counts; {node: grad})."""
    steps, pending, grads = [], {}, {}

    def keep(step):
        if skip is not None and skip(step):
            return
        if not steps:  # before the walk: every node's count, the first step's decrements added back
            pending.update(step["pending"])
            pending.setdefault(step["node"], 0)  # the walk forgets a node's count once it is processed
            for parent, _ in step["delivered"]:
                if parent in pending:  # (an eager leaf has no count: it takes each contribution as it comes)
                    pending[parent] += 1
        if step["grad"] is not None and not isinstance(step["grad"], list):  # a list: an op with several outputs
            grads[step["node"]] = step["grad"]
        steps.append(dict(node=names[step["node"]], received=len(step["received"]), delivered=list(step["delivered"]),
                          released=[names[n] for n in step["released"] if n in names], queue_size=len(step["queue"]),
                          queue=[names[n] for n in islice(step["queue"], QUEUE_SHOWN) if n in names]))

    backward(keep)
    return steps, pending, grads


def walk_frames(steps, pending, grads, boxes, value_of, name_of):
    """The pictures of a `trace_walk`; `boxes`: {node: (label lines, inputs)}, `value_of`: a gradient's value."""
    ids = {node: f"n{i}" for i, node in enumerate(boxes)}
    edges = [(ids[i], ids[node]) for node, (_, inputs) in boxes.items() for i in inputs if i in ids]
    left, received, taken, frames = dict(pending), {}, {}, []
    for index, step in enumerate(steps):
        taken[step["node"]] = step
        for target, part in step["delivered"]:
            if target in left:
                left[target] -= 1
            if part is not None:
                received.setdefault(target, []).append(value_of(part))
        queue = ", ".join(map(name_of, step["queue"])) + (", …" if step["queue_size"] > QUEUE_SHOWN else "")
        dot = digraph(f"step{index}", rankdir="BT", fontsize="12", labelloc="t", label=f"step {index + 1} of "
                      f"{len(steps)}: took '{name_of(step['node'])}' from the queue; queue now: [{queue}]")
        dot.node_attr["shape"] = "box"
        for node, (lines, _) in boxes.items():
            parts = received.get(node, [])
            if node in taken:
                grad = value_of(grads.get(node))
                total = f"∑ of {taken[node]['received']}" if grad is None else summarize(grad)
                lines = lines + [f"grad = {total}" if taken[node]["received"] else "no gradient"]
                style = CURRENT if node is step["node"] else DONE
            else:
                lines = lines + ([f"pending {left[node]}"] if node in left else [])
                if parts:
                    lines.append("received " + " + ".join("·" if p is None else summarize(p) for p in parts))
                style = WAITING if not parts else PARTIAL if node in left else DONE  # (no count: an eager leaf)
            dot.node(ids[node], "\\n".join(lines), **style)
        for tail, head in edges:
            dot.edge(tail, head)
        frames.append(dot)
    return BackpropSteps(frames, [name_of(step["node"]) for step in steps])


def backprop_steps(loss, wrt, *, feed_dict=None, session=None, path=None):
    """One picture per step of tfl.gradients(loss, wrt)'s walk, saved to `path` (.gif, .html or a PNG folder)."""
    wrt = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    if not isinstance(loss, Node):
        raise VizError(f"backprop_steps(loss, wrt, ...): loss must be a node, got {type(loss).__name__} {loss!r:.60}")
    for node in wrt:
        if not isinstance(node, Node):
            raise VizError(f"backprop_steps(loss, wrt, ...): wrt must be the node or list of nodes to differentiate "
                           f"against, got {type(node).__name__} {node!r:.60}; pass a feed as feed_dict={{...}}")
    if feed_dict is not None and not isinstance(feed_dict, Mapping):
        raise VizError(f"backprop_steps: feed_dict must map placeholders to values, got {type(feed_dict).__name__} "
                       f"{feed_dict!r:.60}; to save the pictures, pass path=...")
    steps, pending, grads = trace_walk(lambda trace: gradients(loss, wrt, trace=trace),
                                       {n: n for n in ancestors([loss])})
    drawn = sorted({step["node"] for step in steps}, key=lambda n: n.creation_index)
    parts = {p for step in steps for _, p in step["delivered"] if isinstance(p, Node)}
    values = run_values({*drawn, *parts, *grads.values()}, feed_dict, session)  # {} when it cannot run: counts only
    boxes = {n: (label(n, name=n.name) + ([f"value {summarize(values[n])}"] if n in values else []), n.inputs)
             for n in drawn}
    steps = walk_frames(steps, pending, grads, boxes, values.get, lambda n: n.name)
    if path is not None:
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        {".gif": steps.save_gif, ".html": steps.save_html}.get(suffix, steps.save_frames)(path)
    return steps


def recorded(tensor):
    """(ops, leaves) reachable from the tensor's grad_fn: ops in depth-first postorder, leaves as met."""
    if not isinstance(tensor, Tensor):
        raise TinyflowError(f"backward_graph draws an eager Tensor's recorded graph, got {tensor!r}; "
                            "for graph nodes use tfl.viz.to_graphviz")
    ops, leaves, seen = [], [], set()
    stack = [(tensor.grad_fn, False)] if tensor.grad_fn is not None else []
    while stack:
        fn, expanded = stack.pop()
        if expanded:
            ops.append(fn)
        elif id(fn) not in seen:
            seen.add(id(fn))
            stack.append((fn, True))
            for source in reversed(recorded_inputs(fn) or ()):  # input 0 is expanded first
                if source is None or id(source) in seen:  # by identity: == on Tensors compares values
                    continue
                if isinstance(source, Tensor):  # a leaf
                    seen.add(id(source))
                    leaves.append(source)
                else:
                    stack.append((source, False))
    return ops, leaves


def eager_names(items):
    """Readable unique names: a leaf's Variable's name (else "leaf"), an op's type (Multiply, Multiply_1, ...)."""
    names, used = {}, {}
    for item in items:
        owner = leaf_variable(item) if isinstance(item, Tensor) else None
        base = owner.name if owner is not None else "leaf" if isinstance(item, Tensor) else item.op_type
        count = used[base] = used.get(base, -1) + 1
        names[item] = base if count == 0 else f"{base}_{count}"
    return names


def eager_label(item, name):
    """The label lines of a leaf Tensor (its Variable, shape and dtype) or of an op (type, name, shape)."""
    if isinstance(item, Tensor):
        owner = leaf_variable(item)
        return [f"Variable '{owner.name}'" if owner is not None else "leaf tensor", f"{list(item.shape)} {item.dtype}"]
    return label(item, name=name, shape=True)


def tensor_value(tensor):
    """A Tensor's value as an array (anything else as it is)."""
    return tensor.numpy() if isinstance(tensor, Tensor) else tensor


def backward_graph(tensor, show_values=False):
    """A graphviz.Digraph of the ops `tensor` recorded on its way from the leaves (torchviz's make_dot)."""
    ops, leaves = recorded(tensor)
    names = eager_names(leaves + ops)
    dot = digraph("backward", rankdir="BT")
    for leaf in leaves:
        value = [summarize(leaf.numpy())] if show_values else []
        dot.node(f"n{id(leaf)}", "\\n".join(eager_label(leaf, names[leaf]) + value), **STYLES["variable"])
    for fn in ops:
        inputs = recorded_inputs(fn)
        freed = [] if inputs is not None else ["(freed by backward)"]
        lines = eager_label(fn, names[fn]) + [f"at {fn.creation_site}"] + freed
        dot.node(f"n{id(fn)}", "\\n".join(lines), **STYLES["op"])
        for index, source in enumerate(inputs or ()):
            if source is not None:
                dot.edge(f"n{id(source)}", f"n{id(fn)}", label=str(index) if len(inputs) > 1 else "")
    value = f"\\n{summarize(tensor.numpy())}" if show_values else ""
    dot.node("root", f"tensor {list(tensor.shape)}{value}", shape="box", style="filled", fillcolor="#c3e6cb",
             color="#2e7d32")
    if tensor.grad_fn is not None:
        dot.edge(f"n{id(tensor.grad_fn)}", "root")
    return dot


def eager_backprop_steps(tensor, grad=None):
    """One picture per op the eager backward pass processes (the tensors' `.grad`s are not touched)."""
    ops, leaves = recorded(tensor)
    if not ops:
        raise TinyflowError("this tensor recorded no ops: there is no backward pass to show "
                            "(did its inputs require grad?)")
    names = eager_names(leaves + ops)
    walk = eager_walk(tensor, None if grad is None else [grad], {}, {item: item for item in names})
    boxes = {item: (eager_label(item, name), recorded_inputs(item) or ()) for item, name in names.items()}
    return walk_frames(*walk, boxes, tensor_value, names.get)


def eager_walk(tensor, seed, sink, names):
    """`trace_walk` of the eager backward from `tensor` into a private `sink` (`.grad`s stay unchanged)."""
    return trace_walk(lambda trace: backward([tensor], seed, retain_graph=True, sink=sink, trace=trace), names,
                      leaf_step)


def leaf_step(step):
    """Whether a step of the eager walk delivers to a leaf (or passes nothing on): the pictures show ops."""
    return step["node"].__class__ is Tensor or step["grad"] is None
