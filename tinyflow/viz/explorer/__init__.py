"""The interactive graph explorer: `tfl.viz.explore(target, feed_dict)` writes one self-contained HTML page that lays
the graph out and steps through the forward pass and the backprop walk: static/explorer.html with its data (JSON,
docs/explorer_and_board.md), dagre, script and styles inline, nothing fetched (its CSP forbids network access)."""
import functools
import html
import json
import os
import pathlib
import string

from ...checkpoint import write_atomically
from ...errors import TinyflowError
from ...graph import Graph, get_default_graph
from ...nodes import Node
from ..graphviz_render import as_list

STATIC = pathlib.Path(__file__).with_name("static")


@functools.lru_cache(maxsize=None)
def inline_text(path):
    """A script or style sheet to copy into a page (ValueError if it could close its element: a corrupt install)."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{path} cannot be inlined: it contains a closing tag")
    return text


def embed_json(data):
    """JSON for a <script type="application/json"> element, escaped so no value closes it or starts markup."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def fill_page(folder, name, **fields):
    """`folder`/<name>.html with <name>.css and <name>.js inline (as $css and $script) and `fields` filled in."""
    return string.Template((folder / f"{name}.html").read_text(encoding="utf-8")).substitute(
        css=inline_text(folder / f"{name}.css"), script=inline_text(folder / f"{name}.js"), **fields)


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
    """Write the explorer page of `target` (nodes, a Graph, a plan from `sess.plan(...)` or an eager Tensor) to
    `path` and return it; the walk goes from `loss` (default: a float target) to `wrt` (default: what it depends on)."""
    if isinstance(feed_dict, (str, os.PathLike)):
        raise ExplorerError(f"explore(target, feed_dict, path): got the string {os.fspath(feed_dict)!r} as "
                            "feed_dict; pass the file name as path=...")
    if feed_dict is not None and not hasattr(feed_dict, "items"):
        raise ExplorerError(f"explore: feed_dict must map placeholders (or their names) to values, got "
                            f"{type(feed_dict).__name__}")
    data, default_title = _data(target, feed_dict, loss, wrt, backend)
    data["title"] = title = title or default_title
    text = fill_page(STATIC, "explorer", title=html.escape(title), data=embed_json(data),
                     dagre=inline_text(STATIC / "dagre.min.js"))
    path = write_atomically(path, lambda f: f.write(text.encode("utf-8")))  # the board may be reading it
    return ExplorerPage(path, data, text)


def _data(target, feed_dict, loss, wrt, backend):
    """(data, title) for whatever `target` is."""
    from ...eager import Tensor
    from .data import eager_data, graph_data, plan_data
    if isinstance(target, Tensor):
        if feed_dict or loss is not None or wrt is not None:
            raise ExplorerError("explore(tensor): an eager Tensor already holds its values; feed_dict, loss "
                                "and wrt apply to graph nodes")
        return eager_data(target), "eager tensor: recorded ops"
    if hasattr(target, "steps") and hasattr(target, "slot_of"):  # an ExecutionPlan
        if loss is not None or wrt is not None:
            raise ExplorerError("explore(plan): a plan is drawn forward only; pass loss/wrt with graph nodes")
        return plan_data(target, feed_dict, backend), f"{'optimised' if target.optimized else 'execution'} plan"
    if target is None or isinstance(target, Graph):
        graph, nodes, title = target or get_default_graph(), None, "graph"
    else:
        nodes = as_list(target)
        if not nodes or not all(isinstance(n, Node) for n in nodes):
            raise ExplorerError(f"explore() draws a node, a list of nodes, a Graph, a plan from sess.plan(...) or "
                                f"an eager Tensor; got {type(target).__name__} {target!r:.80}")
        graph, title = nodes[0].graph, nodes[0].name if len(nodes) == 1 else f"{len(nodes)} nodes"
    for node in (nodes or []) + [loss] + as_list(wrt):
        if node is not None and not isinstance(node, Node):
            raise ExplorerError(f"explore: target, loss and wrt must be graph nodes, got {type(node).__name__} "
                                f"{node!r:.60}")
        if node is not None and node.graph is not graph:
            raise ExplorerError(f"explore: node '{node.name}' ({node.op_type}) belongs to another graph than the "
                                "one drawn; build target, loss and wrt in one graph")
    return graph_data(nodes, graph, feed_dict, loss, wrt, backend), title


__all__ = ["explore", "ExplorerPage", "ExplorerError"]
