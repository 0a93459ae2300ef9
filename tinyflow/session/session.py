"""Session: runs the part of a graph that some fetches need, with validated feeds. Threads: runs of one graph are
serialised by its `run_lock` (optimizer updates never interleave), runs on one OpenCL device by the device's lock;
runs of different graphs on the C or numpy backend proceed in parallel."""
import warnings

import numpy as np

from ..backends import get_backend
from ..errors import FeedError, GraphError, TinyflowError
from ..graph import get_default_graph
from ..nodes import Node
from ..passes import optimize, resolve_options
from ..shapes import matches
from .memory import memory_profile
from .plan import ExecutionPlan


class GraphGrowthWarning(UserWarning):
    """The graph grew between several consecutive runs: ops are probably built inside a loop."""


GROWTH_RUNS_BEFORE_WARNING = 5

def flatten(structure):
    """The leaves (nodes or names) of a fetch structure (nested lists, tuples, dicts), in order."""
    if isinstance(structure, (dict, list, tuple)):
        items = structure.values() if isinstance(structure, dict) else structure
        return [leaf for item in items for leaf in flatten(item)]
    return [structure]


def rebuild(structure, values):
    """The fetch structure with its leaves replaced, in order, by `values` (an iterator)."""
    if isinstance(structure, dict):
        return type(structure)((key, rebuild(structure[key], values)) for key in structure)
    if isinstance(structure, list):
        return [rebuild(item, values) for item in structure]
    if isinstance(structure, tuple):
        items = [rebuild(item, values) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return next(values)


def resolve_key(graph, key, fetch=False):
    """The node a feed_dict key (or a fetch) names: a node of `graph`, or a node name."""
    if isinstance(key, str):
        return graph.get_node(key)
    if isinstance(key, Node) and key.graph is graph:
        return key
    what, error = ("fetch", GraphError) if fetch else ("feed_dict key", FeedError)
    if hasattr(key, "graph"):  # a node of another graph, or an eager Tensor
        raise error(f"{what} {key!r} belongs to another graph than this Session's; "
                    "create the Session for the graph the node is in: tfl.Session(graph=node.graph)")
    raise error(f"cannot use {key!r} as a {what}: use graph nodes or node names"
                + (" (or lists, tuples and dicts of them)" if fetch else ""))


def _fail(node, needed_by, problem, fix):
    who = f"{node.op_type} '{node.name}' (shape {node.shape}, dtype {node.dtype})"
    need = f" It is needed by fetch '{needed_by.name}'." if needed_by is not None else ""
    raise FeedError(f"cannot feed {who}: {problem}.{need} {fix}")


def check_feed(node, value, needed_by):
    """`value` as an array of the node's dtype, or FeedError: a conversion that would change a value (a fraction or
    an out-of-range number for an integer node, 1e39 for float32) is refused."""
    if isinstance(value, Node):
        _fail(node, needed_by, f"got the graph node {value!r}", "Feed numpy arrays; run the node first.")
    if node.dtype is None:
        _fail(node, needed_by, "it has no value to replace", "Feed only nodes that produce values.")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        _fail(node, needed_by, f"the value cannot become an array ({err})", "Feed a numpy array.")
    target = node.dtype
    if array.dtype != target:
        if array.dtype.kind not in "biuf":
            _fail(node, needed_by, f"values of dtype {array.dtype} are not numbers",
                  f"Feed numbers convertible to {target}.")
        if target.kind in "iub":
            if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
                _fail(node, needed_by, "the value has NaN or infinite entries", "Feed finite whole numbers.")
            converted = array.astype(target)
            if not np.array_equal(converted, array):
                _fail(node, needed_by, f"some values of dtype {array.dtype} cannot be represented as {target}"
                      " (fractional or out of range)", "Round them, or use a Placeholder of a wider dtype.")
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                converted = array.astype(target)
            overflowed = np.isinf(converted) & np.isfinite(array)
            if overflowed.any():
                _fail(node, needed_by, f"{int(overflowed.sum())} value(s) of dtype {array.dtype}, such as "
                      f"{array[overflowed].flat[0]!r}, lie outside the range of {target} and would become inf",
                      "Rescale the data, or use a Placeholder of a wider dtype (e.g. dtype='float64').")
        array = converted
    if not matches(node.shape, array.shape):
        _fail(node, needed_by, f"the value has shape {array.shape}",
              f"Feed an array of shape {node.shape} (None = any size).")
    return array


class Session:
    """Runs fetches of one graph on one backend, caching an execution plan per (fetches, fed nodes)."""

    def __init__(self, graph=None, backend=None, optimize=None):
        self.graph = graph if graph is not None else get_default_graph()
        self.backend = get_backend(backend)
        # graph optimiser passes (tinyflow/passes): None = on unless TINYFLOW_OPTIMIZE=0; a dict switches passes
        self.optimize = resolve_options(optimize)
        self._plans, self._closed = {}, False
        self._graph_size, self._growth_streak, self._warned_growth = len(self.graph.nodes), 0, False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """Release cached plans and the backend's buffers; the session cannot run afterwards."""
        with self.graph.run_lock, self.backend.lock:
            self._plans.clear()
            self.backend.close()
            self._closed = True

    def __repr__(self):
        return f"<tinyflow.Session backend='{self.backend.name}' graph={self.graph!r}>"

    def run(self, fetches, feed_dict=None):
        """The values of `fetches` (nodes, names, nested lists/tuples/dicts) in their structure: arrays the caller
        owns, None for ops without a value (train ops)."""
        with self.graph.run_lock, self.backend.lock:
            if self._closed:
                raise TinyflowError("this Session is closed; create a new one with tfl.Session()")
            self._watch_graph_growth()
            plan, checked = self.prepare(fetches, feed_dict)
            self.backend.begin_run()
            values = _caller_owned([self.backend.to_host(v) for v in plan.run(checked)], plan)
            self.backend.pool.lend(values)  # fetched arrays the caller drops become output buffers again
            return rebuild(fetches, iter(values))

    def prepare(self, fetches, feed_dict):
        """(the plan for `fetches`, the checked feeds) of a run."""
        fetch_nodes = [resolve_key(self.graph, leaf, fetch=True) for leaf in flatten(fetches)]
        feeds = {resolve_key(self.graph, key): value for key, value in (feed_dict or {}).items()}
        plan = self.plan(fetch_nodes, feeds)
        return plan, {node: check_feed(node, value, plan.needed_by.get(node)) for node, value in feeds.items()}

    def plan(self, fetch_nodes, fed_nodes):
        """The cached ExecutionPlan for these fetches and fed nodes; `plan.optimized` is the OptGraph it runs and
        `plan.report` what each pass did (both None when not optimised)."""
        key = (tuple(fetch_nodes), frozenset(fed_nodes))
        plan = self._plans.get(key)
        if plan is None:
            graph = optimize(fetch_nodes, key[1], self.optimize) if self.optimize else None
            plan = self._plans[key] = ExecutionPlan(graph.fetches if graph else fetch_nodes, key[1], self.backend)
            plan.optimized, plan.report = graph, graph.report if graph else None
        return plan

    def drop_plans(self, nodes):
        """Forget the cached plans fetching any of `nodes` (nodes taken out of the graph)."""
        nodes = set(nodes)
        self._plans = {key: plan for key, plan in self._plans.items() if nodes.isdisjoint(key[0])}

    memory_profile = memory_profile  # run once, reporting when each intermediate is computed and dropped

    def accept_graph_growth(self):
        """The graph grew on purpose (a traced function): not the leak the GraphGrowthWarning is about."""
        self._graph_size = len(self.graph.nodes)

    def _watch_graph_growth(self):
        """Warn once when the graph grew before each of several consecutive runs (the TF1 leak)."""
        size = len(self.graph.nodes)
        self._growth_streak = self._growth_streak + 1 if size > self._graph_size else 0
        self._graph_size = size
        if self._growth_streak >= GROWTH_RUNS_BEFORE_WARNING and not self._warned_growth:
            self._warned_growth = True
            warnings.warn(
                f"the graph grew before each of the last {self._growth_streak} runs (now {size} nodes): "
                "ops are probably being created inside the training loop, which leaks memory and slows "
                "every step. Build all ops once before the loop; call graph.finalize() to catch this.",
                GraphGrowthWarning, stacklevel=3)


def _caller_owned(values, plan):
    """The fetched values, copied where they are views, Variables' or Constants' arrays, or returned twice."""
    seen, owned = set(), []
    for value in values:
        if isinstance(value, np.ndarray):
            if (value.base is not None or id(value) in seen or id(value) in plan.constant_arrays
                    or any(value is var.host_array for var in plan.variables)):
                value = value.copy()
            seen.add(id(value))
        owned.append(value)
    return owned
