"""The interactive graph explorer: `tfl.viz.explore(target, feed_dict)` writes one self-contained HTML page.

The page lays the graph out in the browser (dagre, shipped with tinyflow: no graphviz needed),
with name scopes as clusters that open and close, and a panel showing a clicked node's op type,
name, creation site, static shape and dtype, its value (statistics and a heat map for 2-D values)
and its gradient. Buttons and the arrow keys step through the forward pass in the Session's order,
then the backprop walk in the order tfl.gradients takes it, with each node's pending count and the
contributions it has summed so far.

The data the page draws is embedded as JSON, readable by any tool:
    <script type="application/json" id="tinyflow-data">
    {"source": "graph" | "plan" | "eager",
     "nodes": [{"name", "op", "shape", "dtype", "site", "value": summary | null, "grad": summary | null,
                "kind", "scope", "inputs": [indices of drawn inputs]}, ...],
     "groups": {scope: {"label", "kind": "scope" | "fused"}},
     "forward_order": [names], "backprop_order": [names in the engine's order],
     "backprop": {"loss", "wrt", "pending": {name: count before the walk},
                  "steps": [{"node", "received", "delivered": [[input, contribution, running sum]],
                             "released", "queue", "queue_size"}]},   (only when there is a walk)
     "notes": [strings]}
a summary being {"shape", "dtype", "size", "mean", "std", "min", "max", "nan", "inf", "value" (one element),
"heatmap": {"rows", "cols", "cells"} (2-D)}, with "NaN" / "Infinity" / "-Infinity" for what JSON cannot hold.
"""
import html
import os

from ...errors import TinyflowError
from ...graph import Graph, get_default_graph
from ...nodes import Node
from .page import page_html


class ExplorerError(TinyflowError):
    """explore() was given something it cannot draw, or arguments that do not fit together."""


class ExplorerPage:
    """A written explorer page: `.path` (the HTML file), `.data` (what it draws); Jupyter shows it inline."""

    HEIGHT = 640  # pixels of the inline frame in a notebook

    def __init__(self, path, data, html_text):
        self.path, self.data, self._html = path, data, html_text

    def __repr__(self):
        return f"<tinyflow explorer page {self.path!r}: {len(self.data['nodes'])} nodes>"

    def _repr_html_(self):
        # an iframe keeps the page's script and styles apart from the notebook's; srcdoc needs no server
        return (f'<iframe srcdoc="{html.escape(self._html, quote=True)}" title="tinyflow explorer" '
                f'style="width:100%;height:{self.HEIGHT}px;border:1px solid #ccc;border-radius:4px"></iframe>')


def explore(target=None, feed_dict=None, path="graph.html", *, loss=None, wrt=None, backend=None, title=None):
    """Write the explorer page of `target` to `path` and return it (an ExplorerPage; Jupyter displays it).

    `target`: a node or list of nodes (drawn with everything they need), a Graph (all of it; None: the
    default graph), an ExecutionPlan from `sess.plan(...)` (what the Session runs, fused kernels as
    groups) or an eager Tensor (the ops it recorded). With `feed_dict` (or a graph that needs none),
    nodes show their values. The backprop walk starts at `loss` (default: the target itself when it is one
    float node) and differentiates against `wrt` (default: the trainable Variables and float
    Placeholders it depends on). Drawing never runs an optimizer update and leaves the graph as it was.
    """
    if isinstance(feed_dict, (str, os.PathLike)):
        raise ExplorerError(f"explore(target, feed_dict, path): got the string {os.fspath(feed_dict)!r} as "
                            "feed_dict; pass the file name as path=...")
    if feed_dict is not None and not hasattr(feed_dict, "items"):
        raise ExplorerError(f"explore: feed_dict must map placeholders (or their names) to values, got "
                            f"{type(feed_dict).__name__}")
    data, default_title = _data(target, feed_dict, loss, wrt, backend)
    title = title or default_title
    data["title"] = title
    text = page_html(data, title)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)  # a reader (the board) sees the old page or the new one, never half of one
    return ExplorerPage(path, data, text)


def _data(target, feed_dict, loss, wrt, backend):
    """(data, title) for whatever `target` is."""
    from ...eager import Tensor
    if isinstance(target, Tensor):
        if feed_dict or loss is not None or wrt is not None:
            raise ExplorerError("explore(tensor): an eager Tensor already holds its values; feed_dict, loss "
                                "and wrt apply to graph nodes")
        from .eager_data import eager_data
        return eager_data(target), "eager tensor: recorded ops"
    if hasattr(target, "steps") and hasattr(target, "slot_of"):  # an ExecutionPlan
        if loss is not None or wrt is not None:
            raise ExplorerError("explore(plan): a plan is drawn forward only; pass loss/wrt with graph nodes")
        from .plan_data import plan_data
        title = "optimised plan" if target.optimized is not None else "execution plan"
        return plan_data(target, feed_dict, backend), title
    from .graph_data import graph_data
    if target is None or isinstance(target, Graph):
        graph = target or get_default_graph()
        _check_nodes([loss] + _as_list(wrt), graph, "loss / wrt")
        return graph_data(None, graph, feed_dict, loss, wrt, backend), "graph"
    nodes = _as_list(target)
    if not nodes or not all(isinstance(n, Node) for n in nodes):
        raise ExplorerError(f"explore() draws a node, a list of nodes, a Graph, a plan from sess.plan(...) or an "
                            f"eager Tensor; got {type(target).__name__} {target!r:.80}")
    graph = nodes[0].graph
    _check_nodes(nodes + [loss] + _as_list(wrt), graph, "target, loss and wrt")
    title = nodes[0].name if len(nodes) == 1 else f"{len(nodes)} nodes"
    return graph_data(nodes, graph, feed_dict, loss, wrt, backend), title


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _check_nodes(nodes, graph, what):
    for node in nodes:
        if node is None:
            continue
        if not isinstance(node, Node):
            raise ExplorerError(f"explore: {what} must be graph nodes, got {type(node).__name__} {node!r:.60}")
        if node.graph is not graph:
            raise ExplorerError(f"explore: node '{node.name}' ({node.op_type}) belongs to another graph than the "
                                "one drawn; build target, loss and wrt in one graph")


__all__ = ["explore", "ExplorerPage", "ExplorerError"]
