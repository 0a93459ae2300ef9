"""The explorer's data for an execution plan (`sess.plan(...)`): what the Session really runs.

An optimised plan's nodes are private copies of the user's (passes/ir.py); each fused kernel
becomes a group naming its ops, with its members inside. Values are those of the user's nodes the
copies stand for (`original`), from one run of the user's graph: a fused kernel computes the same
numbers its members would, it only keeps none of them in memory.
"""
import os

import numpy as np

from ...errors import TinyflowError
from ...nodes import Constant
from ...passes.ir import original
from ...session import Session
from .graph_data import depends_on_state, node_record, scope_groups, scope_of
from .summary import summary


def plan_data(plan, feed_dict=None, backend=None):
    """The page's data for an ExecutionPlan, optimised (fused kernels as groups) or not."""
    if plan.optimized is not None:
        nodes, fed = plan.optimized.nodes, plan.optimized.fed
    else:
        nodes, fed = sorted(plan.slot_of, key=plan.slot_of.get), frozenset(plan.fed_slots)
    drawn, groups, member_of = [], {}, {}
    for node in nodes:
        members = getattr(node, "members", None)
        if members:  # a fused kernel: drawn as its members, inside a group of their common scope
            group = _fused_group(members, len(groups))
            groups[group] = {"label": "fused kernel: " + " \u2192 ".join(m.op_type for m in members),
                             "kind": "fused"}
            for member in members:
                member_of[member] = (group, node)
            drawn.extend(members)
            output_of = members[-1]
            member_of[node] = (group, output_of)
        else:
            drawn.append(node)
    index_of = {node: i for i, node in enumerate(drawn)}
    stand_in = {node: member_of[node][1] for node in nodes if node in member_of}  # fused node -> last member
    values, notes = _user_values(drawn, feed_dict, backend)
    records, seen_names = [], {}
    for node in drawn:
        group = member_of[node][0] if node in member_of else None
        record = node_record(node, index_of, _summary(values, node), None, scope=group)
        record["inputs"] = _inputs(node, member_of, index_of, stand_in)
        record["name"] = _unique(node.name, seen_names)
        if node in fed:
            record["kind"] = "placeholder"
        records.append(record)
    groups.update(scope_groups([r for r in records if r["scope"] not in groups]))
    for group in [g for g, info in groups.items() if info["kind"] == "fused"]:
        parent = scope_of(group)
        while parent and parent not in groups:
            groups[parent] = {"label": parent.rsplit("/", 1)[-1], "kind": "scope"}
            parent = scope_of(parent)
    order = [records[index_of[n]]["name"] for n in drawn if n in fed] + \
        [records[index_of[m]]["name"] for step in plan.steps for m in (getattr(step.node, "members", None)
                                                                      or [step.node])]
    report = str(plan.report) if getattr(plan, "report", None) is not None else None
    if report:
        notes.append(report)
    return {"source": "plan", "nodes": records, "groups": groups, "forward_order": order,
            "backprop_order": [], "notes": notes}


def _fused_group(members, index):
    """The group name of a fused kernel: inside the name scope all its members share."""
    common = os.path.commonprefix([scope_of(m.name) + "/" for m in members])
    common = common[:common.rfind("/")] if "/" in common else ""
    return f"{common}/fused kernel {index}" if common else f"fused kernel {index}"


def _inputs(node, member_of, index_of, stand_in):
    """The drawn nodes a node reads: a member reads its fused node's inputs or earlier members."""
    if node in member_of and member_of[node][1] is not node:
        group, fused = member_of[node]
        position = fused.members.index(node)
        found = []
        for kind, arg in fused.program[position][1]:
            if kind == "x":
                source = stand_in.get(fused.inputs[arg], fused.inputs[arg])
                found.append(index_of.get(source))
            elif kind == "t":
                found.append(index_of.get(fused.members[arg]))
        return [i for i in found if i is not None]
    return [index_of[stand_in.get(i, i)] for i in node.inputs if stand_in.get(i, i) in index_of]


def _user_values(drawn, feed_dict, backend):
    """Values of the user's nodes the drawn copies stand for, from one run of the user's graph."""
    originals = {node: original(node) for node in drawn}
    graph = next((o.graph for o in originals.values() if getattr(o, "graph", None) is not None), None)
    values = {n: n.value for n in drawn if isinstance(n, Constant)}
    if graph is None:
        return values, []
    registered = [o for o in set(originals.values())
                  if getattr(o, "graph", None) is graph and graph._by_name.get(o.name) is o]
    tainted = depends_on_state(registered)
    wanted = sorted((o for o in registered if o.dtype is not None and o not in tainted),
                    key=lambda n: n.creation_index)
    if not wanted:
        return values, []
    session = Session(graph, backend=backend, optimize=False)  # every node is fetched: nothing could fuse
    try:
        with np.errstate(all="ignore"):  # overflow and NaN are what the page is there to show, not to warn about
            computed = dict(zip(wanted, session.run(wanted, feed_dict or {})))
    except TinyflowError as err:
        return values, [f"values not computed: {err}"]
    finally:
        session.close()
    values.update({n: computed[o] for n, o in originals.items() if o in computed and n not in values})
    return values, []


def _summary(values, node):
    return summary(values[node]) if node in values else None


def _unique(name, seen):
    """`name`, or `name (2)`, ... when a plan holds two copies of one node's name."""
    count = seen.get(name, 0) + 1
    seen[name] = count
    return name if count == 1 else f"{name} ({count})"
