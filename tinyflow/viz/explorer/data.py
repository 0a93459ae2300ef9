"""What an explorer page draws (docs/explorer_and_board.md) of graph nodes, a plan or an eager Tensor: values from
one run that updates no state, and the engine's own backward walk, traced in a scratch block (`Graph.scratch`) or
into a private sink so the user's graph and `.grad`s stay as they were; arrays as shape, statistics and a 2-D heat
map, in plain JSON (NaN and ±infinity as "NaN", "Infinity", "-Infinity": the page reads it with JSON.parse)."""
import functools
import math
import os

import numpy as np

from ...autodiff.gradients import gradients, is_float
from ...eager.autograd import recorded_inputs, recorded_output
from ...eager.tensor import Tensor
from ...errors import TinyflowError
from ...graph import ancestors
from ...nodes import Constant, Placeholder, Variable
from ...passes.ir import original
from ...session.session import resolve_key
from ...session.plan import prune, schedule
from ..backprop_steps import eager_names, eager_walk, recorded, tensor_value, trace_walk
from ..graphviz_render import as_list, expand_fused, kind_of, nodes_to_draw, run_values, scope_of

HEATMAP_CELLS = 32  # a heat map has at most this many rows and columns (blocks of the value are averaged)
SMALL = 64          # arrays up to this size are summarised in plain Python (faster for a few numbers)


def json_number(x):
    """A float as JSON can hold it: the number, or "NaN" / "Infinity" / "-Infinity"."""
    x = float(x)
    return x if math.isfinite(x) else "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"


# str(dtype), cached: numpy builds the text anew at each call, slow for ten thousand nodes
dtype_name = functools.lru_cache(maxsize=None)(str)


def summary(value, with_heatmap=True):
    """{"shape", "dtype", "size", "mean", "std", "min", "max", "nan", "inf", "value", "heatmap"} of a value, or None."""
    if value is None or isinstance(value, (list, tuple)):  # (a control-flow op's several values)
        return None
    array = np.asarray(value)
    result = {"shape": list(array.shape), "dtype": dtype_name(array.dtype), "size": int(array.size)}
    if array.size == 0 or array.dtype.kind not in "biuf":
        return result
    numbers = array.astype(np.float64)
    stats, result["nan"], result["inf"] = (_small_statistics if array.size <= SMALL else _statistics)(numbers)
    result.update(zip(("mean", "std", "min", "max"), map(json_number, stats)))
    if array.size == 1:
        result["value"] = json_number(numbers.reshape(()))
    if with_heatmap and array.ndim == 2:
        result["heatmap"] = heatmap(numbers)
    return result


def _statistics(numbers):
    """((mean, std, min, max) of the finite entries, NaN count, infinity count) with numpy."""
    finite = np.isfinite(numbers)
    nan = int(np.isnan(numbers).sum())
    shown = numbers[finite]
    if not shown.size:
        return (math.nan,) * 4, nan, numbers.size - nan
    with np.errstate(over="ignore", invalid="ignore"):  # values near the float64 limit: the std may overflow
        return (shown.mean(), shown.std(), shown.min(), shown.max()), nan, numbers.size - shown.size - nan


def _small_statistics(numbers):
    """The same as `_statistics` in plain Python: for a few numbers, ten numpy calls cost more than the maths."""
    values = numbers.ravel().tolist()
    shown = [v for v in values if math.isfinite(v)]
    nan = sum(1 for v in values if v != v)
    if not shown:
        return (math.nan,) * 4, nan, len(values) - nan
    mean = math.fsum(shown) / len(shown)
    try:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in shown) / len(shown))
    except OverflowError:  # values near the float64 limit
        std = math.inf
    return (mean, std, min(shown), max(shown)), nan, len(values) - len(shown) - nan


def heatmap(matrix):
    """The matrix as at most HEATMAP_CELLS x HEATMAP_CELLS cells, each the mean of its block of entries."""
    rows, cols = matrix.shape
    row_starts, col_starts = _block_starts(rows), _block_starts(cols)
    with np.errstate(invalid="ignore", over="ignore"):
        sums = np.add.reduceat(np.add.reduceat(matrix, row_starts, axis=0), col_starts, axis=1)
        counts = np.outer(np.diff(np.append(row_starts, rows)), np.diff(np.append(col_starts, cols)))
        cells = sums / counts
    return {"rows": int(rows), "cols": int(cols),
            "cells": [[json_number(x) for x in row] for row in cells]}


