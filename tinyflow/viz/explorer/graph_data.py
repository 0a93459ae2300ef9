"""The explorer's data for graph nodes: every node with its values and gradient, the Session's order, the walk.

Values come from one Session.run of the drawn nodes (ops that update Variables, and what is
computed from them, are never run: drawing never trains). Gradients come from tfl.gradients itself,
built in a scratch block of the graph (`Graph.scratch`) so the user's graph is left as it was; its
trace gives the step-through the engine's own order, pending counts and contributions.
"""
from itertools import islice

import numpy as np

from ...autodiff.gradients import gradients
from ...errors import TinyflowError
from ...graph import ancestors
from ...nodes import Node, Placeholder, Variable
from ...session import Session
from ...session.feeds import resolve_key
from ...session.plan import prune, schedule
from ..graphviz_render import _nodes_to_draw, kind_of
from .summary import dtype_name, summary

QUEUE_SHOWN = 12  # names of the queue kept per backprop step (the rest is counted)


def node_record(node, index_of, value=None, grad=None, scope=None, sites=None):
    """One node as the page reads it (see the module docstring of tinyflow/viz/explorer/__init__.py).

    `sites` caches creation sites' texts: the nodes a loop built share a few sites.
    """
    shape = None if node.shape is None else [None if d is None else int(d) for d in node.shape]
    site = getattr(node, "_site", None)
    if sites is None or site is None:
        text = node.creation_site
    elif site in sites:
        text = sites[site]
    else:
        text = sites[site] = node.creation_site
    return {"name": node.name, "op": node.op_type, "shape": shape,
            "dtype": None if node.dtype is None else dtype_name(node.dtype), "site": text,
            "value": value, "grad": grad, "kind": kind_of(node),
            "scope": scope_of(node.name) if scope is None else scope,
            "inputs": [index_of[i] for i in node.inputs if i in index_of]}


def scope_of(name):
    """The name scope of a node name: "layer1/dense/MatMul" -> "layer1/dense" ("" at the top)."""
    return name.rsplit("/", 1)[0] if "/" in name else ""


def scope_groups(records):
    """Every enclosing scope of the records, labelled with its last part."""
    groups = {}
    for record in records:
        scope = record["scope"]
        while scope and scope not in groups:
            groups[scope] = {"label": scope.rsplit("/", 1)[-1], "kind": "scope"}
            scope = scope_of(scope)
    return groups


def depends_on_state(nodes):
    """The nodes (in creation order) that are stateful or computed from a stateful op: never run to draw."""
    tainted = set()
    for node in sorted(nodes, key=lambda n: n.creation_index):
        if getattr(node, "stateful", False) or any(i in tainted for i in node.inputs):
            tainted.add(node)
    return tainted


def _targets(target):
    if isinstance(target, Node):
        return [target]
    return list(target) if isinstance(target, (list, tuple)) else None  # None: a whole Graph


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


def graph_data(target, graph, feed_dict=None, loss=None, wrt=None, backend=None):
    """The page's data for a node, a list of nodes, or a whole Graph (`target` None)."""
    targets = _targets(target)
    loss = default_loss(targets) if loss is None else loss
    if loss is not None and wrt is None:
        wrt = default_wrt(loss)
    wrt = [wrt] if isinstance(wrt, Node) else list(wrt or ())
    nodes = _nodes_to_draw(graph, targets, show_gradients=True)
    if loss is not None:  # every node the walk visits is drawn
        nodes = sorted(set(nodes) | ancestors([loss]), key=lambda n: n.creation_index)
    feeds = {resolve_key(graph, k): v for k, v in (feed_dict or {}).items()}
    fetches = targets if targets is not None else [n for n in nodes if not n.consumers]
    order = schedule(prune(fetches, frozenset(feeds)), frozenset(feeds))  # the order Session.run computes them in
    notes = []
    walk = None
    values = {}
    with graph.scratch():  # gradient nodes live only inside this block
        if loss is not None and wrt:
            try:
                walk = _trace_walk(loss, wrt)
            except TinyflowError as err:
                notes.append(f"no backprop walk: {err}")
        values = _run(graph, order, walk, feeds, backend, notes)
    index_of = {node: i for i, node in enumerate(nodes)}
    grads = {} if walk is None else {step["node"]: step["grad"] for step in walk}
    sites = {}
    records = [node_record(n, index_of, _summary(values, n), _summary(values, grads.get(n)), sites=sites)
               for n in nodes]
    data = {"source": "graph", "nodes": records, "groups": scope_groups(records),
            "forward_order": [n.name for n in order if n in index_of],
            "backprop_order": [] if walk is None else [step["node"].name for step in walk],
            "notes": notes}
    if walk is not None:
        data["backprop"] = _walk_data(walk, loss, wrt, values)
    return data


