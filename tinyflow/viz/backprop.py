"""Backprop, step by step: one picture per node the BFS takes from its queue.

Each frame shows the nodes between `wrt` and the loss. The node just taken is
yellow, finished ones are green with their gradient, and waiting ones show their
pending count (consumers that still owe a contribution) and what they received so
far. It is the picture to show while explaining why the order matters: a node is
taken only when its pending count is 0.
"""
import base64
import html
import io
import os
from collections.abc import Mapping

from ..autodiff.gradients import gradients
from ..errors import TinyflowError
from ..nodes import Node
from ..session import Session
from .graphviz_render import VizError, summarize

_CURRENT = dict(style="filled,bold", fillcolor="#ffe066", color="#b8860b", penwidth="2.5")
_DONE = dict(style="filled", fillcolor="#d3f0d3", color="#2e7d32")
_PARTIAL = dict(style="filled", fillcolor="#ffe3e3", color="#b33a3a")
_WAITING = dict(style="filled", fillcolor="#ffffff", color="#555555")


class BackpropSteps:
    """The frames of one backward pass (graphviz.Digraph each), with ways to save and show them."""

    def __init__(self, frames, order):
        self.frames, self.order = frames, order

    def __iter__(self):
        return iter(self.frames)

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, index):
        return self.frames[index]

    def save_frames(self, folder, fmt="png"):
        """Write frame_000.png, frame_001.png, ... into `folder`; returns the paths."""
        from .graphviz_render import _require_dot
        _require_dot()
        os.makedirs(folder, exist_ok=True)
        paths = []
        for i, frame in enumerate(self.frames):
            path = os.path.join(folder, f"frame_{i:03d}.{fmt}")
            with open(path, "wb") as f:
                f.write(frame.pipe(format=fmt))
            paths.append(path)
        return paths

    def save_gif(self, path, seconds_per_frame=1.5):
        """One animated GIF of all frames (drawn on a common canvas size)."""
        from PIL import Image

        from .graphviz_render import _require_dot
        _require_dot()
        images = [Image.open(io.BytesIO(frame.pipe(format="png"))).convert("RGB") for frame in self.frames]
        width, height = max(i.width for i in images), max(i.height for i in images)
        canvases = []
        for image in images:
            canvas = Image.new("RGB", (width, height), "white")
            canvas.paste(image, ((width - image.width) // 2, 0))
            canvases.append(canvas)
        canvases[0].save(path, save_all=True, append_images=canvases[1:], loop=0,
                         duration=int(seconds_per_frame * 1000))
        return path

    def to_html(self):
        """A self-contained HTML page with every frame and Previous / Next buttons."""
        from .graphviz_render import _require_dot
        _require_dot()
        slides = "".join(
            f'<div class="tf-step" style="display:{"block" if i == 0 else "none"}">'
            f'<img src="data:image/svg+xml;base64,{base64.b64encode(f.pipe(format="svg")).decode()}"/></div>'
            for i, f in enumerate(self.frames))
        uid = f"tfsteps{id(self)}"
        return (f'<div id="{uid}">{slides}<p><button onclick="tfStep(\'{uid}\',-1)">Previous</button> '
                f'<button onclick="tfStep(\'{uid}\',1)">Next</button> <span class="tf-pos">1 / {len(self)}</span></p>'
                "<script>function tfStep(id,d){var r=document.getElementById(id),s=r.getElementsByClassName('tf-step'),"
                "i=0;for(;i<s.length;i++){if(s[i].style.display!='none')break;}s[i].style.display='none';"
                "i=Math.min(Math.max(i+d,0),s.length-1);s[i].style.display='block';"
                "r.getElementsByClassName('tf-pos')[0].textContent=(i+1)+' / '+s.length;}</script></div>")

    def save_html(self, path):
        """Write `to_html()` as a page."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"<!doctype html><meta charset='utf-8'><title>backprop steps</title>"
                    f"<body style='font-family:sans-serif'><h3>Backprop, step by step: "
                    f"{html.escape(' → '.join(self.order))}</h3>{self.to_html()}</body>")
        return path

    def _repr_html_(self):
        from .graphviz_render import dot_available, no_dot_html
        return self.to_html() if dot_available() else no_dot_html(*self.frames)


def _values(records, feed_dict, session):
    """Numbers for every gradient node in the records, if the graph can run with this feed."""
    nodes = {n for r in records for n in r["received"] + ([r["grad"]] if r["grad"] is not None else [])}
    nodes = sorted(nodes, key=lambda n: n.creation_index)
    if not nodes:
        return {}
    graph = nodes[0].graph
    sess = session or Session(graph)
    try:
        return dict(zip(nodes, sess.run(nodes, feed_dict or {})))
    except TinyflowError:
        return {}  # placeholders without values: the frames show counts instead of numbers


def _frame(records, index, values, forward_values):
    from .graphviz_render import digraph
    record = records[index]
    taken = {r["node"]: r for r in records[:index + 1]}
    between = record["between"]
    dot = digraph(f"step{index}", graph_attr=dict(
        rankdir="BT", fontname="Helvetica", fontsize="12", labelloc="t",
        label=f"step {index + 1} of {len(records)}: took '{record['node'].name}' from the queue; "
              f"queue now: [{', '.join(n.name for n in record['queue'])}]"),
        node_attr=dict(fontname="Helvetica", fontsize="10", shape="box"))

    def number(node):
        return summarize(values[node]) if node in values else None

    for node in sorted(between, key=lambda n: n.creation_index):
        lines = [node.name if node.op_type in ("Variable", "Placeholder", "Constant") else
                 f"{node.name} ({node.op_type})"]
        if node in forward_values:
            lines.append(f"value {summarize(forward_values[node])}")
        if node in taken:
            grad = taken[node]["grad"]
            lines.append(f"grad = {number(grad) or ('∑ of ' + str(len(taken[node]['received'])))}"
                         if grad is not None else "no gradient")
            style = _CURRENT if node is record["node"] else _DONE
        else:
            received = record["contributions"].get(node, [])
            lines.append(f"pending {record['pending'][node]}")
            if received:
                shown = [number(c) or "·" for c in received]
                lines.append("received " + " + ".join(shown))
            style = _PARTIAL if received else _WAITING
        dot.node(f"n{node.creation_index}", "\\n".join(lines), **style)
        for inp in node.inputs:
            if inp in between:
                dot.edge(f"n{inp.creation_index}", f"n{node.creation_index}")
    return dot


def backprop_steps(loss, wrt, *, feed_dict=None, session=None, path=None):
    """Build tfl.gradients(loss, wrt) and return one picture per step of its breadth-first walk.

    With `feed_dict` (or a graph without placeholders), the pictures show forward
    values and the numeric gradients received; iterate the result for the frames,
    or use `.save_frames(folder)`, `.save_gif(path)`, `.save_html(path)`. With
    `path`, they are also written there: a .gif, an .html page, or a folder of PNGs.
    Everything after `wrt` is keyword-only: a feed or a path in third place is a mistake.
    """
    wrt = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    _check_arguments(loss, wrt, feed_dict)
    records = []
    gradients(loss, wrt, trace=lambda step: records.append(_snapshot(step)))
    values = _values(records, feed_dict, session)
    forward = sorted(records[0]["between"], key=lambda n: n.creation_index) if records else []
    try:
        forward_values = dict(zip(forward, (session or Session(loss.graph)).run(forward, feed_dict or {})))
    except TinyflowError:
        forward_values = {}  # placeholders without values
    frames = [_frame(records, i, values, forward_values) for i in range(len(records))]
    steps = BackpropSteps(frames, [r["node"].name for r in records])
    if path is not None:
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        {".gif": steps.save_gif, ".html": steps.save_html}.get(suffix, steps.save_frames)(path)
    return steps


def _snapshot(step):
    """A trace record with copies of the walk's live pending counts, contributions and queue (one frame each)."""
    return dict(step, pending=dict(step["pending"]), queue=list(step["queue"]),
                contributions={n: list(c) for n, c in step["contributions"].items() if c})


def _check_arguments(loss, wrt, feed_dict):
    """VizError for the usual mix-ups: a feed where the nodes go, a path or a list where the feed goes."""
    if not isinstance(loss, Node):
        raise VizError(f"backprop_steps(loss, wrt, ...): loss must be a node, got {type(loss).__name__} {loss!r:.60}")
    for node in wrt:
        if not isinstance(node, Node):
            raise VizError(f"backprop_steps(loss, wrt, ...): wrt must be the node or list of nodes to differentiate "
                           f"against, got {type(node).__name__} {node!r:.60}; pass a feed as feed_dict={{...}}")
    if feed_dict is not None and not isinstance(feed_dict, Mapping):
        raise VizError(f"backprop_steps: feed_dict must map placeholders to values, got {type(feed_dict).__name__} "
                       f"{feed_dict!r:.60}; to save the pictures, pass path=...")
