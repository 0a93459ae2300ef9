"""The explorer's data for an execution plan (`sess.plan(...)`): each fused kernel a group naming its ops, and the
values of the user's nodes its private copies stand for (`original`), from one run of the user's graph.
"""
import os

from ...nodes import Constant
from ...passes.ir import original
from ..graphviz_render import run_values, scope_of
from .graph_data import node_record, scope_groups


def plan_data(plan, feed_dict=None, backend=None):
    """The page's data for an ExecutionPlan, optimised (fused kernels as groups) or not."""
    if plan.optimized is not None:
        nodes, fed = plan.optimized.nodes, plan.optimized.fed
    else:
        nodes, fed = sorted(plan.slot_of, key=plan.slot_of.get), frozenset(plan.fed_slots)
    drawn, groups, group_of, fused_of, stand_in = [], {}, {}, {}, {}
    for node in nodes:
        members = getattr(node, "members", None)
        if not members:
            drawn.append(node)
            continue
        group = _fused_group(members, len(groups))  # drawn as its members, inside a group of their common scope
        groups[group] = {"label": "fused kernel: " + " \u2192 ".join(m.op_type for m in members), "kind": "fused"}
        group_of.update(dict.fromkeys(members, group))
        fused_of.update(dict.fromkeys(members, node))
        stand_in[node] = members[-1]  # what reads the fused node reads its last member
        drawn.extend(members)
    index_of = {node: i for i, node in enumerate(drawn)}
    notes = []
    values = _user_values(drawn, feed_dict, backend, notes)
    records, seen, sites = [], {}, {}
    for node in drawn:
        record = node_record(node, index_of, sites, values.get(node), scope=group_of.get(node))
        record["inputs"] = _inputs(node, fused_of, index_of, stand_in)
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


def _inputs(node, fused_of, index_of, stand_in):
    """The drawn nodes a node reads: a member reads its fused node's inputs or earlier members."""
    if node not in fused_of:
        return [index_of[stand_in.get(i, i)] for i in node.inputs if stand_in.get(i, i) in index_of]
    fused = fused_of[node]
    found = []
    for kind, arg in fused.program[fused.members.index(node)][1]:
        if kind == "x":
            found.append(index_of.get(stand_in.get(fused.inputs[arg], fused.inputs[arg])))
        elif kind == "t":
            found.append(index_of.get(fused.members[arg]))
    return [i for i in found if i is not None]


def _user_values(drawn, feed_dict, backend, notes):
    """Values of the user's nodes the drawn copies stand for, from one run of the user's graph."""
    originals = {node: original(node) for node in drawn}
    graph = next((o.graph for o in originals.values() if getattr(o, "graph", None) is not None), None)
    values = {n: n.value for n in drawn if isinstance(n, Constant)}
    if graph is not None:
        registered = {o for o in originals.values()
                      if getattr(o, "graph", None) is graph and o in graph}
        computed = run_values(registered, feed_dict, backend=backend, notes=notes)
        values.update((n, computed[o]) for n, o in originals.items() if o in computed and n not in values)
    return values
