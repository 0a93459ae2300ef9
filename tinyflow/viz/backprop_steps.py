"""Backprop, step by step: one picture per node the backward walk takes (graphs here, eager tensors in eager_graph.py):
the node just taken yellow, finished ones green with their gradient, waiting ones with their pending count.
"""
import base64
import html
import io
import os
from collections.abc import Mapping

from ..autodiff.gradients import gradients
from ..nodes import Node
from .graphviz_render import VizError, digraph, dot_available, no_dot_html, require_dot, run_values, summarize

CURRENT = dict(style="filled,bold", fillcolor="#ffe066", color="#b8860b", penwidth="2.5")
DONE = dict(style="filled", fillcolor="#d3f0d3", color="#2e7d32")
PARTIAL = dict(style="filled", fillcolor="#ffe3e3", color="#b33a3a")
WAITING = dict(style="filled", fillcolor="#ffffff", color="#555555")
PAGER = ("<script>function tfStep(id,d){var r=document.getElementById(id),s=r.getElementsByClassName('tf-step'),"
         "i=0;for(;i<s.length;i++){if(s[i].style.display!='none')break;}s[i].style.display='none';"
         "i=Math.min(Math.max(i+d,0),s.length-1);s[i].style.display='block';"
         "r.getElementsByClassName('tf-pos')[0].textContent=(i+1)+' / '+s.length;}</script>")


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
            with open(path, "wb") as f:
                f.write(frame.pipe(format=fmt))
        return paths

    def save_gif(self, path, seconds_per_frame=1.5):
        """One animated GIF of all frames (drawn on a common canvas size)."""
        from PIL import Image
        require_dot()
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
        require_dot()
        slides = "".join(
            f'<div class="tf-step" style="display:{"block" if i == 0 else "none"}">'
            f'<img src="data:image/svg+xml;base64,{base64.b64encode(f.pipe(format="svg")).decode()}"/></div>'
            for i, f in enumerate(self))
        uid = f"tfsteps{id(self)}"
        return (f'<div id="{uid}">{slides}<p><button onclick="tfStep(\'{uid}\',-1)">Previous</button> '
                f'<button onclick="tfStep(\'{uid}\',1)">Next</button> <span class="tf-pos">1 / {len(self)}</span></p>'
                f"{PAGER}</div>")

    def save_html(self, path):
        """Write `to_html()` as a page."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"<!doctype html><meta charset='utf-8'><title>backprop steps</title>"
                    f"<body style='font-family:sans-serif'><h3>Backprop, step by step: "
                    f"{html.escape(' → '.join(self.order))}</h3>{self.to_html()}</body>")
        return path

    def _repr_html_(self):
        return self.to_html() if dot_available() else no_dot_html(*self)


def frame(index, count, title, nodes, edges):
    """The picture of step `index`: `nodes` are (id, label lines, style), `edges` (tail id, head id)."""
    dot = digraph(f"step{index}", node_shape="box", rankdir="BT", fontsize="12", labelloc="t",
                  label=f"step {index + 1} of {count}: {title}")
    for node_id, lines, style in nodes:
        dot.node(node_id, "\\n".join(lines), **style)
    for tail, head in edges:
        dot.edge(tail, head)
    return dot


def _graph_frame(records, index, values):
    record = records[index]
    taken = {r["node"]: r for r in records[:index + 1]}
    between = sorted(record["between"], key=lambda n: n.creation_index)
    nodes = []
    for node in between:
        lines = [node.name if node.op_type in ("Variable", "Placeholder", "Constant") else
                 f"{node.name} ({node.op_type})"]
        if node in values:
            lines.append(f"value {summarize(values[node])}")
        if node in taken:
            grad = taken[node]["grad"]
            known = isinstance(grad, Node) and grad in values
            total = summarize(values[grad]) if known else f"∑ of {len(taken[node]['received'])}"
            lines.append("no gradient" if grad is None else f"grad = {total}")
            style = CURRENT if node is record["node"] else DONE
        else:
            received = record["contributions"].get(node, [])
            lines.append(f"pending {record['pending'][node]}")
            if received:
                lines.append("received " + " + ".join(summarize(values[c]) if c in values else "·" for c in received))
            style = PARTIAL if received else WAITING
        nodes.append((f"n{node.creation_index}", lines, style))
    edges = [(f"n{i.creation_index}", f"n{n.creation_index}") for n in between for i in n.inputs
             if i in record["between"]]
    title = f"took '{record['node'].name}' from the queue; queue now: [{', '.join(n.name for n in record['queue'])}]"
    return frame(index, len(records), title, nodes, edges)


def backprop_steps(loss, wrt, *, feed_dict=None, session=None, path=None):
    """Build tfl.gradients(loss, wrt) and return one picture per step of its walk (with values when the graph can
    run with `feed_dict`), also written to `path` when given: a .gif, an .html page, or a folder of PNGs."""
    wrt = list(wrt) if isinstance(wrt, (list, tuple)) else [wrt]
    _check_arguments(loss, wrt, feed_dict)
    records = []
    gradients(loss, wrt, trace=lambda step: records.append(_snapshot(step)))
    shown = {n for r in records for n in [*r["between"], *r["received"], r["grad"]] if isinstance(n, Node)}
    values = run_values(shown, feed_dict, session)  # {} when placeholders lack values: the frames show counts
    steps = BackpropSteps([_graph_frame(records, i, values) for i in range(len(records))],
                          [r["node"].name for r in records])
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
