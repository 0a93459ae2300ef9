"""Session: runs the part of a graph that some fetches need, with values fed for placeholders."""
import warnings

import numpy as np

from ..backends import get_backend
from ..errors import TinyflowError
from ..graph import get_default_graph
from ..nodes import Constant, Variable
from .feeds import check_feed, resolve_key
from .fetches import flatten, rebuild


class GraphGrowthWarning(UserWarning):
    """The graph grew between several consecutive runs: ops are probably built inside a loop."""


GROWTH_RUNS_BEFORE_WARNING = 5


class Session:
    """Runs fetches of one graph on one backend, caching an execution plan per (fetches, fed nodes)."""

    def __init__(self, graph=None, backend=None, optimize=None):
        from ..passes import resolve_options
        self.graph = graph if graph is not None else get_default_graph()
        self.backend = get_backend(backend)
        # graph optimiser passes (tinyflow/passes): None = on unless TINYFLOW_OPTIMIZE=0; a dict switches passes
        self.optimize = resolve_options(optimize)
        self._plans = {}
        self._closed = False
        self._graph_size = len(self.graph.nodes)
        self._growth_streak = 0
        self._warned_growth = False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """Release cached plans; the session cannot run afterwards."""
        self._plans.clear()
        self._closed = True

    def __repr__(self):
        return f"<tinyflow.Session backend='{self.backend.name}' graph={self.graph!r}>"

    def run(self, fetches, feed_dict=None):
        """Compute `fetches` (a node, a name, or nested lists/tuples/dicts of them) and return their values.

        The result has the structure of `fetches`, with numpy arrays for
        nodes and None for ops without a value (train ops).
        """
        if self._closed:
            raise TinyflowError("this Session is closed; create a new one with tfl.Session()")
        self._watch_graph_growth()
        leaves = flatten(fetches)
        fetch_nodes = [self._resolve_fetch(leaf) for leaf in leaves]
        feeds = {resolve_key(self.graph, key): value for key, value in (feed_dict or {}).items()}
        plan = self.plan(fetch_nodes, feeds)
        checked = {node: check_feed(node, value, plan.needed_by.get(node)) for node, value in feeds.items()}
        self.backend.begin_run()
        values = plan.run(checked)
        values = [_detach(node, self.backend.to_host(v)) for node, v in zip(fetch_nodes, values)]
        return rebuild(fetches, iter(values))

    def plan(self, fetch_nodes, fed_nodes):
        """The cached ExecutionPlan for these fetches and fed nodes (built on first use).

        With the optimiser on, `plan.optimized` is the rewritten graph it runs and `plan.report`
        what each pass did; `tfl.viz.to_graphviz(plan)` draws it.
        """
        key = (tuple(fetch_nodes), frozenset(fed_nodes))
        plan = self._plans.get(key)
        if plan is None:
            from ..passes.planning import build_plan
            plan = self._plans[key] = build_plan(fetch_nodes, frozenset(fed_nodes), self.backend, self.optimize)
        return plan

    def memory_profile(self, fetches, feed_dict=None):
        """Run once and report when each intermediate is computed and dropped, and the peak bytes."""
        from .memory import memory_profile
        return memory_profile(self, fetches, feed_dict)

    def _resolve_fetch(self, leaf):
        if isinstance(leaf, str):
            return self.graph.get_node(leaf)
        if getattr(leaf, "graph", None) is self.graph:
            return leaf
        if hasattr(leaf, "graph"):
            raise TinyflowError(f"fetch {leaf!r} belongs to another graph than this Session's; "
                                "create the Session with tfl.Session(graph=node.graph)")
        raise TypeError(f"cannot fetch {leaf!r}: fetch graph nodes, node names, or lists/tuples/dicts of them")

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


def _detach(node, value):
    """Fetched Variable and Constant values are copies, so later updates cannot change them."""
    if isinstance(node, (Variable, Constant)) and isinstance(value, np.ndarray):
        return value.copy()
    return value
