"""Graph pictures with graphviz: every kind of node drawn distinctly, name scopes as clusters."""
import os
import shutil

import numpy as np

from ..errors import TinyflowError
from ..graph import get_default_graph
from ..nodes import Constant, Node, Placeholder, Variable

# kind -> graphviz node attributes; the legend shows them in this order
STYLES = {
    "placeholder": dict(shape="ellipse", style="filled", fillcolor="#cfe2ff", color="#3d6fb6"),
    "variable": dict(shape="box", style="rounded,filled", fillcolor="#ffd8a8", color="#c46a00"),
    "state": dict(shape="box", style="rounded,filled,dashed", fillcolor="#fff3d6", color="#c49a00"),
    "constant": dict(shape="box", style="filled", fillcolor="#eeeeee", color="#9a9a9a", fontcolor="#555555"),
    "op": dict(shape="box", style="filled", fillcolor="#ffffff", color="#333333"),
    "gradient": dict(shape="box", style="filled", fillcolor="#ffd6d6", color="#b33a3a"),
    "optimizer": dict(shape="hexagon", style="filled", fillcolor="#d3f0d3", color="#2e7d32"),
}
LEGEND = {"placeholder": "Placeholder (fed data)", "variable": "Variable (trained)",
          "state": "Variable (state: optimizer slots, moving stats)", "constant": "Constant",
          "op": "forward op", "gradient": "gradient op", "optimizer": "optimizer update"}


class VizError(TinyflowError):
    """A picture cannot be made (graphviz's `dot` missing, an unknown file type)."""


def kind_of(node):
    """Which of the STYLES a node is drawn with."""
    if isinstance(node, Placeholder):
        return "placeholder"
    if isinstance(node, Variable):
        return "variable" if node.trainable else "state"
    if isinstance(node, Constant):
        return "constant"
    if node.role in ("gradient", "optimizer"):
        return node.role
    return "op"


def summarize(value):
    """A short text for a value: scalars exactly, arrays as shape and a few statistics."""
    value = np.asarray(value)
    if value.size == 1:
        return f"{value.reshape(()).item():.4g}"
    if value.size == 0 or value.dtype.kind not in "biuf":
        return f"{value.dtype}{list(value.shape)}"
    return (f"{list(value.shape)} mean {value.mean():.3g} std {value.std():.3g}\\n"
            f"min {value.min():.3g} max {value.max():.3g}")


def _nodes_to_draw(graph, target, show_gradients):
    if target is None:
        nodes = list(graph.nodes)
    else:
        targets = target if isinstance(target, (list, tuple)) else [target]
        needed, stack = set(), list(targets)
        while stack:
            node = stack.pop()
            if node not in needed:
                needed.add(node)
                stack.extend(node.inputs)
        nodes = sorted(needed, key=lambda n: n.creation_index)
    if not show_gradients:
        nodes = [n for n in nodes if n.role == "forward"]
    return nodes


def _label(node, show_values, values):
    short = node.name.rsplit("/", 1)[-1]
    lines = [short] if short == node.op_type else [node.op_type, short]
    if show_values:
        value = values.get(node) if values else None
        if value is None and isinstance(node, (Variable, Constant)):
            value = node.value
        if value is not None:
            lines.append(summarize(value))
    return "\\n".join(lines)


def _legend_label(kinds):
    """One HTML-like table naming each kind of node in its colours (one node: no edges to upset the layout)."""
    rows = "".join(f'<TR><TD BGCOLOR="{STYLES[k]["fillcolor"]}" COLOR="{STYLES[k]["color"]}">'
                   f"{LEGEND[k]}</TD></TR>" for k in kinds)
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2"><TR><TD BORDER="0"><B>legend</B></TD></TR>{rows}</TABLE>>'


