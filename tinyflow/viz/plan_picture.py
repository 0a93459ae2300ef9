"""The picture of an optimised plan: fused nodes drawn as clusters naming the ops they replaced."""
from ..passes.fusion import FusedElementwise
from .graphviz_render import STYLES, kind_of


def optimized_graphviz(graph, show_shapes=True):
    """A graphviz.Digraph of an OptGraph (what `sess.plan(...)` runs); each fused kernel is a cluster."""
    import graphviz
    dot = graphviz.Digraph("tinyflow_optimised", graph_attr=dict(rankdir="TB", fontname="Helvetica", fontsize="11"),
                           node_attr=dict(fontname="Helvetica", fontsize="10"),
                           edge_attr=dict(fontname="Helvetica", fontsize="8", color="#666666"))
    ids, output_of = {}, {}

    def node_id(node):
        return ids.setdefault(id(node), f"n{len(ids)}")

    def label(node):
        return f"{node.name}\n{node.op_type}" + (f"\n{node.shape}" if show_shapes and node.shape is not None else "")

    for node in graph.nodes:
        if not isinstance(node, FusedElementwise):
            dot.node(node_id(node), label(node), **STYLES[kind_of(node)])
            continue
        title = "fused: " + " → ".join(m.op_type for m in node.members)
        with dot.subgraph(name=f"cluster_{node_id(node)}", graph_attr=dict(
                label=title, style="rounded,filled", color="#7b1fa2", fillcolor="#f3e5f5", fontcolor="#4a148c")) as cluster:
            for member in node.members:
                cluster.node(node_id(member), label(member), **STYLES[kind_of(member)])
            for member, (_, args) in zip(node.members, node.program):
                for kind, index in args:
                    if kind == "t":
                        cluster.edge(node_id(node.members[index]), node_id(member))
            for member, (_, args) in zip(node.members, node.program):
                for kind, index in args:
                    if kind == "x":
                        source = node.inputs[index]
                        dot.edge(output_of.get(id(source), node_id(source)), node_id(member),
                                 label=str(source.shape) if show_shapes else "")
        output_of[id(node)] = node_id(node.members[-1])
    for node in graph.nodes:
        if isinstance(node, FusedElementwise) or node in graph.fed:
            continue
        for inp in node.inputs:
            dot.edge(output_of.get(id(inp), node_id(inp)), node_id(node), label=str(inp.shape) if show_shapes else "")
    return dot
