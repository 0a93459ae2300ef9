"""Graph pictures with graphviz: every kind of node drawn distinctly, name scopes as clusters, the fused kernels
of an optimised plan as clusters naming the ops they replaced."""
import functools
import html
import os
import shutil

import numpy as np

from ..checkpoint import write_atomically
from ..errors import TinyflowError
from ..graph import ancestors, get_default_graph
from ..nodes import Constant, Node, Placeholder, Variable
from ..passes.fusion import FusedElementwise

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
FUSED = dict(style="rounded,filled", color="#7b1fa2", fillcolor="#f3e5f5", fontcolor="#4a148c")
# a PNG's longer side at most, in pixels (a 4K screen's width; 40 inches at graphviz's 96 dpi): a big model's
# full-size PNG (a ResNet-18: 2064 x 8708) takes seconds to rasterise and no screen shows it; .svg and .pdf keep all
PNG_MAX_SIDE = 3840
NO_DOT = ("graphviz's `dot` program is not installed, so this graph cannot be drawn: SVG and PNG pictures are "
          "made from the DOT text by `dot` itself, there is no way around it. Install it with `sudo apt-get install "
          "graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or `conda install graphviz`, then restart the "
          "kernel.")


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
    return node.role if node.role in ("gradient", "optimizer") else "op"


def scope_of(name):
    """The name scope of a node name: "layer1/dense/MatMul" -> "layer1/dense" ("" at the top)."""
    return name.rsplit("/", 1)[0] if "/" in name else ""


def summarize(value):
    """A short text for a value: scalars exactly, arrays as shape and a few statistics."""
    value = np.asarray(value)
    if value.size == 1:
        return f"{value.reshape(()).item():.4g}"
    if value.size == 0 or value.dtype.kind not in "biuf":
        return f"{value.dtype}{list(value.shape)}"
    return (f"{list(value.shape)} mean {value.mean():.3g} std {value.std():.3g}\\n"
            f"min {value.min():.3g} max {value.max():.3g}")


def as_list(value):
    """`value` as a list of nodes: [] for None, a list or tuple as a list, anything else alone."""
    return [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]


def nodes_to_draw(graph, targets, show_gradients=True):
    """The nodes a picture of `targets` (None: the whole graph) shows, in creation order."""
    if targets is None:
        nodes = list(graph.nodes)
    else:
        found, new = set(), ancestors(targets)
        while new:  # control flow: draw the branches / loop bodies it runs, inside their clusters
            found |= new
            new = ancestors([m for n in new for m in getattr(n, "subgraph_nodes", ())]) - found
        nodes = sorted(found, key=lambda n: n.creation_index)
    return nodes if show_gradients else [n for n in nodes if n.role == "forward"]


def run_values(nodes, feed_dict=None, session=None, backend=None, notes=None):
    """{node: value} of the `nodes` that update no state, from one run; {} when it cannot run (why: in `notes`)."""
    from ..session import Session
    tainted = set()  # stateful, or computed from a stateful op: never run to draw (that would train)
    for node in sorted(ancestors(nodes), key=lambda n: n.creation_index):
        if getattr(node, "stateful", False) or any(i in tainted for i in node.inputs):
            tainted.add(node)
    wanted = sorted({n for n in nodes if n.dtype is not None and n not in tainted}, key=lambda n: n.creation_index)
    if not wanted:
        return {}
    run = session or Session(wanted[0].graph, backend=backend, optimize=False)  # all fetched: nothing could fuse
    try:
        with np.errstate(all="ignore"):  # overflow and NaN are what pictures are there to show, not to warn about
            return dict(zip(wanted, run.run(wanted, feed_dict or {})))
    except TinyflowError as err:
        if notes is not None:
            notes.append(f"values not computed: {err}")
        return {}
    finally:
        if session is None:
            run.close()


def gradient_of(node):
    """The gradient node an optimizer update applies to Variable `node`, if there is one."""
    return next((c.inputs[1] for c in (node.consumers if isinstance(node, Variable) else ())
                 if c.role == "optimizer" and getattr(c, "stateful", False) and c.inputs[0] is node), None)


def label(node, values=None, name=None, shape=False):
    """A node's label lines: op type and `name`, with `shape` its shape, with `values` value and gradient."""
    name = node.name.rsplit("/", 1)[-1] if name is None else name
    lines = [name] if name == node.op_type else [node.op_type, name]
    if shape and node.shape is not None:
        lines.append(str(node.shape))
    if values is not None:
        value = values.get(node, node.value if isinstance(node, (Variable, Constant)) else None)
        lines += [] if value is None else [summarize(value)]
        lines += [f"grad {summarize(values[g])}" for g in [gradient_of(node)] if g in values]
    return lines