def to_graphviz(target=None, show_shapes=True, show_values=False, show_gradients=True, graph=None, values=None):
    """A graphviz.Digraph of the graph (or only what `target` needs), with a legend.

    Placeholders, Variables, state Variables, Constants, forward ops, gradient ops and
    optimizer updates are drawn distinctly; name scopes become nested clusters;
    edges carry static shapes. `values` (node -> array) adds value summaries, as do
    Variables' own values when `show_values` is set. Same graph, same DOT text.
    """
    import graphviz
    if graph is None:
        first = target[0] if isinstance(target, (list, tuple)) and target else target
        graph = first.graph if isinstance(first, Node) else get_default_graph()
    nodes = _nodes_to_draw(graph, target, show_gradients)
    drawn = set(nodes)
    dot = graphviz.Digraph("tinyflow", graph_attr=dict(rankdir="TB", newrank="true", fontname="Helvetica", fontsize="11"),
                           node_attr=dict(fontname="Helvetica", fontsize="10"),
                           edge_attr=dict(fontname="Helvetica", fontsize="8", color="#666666"))
    clusters = {}

    def container(scope):
        """The (nested) cluster subgraph of a name scope, created on first use."""
        if not scope:
            return dot
        if scope not in clusters:
            clusters[scope] = graphviz.Digraph(name=f"cluster_{scope}", graph_attr=dict(
                label=scope.rsplit("/", 1)[-1], style="rounded", color="#aaaaaa", fontcolor="#555555"))
        return clusters[scope]

    for node in nodes:
        scope = node.name.rsplit("/", 1)[0] if "/" in node.name else ""
        container(scope).node(f"n{node.creation_index}", _label(node, show_values, values), **STYLES[kind_of(node)])
    for scope in list(clusters):  # every enclosing scope gets a cluster too, even without nodes of its own
        while "/" in scope:
            scope = scope.rsplit("/", 1)[0]
            container(scope)
    # attach clusters innermost first (graphviz copies a subgraph when attached), so each lands in its parent
    for scope in sorted(clusters, key=lambda s: (-s.count("/"), s)):
        parent = scope.rsplit("/", 1)[0] if "/" in scope else ""
        container(parent).subgraph(clusters[scope])
    for node in nodes:
        for inp in node.inputs:
            if inp in drawn:
                label = str(inp.shape) if show_shapes and inp.shape is not None else ""
                dot.edge(f"n{inp.creation_index}", f"n{node.creation_index}", label=label)
    dot.node("legend", _legend_label([k for k in STYLES if any(kind_of(n) == k for n in nodes)]),
             shape="plaintext")
    return dot


def dot_available():
    """True when graphviz's `dot` program is installed."""
    return shutil.which("dot") is not None


def _require_dot():
    if not dot_available():
        raise VizError("graphviz's `dot` program is not installed, so pictures cannot be rendered. "
                       "Install it with `sudo apt-get install graphviz` (Debian/Ubuntu), "
                       "`brew install graphviz` (macOS) or `conda install graphviz`; "
                       "to_graphviz() still returns the DOT source without it.")


def render(target, path, **options):
    """Draw `target` (a node, a list of nodes, or a Graph) to `path`: .png, .svg or .pdf by suffix."""
    root, suffix = os.path.splitext(os.fspath(path))
    fmt = suffix.lstrip(".").lower()
    if fmt not in ("png", "svg", "pdf"):
        raise VizError(f"cannot render to '{path}': use a .png, .svg or .pdf file name")
    _require_dot()
    if hasattr(target, "nodes") and not isinstance(target, Node):  # a Graph
        dot = to_graphviz(None, graph=target, **options)
    else:
        dot = to_graphviz(target, **options)
    picture = dot.pipe(format=fmt)  # render first: a failure must not leave an empty file behind
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(picture)
    return path


def svg(target=None, graph=None):
    """SVG text of a picture, or None without `dot` (for Jupyter's _repr_svg_)."""
    if not dot_available():
        return None
    return to_graphviz(target, graph=graph).pipe(format="svg").decode("utf-8")