def _trace_walk(loss, wrt):
    """tfl.gradients(loss, wrt) with a trace: per step the node, its gradient and what it handed on."""
    steps = []

    def keep(step):
        if not steps:  # before the walk: every node's count, the first step's decrements added back
            pending = dict(step["pending"])
            pending.setdefault(step["node"], 0)  # the walk forgets a node's count once it is processed
            for inp, _ in step["delivered"]:
                pending[inp] += 1
            keep.pending = pending
        grad = step["grad"]  # a list for an op with several outputs (control flow): no one gradient to show
        steps.append(dict(node=step["node"], grad=None if isinstance(grad, list) else grad,
                          received=len(step["received"]),
                          delivered=list(step["delivered"]), released=list(step["released"]),
                          queue=list(islice(step["queue"], QUEUE_SHOWN)), queue_size=len(step["queue"])))

    gradients(loss, wrt, trace=keep)
    if steps:
        steps[0]["initial_pending"] = keep.pending
    return steps


def _run(graph, order, walk, feeds, backend, notes):
    """Values of the pure nodes in `order` and of the walk's gradient nodes, from one Session.run."""
    tainted = depends_on_state(order)
    wanted = [n for n in order if n.dtype is not None and n not in tainted]
    if walk is not None:
        extra = {step["grad"] for step in walk} | {c for step in walk for _, c in step["delivered"]}
        wanted += sorted((n for n in extra if n is not None), key=lambda n: n.creation_index)
    if not wanted:
        return {}
    session = Session(graph, backend=backend, optimize=False)  # every node is fetched: nothing could fuse
    try:
        with np.errstate(all="ignore"):  # overflow and NaN are what the page is there to show, not to warn about
            return dict(zip(wanted, session.run(wanted, feeds)))
    except TinyflowError as err:
        notes.append(f"values not computed: {err}")
        return {}
    finally:
        session.close()


def _summary(values, node):
    if node is None or node not in values or isinstance(values[node], (list, tuple)):
        return None  # no value, or the several values of a control-flow op
    return summary(values[node])


def _walk_data(walk, loss, wrt, values):
    """The steps as the page replays them, with running sums of the contributions each node received."""
    running = {}
    steps = []
    for step in walk:
        delivered = []
        for target, contribution in step["delivered"]:
            part = values.get(contribution) if contribution is not None else None
            if part is not None:
                running[target] = part if target not in running else np.add(running[target], part)
            delivered.append([target.name, None if part is None else summary(part, with_heatmap=False),
                              summary(running[target], with_heatmap=False) if target in running else None])
        steps.append({"node": step["node"].name, "received": step["received"], "delivered": delivered,
                      "released": [n.name for n in step["released"]],
                      "queue": [n.name for n in step["queue"]], "queue_size": step["queue_size"]})
    pending = walk[0]["initial_pending"] if walk else {}
    return {"loss": loss.name, "wrt": [n.name for n in wrt],
            "pending": {n.name: count for n, count in sorted(pending.items(), key=lambda p: p[0].creation_index)},
            "steps": steps}