def to_graphviz(target=None, *, show_shapes=True, show_values=False, show_gradients=True, graph=None,
                feed_dict=None, session=None, collapse=()):
    """A graphviz.Digraph of the graph, of what `target` needs, or of a plan (fused kernels as clusters), with a legend;
    values from one run with `feed_dict` / `session`; `collapse`d scopes drawn as one box; same graph, same DOT."""
    import graphviz
    plan, values = getattr(target, "optimized", None), {}
    if plan is not None:  # a plan's private copies: each fused kernel drawn as its members
        nodes, fused_of, reads = expand_fused(plan.nodes)
        reads.update(dict.fromkeys(plan.fed, ()))  # a fed node's value comes from the feed
    else:
        targets = None if target is None else as_list(target)
        if graph is None:
            graph = targets[0].graph if targets and isinstance(targets[0], Node) else get_default_graph()
        nodes, fused_of, reads = nodes_to_draw(graph, targets, show_gradients), {}, {}
        if show_values and (feed_dict is not None or session is not None):
            gradients = [g for g in map(gradient_of, nodes) if g is not None]
            values = run_values({*nodes, *gradients}, feed_dict, session)
    collapse = (collapse,) if isinstance(collapse, str) else tuple(collapse)
    boxed = {n: next((c for c in collapse if n.name.startswith(c + "/")), None) for n in nodes}  # collapsed scope
    ids = {n: f"scope_{boxed[n]}" if boxed[n] else f"n{i}" for i, n in enumerate(nodes)}
    dot = digraph("tinyflow", rankdir="TB", newrank="true")
    clusters = {"": dot}
    fused_clusters = {fused: graphviz.Digraph(name=f"cluster_fused_{i}", graph_attr=dict(
        label="fused: " + " → ".join(m.op_type for m in fused.members), **FUSED))
        for i, fused in enumerate(dict.fromkeys(fused_of.values()))}

    def container(scope):
        """The cluster subgraph of a name scope, created on first use with those of its enclosing scopes."""
        if scope not in clusters:
            container(scope_of(scope))
            clusters[scope] = graphviz.Digraph(name=f"cluster_{scope}", graph_attr=dict(
                label=scope.rsplit("/", 1)[-1], style="rounded", color="#aaaaaa", fontcolor="#555555"))
        return clusters[scope]

    for scope in collapse:
        members = [n for n in nodes if boxed[n] == scope]
        if members:
            container(scope_of(scope)).node(f"scope_{scope}", f"{scope.rsplit('/', 1)[-1]}\n({len(members)} nodes)",
                                            shape="box3d", style="filled",
                                            fillcolor=STYLES[kind_of(members[0])]["fillcolor"])
    for node in nodes:
        if not boxed[node]:
            lines = label(node, values if show_values else None)
            cluster = fused_clusters[fused_of[node]] if node in fused_of else container(scope_of(node.name))
            cluster.node(ids[node], "\\n".join(lines), **STYLES[kind_of(node)])
    # attach clusters innermost first (graphviz copies a subgraph when attached), so each lands in its parent
    for scope in sorted(clusters.keys() - {""}, key=lambda s: (-s.count("/"), s)):
        clusters[scope_of(scope)].subgraph(clusters[scope])
    for cluster in fused_clusters.values():
        dot.subgraph(cluster)
    edges = {}
    for node in nodes:
        for inp in reads.get(node, node.inputs):
            if inp in ids and ids[inp] != ids[node]:
                shown = show_shapes and inp.shape is not None and not boxed[inp]
                edges.setdefault((ids[inp], ids[node]), str(inp.shape) if shown else "")
    for (tail, head), text in edges.items():
        dot.edge(tail, head, label=text)
    for node in nodes:  # control flow: dashed edges from what a branch or loop body returns to its op
        for out in getattr(node, "branch_outputs", ()):
            if out in ids and ids[out] != ids[node]:
                dot.edge(ids[out], ids[node], style="dashed")
        for pop, value in getattr(getattr(node, "body", None), "restores", ()):  # a pop stands for a value
            if pop in ids and value in ids:
                dot.edge(ids[pop], ids[value], style="dotted", color="#b33a3a", label="restores", constraint="false")
    # the legend: one HTML-like table of the kinds drawn, in their colours (one node: no edges to upset the layout)
    rows = "".join(f'<TR><TD BGCOLOR="{style["fillcolor"]}" COLOR="{style["color"]}">{LEGEND[kind]}</TD></TR>'
                   for kind, style in STYLES.items() if any(kind_of(n) == kind for n in nodes))
    dot.node("legend", f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2"><TR><TD BORDER="0"><B>legend</B></TD>'
             f"</TR>{rows}</TABLE>>", shape="plaintext")
    return dot


