"""The picture of an optimised plan: fused nodes drawn as clusters naming the ops they replaced."""
from ..passes.fusion import FusedElementwise
from .graphviz_render import STYLES, digraph, kind_of


def optimized_graphviz(graph, show_shapes=True):
    """A graphviz.Digraph of an OptGraph (what `sess.plan(...)` runs); each fused kernel is a cluster."""
    dot = digraph("tinyflow_optimised", rankdir="TB")
    ids, output_of = {}, {}

    def node_id(node):
        return ids.setdefault(id(node), f"n{len(ids)}")

    def label(node):
        return f"{node.name}\n{node.op_type}" + (f"\n{node.shape}" if show_shapes and node.shape is not None else "")

    def edge(source, head):
        dot.edge(output_of.get(id(source), node_id(source)), head, label=str(source.shape) if show_shapes else "")

    for node in graph.nodes:
        if not isinstance(node, FusedElementwise):
            dot.node(node_id(node), label(node), **STYLES[kind_of(node)])
            continue
        title = "fused: " + " → ".join(m.op_type for m in node.members)
        style = dict(label=title, style="rounded,filled", color="#7b1fa2", fillcolor="#f3e5f5", fontcolor="#4a148c")
        with dot.subgraph(name=f"cluster_{node_id(node)}", graph_attr=style) as cluster:
            for member in node.members:
                cluster.node(node_id(member), label(member), **STYLES[kind_of(member)])
            for member, (_, args) in zip(node.members, node.program):
                for kind, index in args:  # "t": an earlier member's result, "x": one of the fused node's inputs
                    if kind == "t":
                        cluster.edge(node_id(node.members[index]), node_id(member))
                    elif kind == "x":
                        edge(node.inputs[index], node_id(member))
        output_of[id(node)] = node_id(node.members[-1])
    for node in graph.nodes:
        if not isinstance(node, FusedElementwise) and node not in graph.fed:
            for inp in node.inputs:
                edge(inp, node_id(node))
    return dot
