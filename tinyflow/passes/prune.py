"""Dead-node pruning: nodes no fetch needs any more are dropped.

Rule:  a node from which no fetch can be reached is removed.
Other passes leave such nodes behind (a folded op's inputs, a merged duplicate).
"""


def prune_dead_nodes(graph):
    """A copy of `graph` holding only what its fetches need; (graph, counts)."""
    graph = graph.copy()
    return graph, {"pruned": graph.prune()}
