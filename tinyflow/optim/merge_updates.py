"""The optimiser pass "multi_tensor": the update ops one train op groups become one node, one kernel call.

Rule: the ApplyUpdate inputs of one op (a train op's Group) that share the update type, the
hyper-parameters, the learning-rate node and the dtype, that nobody else reads and nobody
fetches, become one MultiTensorUpdate (tinyflow/optim/multi_tensor.py) in the place of the
last of them. Updates run after every op that does not depend on them (the plan schedules
stateful ops last), so running them together changes nothing but the number of calls.
"""
from ..passes import register_pass
from ..passes.ir import attribute_key
from .multi_tensor import multi_tensor_update
from .optimizer import ApplyUpdate


def merge_updates(graph):
    """A copy of `graph` with each set of mergeable update ops replaced by one MultiTensorUpdate; (graph, counts)."""
    graph = graph.copy()
    consumers = graph.consumers()
    merged, nodes_merged = {}, 0
    for node in graph.nodes:
        buckets = {}
        for inp in dict.fromkeys(node.inputs):  # each input once, in order
            if (isinstance(inp, ApplyUpdate) and consumers[inp] == [node] and not graph.is_fetched(inp)
                    and inp not in graph.fed):
                key = (inp.op_type, attribute_key(inp), id(inp.inputs[2]), inp.inputs[0].dtype)
                buckets.setdefault(key, []).append(inp)
        for members in buckets.values():
            if len(members) > 1:
                multi = multi_tensor_update(members)
                for member in members:
                    merged[member] = multi
                nodes_merged += len(members)
    if not merged:
        return graph, {"merged_updates": 0, "update_ops": 0}
    order = []
    last = {multi: max(graph.nodes.index(m) for m in multi.members) for multi in set(merged.values())}
    for position, node in enumerate(graph.nodes):
        if node in merged:
            multi = merged[node]
            if last[multi] == position:
                order.append(multi)
            continue
        if any(i in merged for i in node.inputs):
            node.inputs = tuple(dict.fromkeys(merged.get(i, i) for i in node.inputs))
        order.append(node)
    graph.nodes = order
    return graph, {"merged_updates": len(last), "update_ops": nodes_merged}


register_pass("multi_tensor", merge_updates)
