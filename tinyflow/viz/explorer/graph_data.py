"""The explorer's data for graph nodes: values from one Session.run (never of what updates state), gradients and the
walk from tfl.gradients itself, built in a scratch block (`Graph.scratch`) that leaves the user's graph as it was.
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
    key = getattr(node, "site", None)
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


def default_wrt(loss):
    """What the walk differentiates against: the float Variables and Placeholders the loss depends on."""
    return sorted((n for n in ancestors([loss]) if isinstance(n, (Variable, Placeholder))
                   and n.dtype is not None and n.dtype.kind == "f" and (not isinstance(n, Variable) or n.trainable)),
                  key=lambda n: n.creation_index)


def graph_data(targets, graph, feed_dict=None, loss=None, wrt=None, backend=None):
    """The page's data for a list of nodes, or a whole Graph (`targets` None)."""
    if loss is None and targets and len(targets) == 1 and targets[0].dtype is not None and targets[0].dtype.kind == "f":
        loss = targets[0]  # one float target: the walk starts there
    wrt = default_wrt(loss) if loss is not None and wrt is None else as_list(wrt)
    nodes = nodes_to_draw(graph, targets)
    if loss is not None:  # every node the walk visits is drawn
        nodes = sorted(set(nodes) | ancestors([loss]), key=lambda n: n.creation_index)
    feeds = {resolve_key(graph, k): v for k, v in (feed_dict or {}).items()}
    fetches = targets if targets is not None else [n for n in nodes if not n.consumers]
    order = schedule(prune(fetches, frozenset(feeds)), frozenset(feeds))  # the order Session.run computes them in
    notes, walk, pending, grads = [], [], {}, {}
    names = {node: node.name for node in nodes}
    with graph.scratch():  # gradient nodes live only inside this block
        if loss is not None and wrt:
            try:
                walk, pending, grads = trace_walk(lambda trace: gradients(loss, wrt, trace=trace), names)
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
        data["backprop"] = walk_data(walk, pending, names, values.get, loss, wrt)
    return data


def trace_walk(backward, names, skip=None):
    """Run `backward(trace)` (tfl.gradients or the eager engine) and keep what the page replays of the steps not
    skipped: (the steps, with contributions unsummarised; the counts before the walk; {node: its gradient})."""
    steps, pending, grads = [], {}, {}

    def keep(step):
        if skip is not None and skip(step):
            return
        if not steps:  # before the walk: every node's count, the first step's decrements added back
            pending.update(step["pending"])
            pending.setdefault(step["node"], 0)  # the walk forgets a node's count once it is processed
            for parent, _ in step["delivered"]:
                if parent in pending:  # (an eager leaf has no count: it takes each contribution as it comes)
                    pending[parent] += 1
        if step["grad"] is not None and not isinstance(step["grad"], list):  # a list: an op with several outputs
            grads[step["node"]] = step["grad"]
        steps.append(dict(node=names[step["node"]], received=len(step["received"]), delivered=list(step["delivered"]),
                          released=[names[n] for n in step["released"] if n in names], queue_size=len(step["queue"]),
                          queue=[names[n] for n in islice(step["queue"], QUEUE_SHOWN) if n in names]))

    backward(keep)
    return steps, pending, grads


def walk_data(steps, pending, names, value_of, loss, wrt=()):
    """The walk as the page replays it: each contribution summarised, with the running sum its node received."""
    running = {}
    for step in steps:
        delivered = []
        for target, contribution in step["delivered"]:
            part = value_of(contribution)
            if part is not None:
                running[target] = part if target not in running else np.add(running[target], part)
            if target in names:
                delivered.append([names[target], summary(part, with_heatmap=False),
                                  summary(running.get(target), with_heatmap=False)])
        step["delivered"] = delivered
    return {"loss": names[loss], "wrt": [names[n] for n in wrt], "steps": steps,
            "pending": {names[n]: count for n, count in pending.items() if n in names}}
