"""The explorer's data for graph nodes: every node with its values and gradient, the Session's order, the walk.

Values come from one Session.run of the drawn nodes (never of what updates state: drawing never trains).
Gradients come from tfl.gradients itself, built in a scratch block of the graph (`Graph.scratch`) so the
user's graph is left as it was; its trace gives the step-through the engine's own order and counts.
"""
from itertools import islice

import numpy as np

from ...autodiff.gradients import gradients
from ...errors import TinyflowError
from ...graph import ancestors
from ...nodes import Placeholder, Variable
from ...session.feeds import resolve_key
from ...session.plan import prune, schedule
from ..graphviz_render import as_list, kind_of, nodes_to_draw, run_values, scope_of
from .summary import dtype_name, summary

QUEUE_SHOWN = 12  # names of the queue kept per backprop step (the rest is counted)


def record(name, op, shape, dtype, site, kind, scope, inputs, value=None, grad=None):
    """One node as the page reads it (docs/explorer_and_board.md), its value and gradient summarised."""
    return {"name": name, "op": op, "shape": None if shape is None else [None if d is None else int(d) for d in shape],
            "dtype": None if dtype is None else dtype_name(dtype), "site": site, "value": summary(value),
            "grad": summary(grad), "kind": kind, "scope": scope, "inputs": inputs}


def node_record(node, index_of, sites, value=None, grad=None, scope=None):
    """The record of a graph node; `sites` caches creation sites' texts (the nodes a loop built share a few)."""
    key = getattr(node, "_site", None)
    site = sites.get(key) if key is not None else None
    if site is None:
        site = node.creation_site
        if key is not None:
            sites[key] = site
    return record(node.name, node.op_type, node.shape, node.dtype, site, kind_of(node),
                  scope_of(node.name) if scope is None else scope,
                  [index_of[i] for i in node.inputs if i in index_of], value, grad)


def scope_groups(scopes, groups=None):
    """`groups` ({} by default) with every enclosing scope of `scopes` added, labelled with its last part."""
    groups = {} if groups is None else groups
    for scope in scopes:
        scope = scope_of(scope) if scope in groups else scope  # a fused kernel's group: add its scopes
        while scope and scope not in groups:
            groups[scope] = {"label": scope.rsplit("/", 1)[-1], "kind": "scope"}
            scope = scope_of(scope)
    return groups


def default_loss(targets):
    """The node to backpropagate from when none is named: a single float-valued target."""
    if targets and len(targets) == 1 and targets[0].dtype is not None and targets[0].dtype.kind == "f":
        return targets[0]
    return None


def default_wrt(loss):
    """What the walk differentiates against: the float Variables and Placeholders the loss depends on."""
    return sorted((n for n in ancestors([loss]) if isinstance(n, (Variable, Placeholder))
                   and n.dtype is not None and n.dtype.kind == "f" and (not isinstance(n, Variable) or n.trainable)),
                  key=lambda n: n.creation_index)


def graph_data(targets, graph, feed_dict=None, loss=None, wrt=None, backend=None):
    """The page's data for a list of nodes, or a whole Graph (`targets` None)."""
    loss = default_loss(targets) if loss is None else loss
    wrt = default_wrt(loss) if loss is not None and wrt is None else as_list(wrt)
    nodes = nodes_to_draw(graph, targets)
    if loss is not None:  # every node the walk visits is drawn
        nodes = sorted(set(nodes) | ancestors([loss]), key=lambda n: n.creation_index)
    feeds = {resolve_key(graph, k): v for k, v in (feed_dict or {}).items()}
    fetches = targets if targets is not None else [n for n in nodes if not n.consumers]
    order = schedule(prune(fetches, frozenset(feeds)), frozenset(feeds))  # the order Session.run computes them in
    notes, walk, pending, grads = [], [], {}, {}
    with graph.scratch():  # gradient nodes live only inside this block
        if loss is not None and wrt:
            try:
                walk, pending, grads = _trace_walk(loss, wrt)
            except TinyflowError as err:
                notes.append(f"no backprop walk: {err}")
        computed = {c for step in walk for _, c in step["delivered"] if c is not None} | set(grads.values())
        values = run_values([*order, *computed], feeds, backend=backend, notes=notes)
    index_of = {node: i for i, node in enumerate(nodes)}
    sites = {}
    records = [node_record(n, index_of, sites, values.get(n), values.get(grads.get(n))) for n in nodes]
    data = {"source": "graph", "nodes": records, "groups": scope_groups(r["scope"] for r in records),
            "forward_order": [n.name for n in order if n in index_of],
            "backprop_order": [step["node"] for step in walk], "notes": notes}
    if walk:
        data["backprop"] = _walk_data(walk, pending, loss, wrt, values)
    return data


def _trace_walk(loss, wrt):
    """tfl.gradients(loss, wrt) with a trace: (the steps, what each handed on still as nodes; the counts before
    the walk; {node: its gradient})."""
    steps, pending, grads = [], {}, {}

    def keep(step):
        if not steps:  # before the walk: every node's count, the first step's decrements added back
            pending.update(step["pending"])
            pending.setdefault(step["node"], 0)  # the walk forgets a node's count once it is processed
            for inp, _ in step["delivered"]:
                pending[inp] += 1
        if step["grad"] is not None and not isinstance(step["grad"], list):  # a list: an op with several outputs
            grads[step["node"]] = step["grad"]
        steps.append(dict(node=step["node"].name, received=len(step["received"]), delivered=list(step["delivered"]),
                          released=[n.name for n in step["released"]], queue_size=len(step["queue"]),
                          queue=[n.name for n in islice(step["queue"], QUEUE_SHOWN)]))

    gradients(loss, wrt, trace=keep)
    return steps, pending, grads


def _walk_data(walk, pending, loss, wrt, values):
    """The steps as the page replays them, with running sums of the contributions each node received."""
    running = {}
    for step in walk:
        delivered = []
        for target, contribution in step["delivered"]:
            part = values.get(contribution)
            if part is not None:
                running[target] = part if target not in running else np.add(running[target], part)
            delivered.append([target.name, summary(part, with_heatmap=False),
                              summary(running.get(target), with_heatmap=False)])
        step["delivered"] = delivered
    return {"loss": loss.name, "wrt": [n.name for n in wrt], "steps": walk,
            "pending": {n.name: count for n, count in sorted(pending.items(), key=lambda p: p[0].creation_index)}}