def _block_starts(length):
    """The first index of each of at most HEATMAP_CELLS nearly equal blocks covering range(length)."""
    count = min(length, HEATMAP_CELLS)
    return np.unique((np.arange(count) * length) // count)


def record(name, op, shape, dtype, site, kind, scope, inputs, value=None, grad=None):
    """One node as the page reads it, its value and gradient summarised."""
    return {"name": name, "op": op, "shape": None if shape is None else [None if d is None else int(d) for d in shape],
            "dtype": None if dtype is None else dtype_name(dtype), "site": site, "value": summary(value),
            "grad": summary(grad), "kind": kind, "scope": scope, "inputs": inputs}


def node_records(nodes, values, grads=None, group_of=None, reads=None):
    """The records of graph nodes, each in its `group_of` group (else its scope), reading `reads[node]`."""
    index_of = {node: i for i, node in enumerate(nodes)}
    sites, records = {}, []  # creation sites' texts by site: the nodes a loop built share a few
    for node in nodes:
        key = getattr(node, "site", None)
        if key not in sites:
            sites[key] = node.creation_site
        inputs = node.inputs if reads is None else reads[node]
        records.append(record(node.name, node.op_type, node.shape, node.dtype, sites[key], kind_of(node),
                              (group_of or {}).get(node) or scope_of(node.name),
                              [index_of[i] for i in inputs if i in index_of], values.get(node),
                              values.get((grads or {}).get(node))))
    return records


def scope_groups(scopes, groups=None):
    """`groups` ({} by default) with every enclosing scope of `scopes` added, labelled with its last part."""
    groups = {} if groups is None else groups
    for scope in scopes:
        scope = scope_of(scope) if scope in groups else scope  # a fused kernel's group: add its scopes
        while scope and scope not in groups:
            groups[scope] = {"label": scope.rsplit("/", 1)[-1], "kind": "scope"}
            scope = scope_of(scope)
    return groups


def walk_data(steps, pending, names, value_of, loss, wrt=()):
    """The page's backprop order and walk: each contribution summarised, with the running sum its node received."""
    if not steps:
        return {"backprop_order": []}
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
    return {"backprop_order": [step["node"] for step in steps], "backprop": {
        "loss": names[loss], "wrt": [names[n] for n in wrt], "steps": steps,
        "pending": {names[n]: count for n, count in pending.items() if n in names}}}


def graph_data(targets, graph, feed_dict=None, loss=None, wrt=None, backend=None):
    """The page's data for a list of nodes, or a whole Graph (`targets` None)."""
    if loss is None and targets and len(targets) == 1 and is_float(targets[0].dtype):
        loss = targets[0]  # one float target: the walk starts there
    if loss is not None and wrt is None:  # the float Variables (trained ones) and Placeholders the loss depends on
        wrt = sorted((n for n in ancestors([loss]) if isinstance(n, (Variable, Placeholder))
                      and is_float(n.dtype) and getattr(n, "trainable", True)),
                     key=lambda n: n.creation_index)
    wrt = as_list(wrt)
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
    records = node_records(nodes, values, grads)
    return {"source": "graph", "nodes": records, "groups": scope_groups(r["scope"] for r in records),
            "forward_order": [n.name for n in order if n in names], "notes": notes,
            **walk_data(walk, pending, names, values.get, loss, wrt)}


def plan_data(plan, feed_dict=None, backend=None):
    """The page's data for an ExecutionPlan: fused kernels as groups, values from one run of the user's graph."""
    optimized = plan.optimized
    nodes, fed = ((optimized.nodes, optimized.fed) if optimized is not None
                  else (sorted(plan.slot_of, key=plan.slot_of.get), frozenset(plan.fed_slots)))
    drawn, fused_of, reads = expand_fused(nodes)
    groups, group_of, kernels = {}, {}, dict.fromkeys(fused_of.values())
    for fused in kernels:
        common = os.path.commonprefix([scope_of(m.name) + "/" for m in fused.members])
        group = common[:common.rfind("/") + 1].lstrip("/") + f"fused kernel {len(groups)}"  # in their common scope
        groups[group] = {"label": "fused kernel: " + " → ".join(m.op_type for m in fused.members), "kind": "fused"}
        group_of.update(dict.fromkeys(fused.members, group))
    notes, originals = [], {node: original(node) for node in drawn}
    graph = next((o.graph for o in originals.values() if getattr(o, "graph", None) is not None), None)
    values = {n: n.value for n in drawn if isinstance(n, Constant)}
    if graph is not None:
        in_graph = set(graph.nodes)  # (a node an optimiser pass made is no node of the user's graph)
        computed = run_values({o for o in originals.values() if o in in_graph}, feed_dict, backend=backend, notes=notes)
        values.update((n, computed[o]) for n, o in originals.items() if o in computed and n not in values)
    records, seen = node_records(drawn, values, group_of=group_of, reads=reads), {}
    for node, entry in zip(drawn, records):
        count = seen[node.name] = seen.get(node.name, 0) + 1  # a plan may hold two copies of one node's name
        entry["name"] = node.name if count == 1 else f"{node.name} ({count})"
        entry["kind"] = "placeholder" if node in fed else entry["kind"]
    name_of = dict(zip(drawn, (r["name"] for r in records)))
    order = [name_of[n] for n in drawn if n in fed] + [
        name_of[m] for step in plan.steps for m in (step.node.members if step.node in kernels else [step.node])]
    report = getattr(plan, "report", None)
    if report is not None and str(report):
        notes.append(str(report))
    return {"source": "plan", "nodes": records, "groups": scope_groups((r["scope"] for r in records), groups),
            "forward_order": order, "backprop_order": [], "notes": notes}


def eager_data(tensor):
    """The page's data for an eager Tensor: the leaves, the ops it recorded with their outputs, the engine's walk."""
    ops, leaves = recorded(tensor)
    order = leaves + ops if ops else [tensor]  # leaves first, then each op after what it read; or a lone leaf
    names = eager_names(order)
    index_of = {item: i for i, item in enumerate(order)}
    notes, walk, pending, grads = [], [], {}, {}
    if ops:
        sink = dict.fromkeys(leaves)
        seed = None if tensor.size == 1 else [np.ones(tensor.shape, tensor.dtype)]
        try:
            walk, pending, grads = eager_walk(tensor, seed, sink, names)
            grads.update((leaf, g) for leaf, g in sink.items() if g is not None)
        except TinyflowError as err:
            notes.append(f"no backprop walk: {err}")
    records = []
    for item in order:
        leaf = isinstance(item, Tensor)
        records.append(record(names[item], item.op_type, item.shape, item.dtype, "" if leaf else item.creation_site,
                              "variable" if leaf else "op", "",
                              [index_of[s] for s in recorded_inputs(item) or () if s is not None],
                              item.numpy() if leaf else recorded_output(item), grads.get(item)))
    return {"source": "eager", "nodes": records, "groups": {}, "forward_order": [names[item] for item in order],
            "notes": notes, **walk_data(walk, pending, names, tensor_value, tensor.grad_fn)}
