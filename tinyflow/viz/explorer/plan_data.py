"""The explorer's data for an execution plan (`sess.plan(...)`): each fused kernel a group naming its ops, and the
values of the user's nodes its private copies stand for (`original`), from one run of the user's graph.
"""
import os

from ...nodes import Constant
from ...passes.ir import original
from ..graphviz_render import expand_fused, run_values, scope_of
from .graph_data import node_record, scope_groups


def plan_data(plan, feed_dict=None, backend=None):
    """The page's data for an ExecutionPlan, optimised (fused kernels as groups) or not."""
    if plan.optimized is not None:
        nodes, fed = plan.optimized.nodes, plan.optimized.fed
    else:
        nodes, fed = sorted(plan.slot_of, key=plan.slot_of.get), frozenset(plan.fed_slots)
    drawn, fused_of, inputs = expand_fused(nodes)
    groups, group_of = {}, {}
    for fused in dict.fromkeys(fused_of.values()):  # drawn as its members, inside a group of their common scope
        group = _fused_group(fused.members, len(groups))
        groups[group] = {"label": "fused kernel: " + " \u2192 ".join(m.op_type for m in fused.members), "kind": "fused"}
        group_of.update(dict.fromkeys(fused.members, group))
    index_of = {node: i for i, node in enumerate(drawn)}
    notes = []
    values = _user_values(drawn, feed_dict, backend, notes)
    records, seen, sites = [], {}, {}
    for node in drawn:
        record = node_record(node, index_of, sites, values.get(node), scope=group_of.get(node), reads=inputs[node])
        count = seen[node.name] = seen.get(node.name, 0) + 1  # a plan may hold two copies of one node's name
        record["name"] = node.name if count == 1 else f"{node.name} ({count})"
        if node in fed:
            record["kind"] = "placeholder"
        records.append(record)
    scope_groups((r["scope"] for r in records), groups)
    order = [records[index_of[n]]["name"] for n in drawn if n in fed] + \
        [records[index_of[m]]["name"] for step in plan.steps for m in (getattr(step.node, "members", None)
                                                                      or [step.node])]
    report = getattr(plan, "report", None)
    if report is not None and str(report):
        notes.append(str(report))
    return {"source": "plan", "nodes": records, "groups": groups, "forward_order": order,
            "backprop_order": [], "notes": notes}


def _fused_group(members, index):
    """The group name of a fused kernel: inside the name scope all its members share."""
    common = os.path.commonprefix([scope_of(m.name) + "/" for m in members])
    common = common[:common.rfind("/")] if "/" in common else ""
    return f"{common}/fused kernel {index}" if common else f"fused kernel {index}"


def _user_values(drawn, feed_dict, backend, notes):
    """Values of the user's nodes the drawn copies stand for, from one run of the user's graph."""
    originals = {node: original(node) for node in drawn}
    graph = next((o.graph for o in originals.values() if getattr(o, "graph", None) is not None), None)
    values = {n: n.value for n in drawn if isinstance(n, Constant)}
    if graph is not None:
        in_graph = set(graph.nodes)  # (a node an optimiser pass made is no node of the user's graph)
        computed = run_values({o for o in originals.values() if o in in_graph}, feed_dict, backend=backend, notes=notes)
        values.update((n, computed[o]) for n, o in originals.items() if o in computed and n not in values)
    return values