def expand_fused(nodes):
    """(drawn, {member: its fused node}, {drawn: what it reads}): each FusedElementwise replaced by its members;
    a member reads earlier members or the kernel's inputs, a reader of the kernel its last member."""
    drawn, fused_of, stand_in = [], {}, {}
    for node in nodes:
        members = node.members if isinstance(node, FusedElementwise) else None  # (a MultiTensorUpdate: one node)
        if members:
            fused_of.update(dict.fromkeys(members, node))
            stand_in[node] = members[-1]
        drawn.extend(members or [node])
    inputs = {}
    for node in drawn:
        fused = fused_of.get(node)
        if fused is None:
            inputs[node] = [stand_in.get(i, i) for i in node.inputs]
        else:  # program args: ("t", i) the value of members[i], ("x", k) the kernel's input k, ("c", array)
            args = fused.program[fused.members.index(node)][1]
            inputs[node] = [fused.members[i] if kind == "t" else stand_in.get(fused.inputs[i], fused.inputs[i])
                            for kind, i in args if kind in ("t", "x")]
    return drawn, fused_of, inputs


def dot_available():
    """True when graphviz's `dot` program is installed."""
    return shutil.which("dot") is not None


def require_dot():
    """VizError, saying how to install graphviz, when `dot` is missing."""
    if not dot_available():
        raise VizError(NO_DOT + " to_graphviz() still returns the graph (its DOT text is `.source`) without it.")


def no_dot_html(*graphs):
    """What Jupyter shows for graphs when `dot` is missing: the message and each graph's DOT source."""
    sources = "".join(f"<pre style='font-size:80%'>{html.escape(g.source)}</pre>" for g in graphs)
    return (f"<div class='tinyflow-no-dot'><p><b>{html.escape(NO_DOT)}</b></p>"
            f"<details><summary>DOT source</summary>{sources}</details></div>")


@functools.lru_cache(maxsize=None)
def _picture_class():
    import graphviz

    class GraphPicture(graphviz.Digraph):
        """A graphviz.Digraph that, without `dot`, shows its DOT source and raises VizError (not a traceback)."""

        def _repr_mimebundle_(self, include=None, exclude=None, **options):
            if dot_available():
                try:
                    return super()._repr_mimebundle_(include, exclude, **options)
                except graphviz.ExecutableNotFound:
                    pass  # `dot` vanished or cannot run: show the text below
            return {"text/plain": f"{NO_DOT}\n\n{self.source}", "text/html": no_dot_html(self)}

        def pipe(self, *args, **kwargs):
            require_dot()
            return super().pipe(*args, **kwargs)

        def render(self, *args, **kwargs):
            require_dot()
            return super().render(*args, **kwargs)

    return GraphPicture


def digraph(name, **graph_attr):
    """A graphviz.Digraph in tinyflow's fonts that, without `dot`, shows its DOT source and a clear message."""
    return _picture_class()(name, graph_attr={"fontname": "Helvetica", "fontsize": "11", **graph_attr},
                            node_attr=dict(fontname="Helvetica", fontsize="10"),
                            edge_attr=dict(fontname="Helvetica", fontsize="8", color="#666666"))


def render(target, path, **options):
    """Draw `target` (a node, nodes, or a Graph) to a .png (PNG_MAX_SIDE pixels at most), .svg or .pdf."""
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower()
    if fmt not in ("png", "svg", "pdf"):
        raise VizError(f"cannot render to '{path}': use a .png, .svg or .pdf file name")
    is_graph = hasattr(target, "nodes") and not isinstance(target, Node)  # a Graph (or a program holding one)
    dot = to_graphviz(None, graph=target, **options) if is_graph else to_graphviz(target, **options)
    if fmt == "png":
        dot.graph_attr["size"] = f"{PNG_MAX_SIDE / 96:g},{PNG_MAX_SIDE / 96:g}"  # inches; scales down only
    picture = dot.pipe(format=fmt)  # render first: a failure must not leave an empty folder or file behind
    return write_atomically(path, lambda f: f.write(picture))


def svg(target=None, *, graph=None):
    """SVG text of a picture, or None without `dot` (for Jupyter's _repr_svg_)."""
    return to_graphviz(target, graph=graph).pipe(format="svg").decode("utf-8") if dot_available() else None
