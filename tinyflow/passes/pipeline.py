"""The optimiser: passes run in order over a private copy of the fetched subgraph, with a report.

    fetches ──▶ prune & copy ──▶ constant folding ──▶ CSE ──▶ simplification ──▶ dead-node pruning
            ──▶ convolution epilogues ──▶ attention ──▶ elementwise fusion ──▶ multi-tensor updates (tinyflow.optim's)
            ──▶ OptGraph (what the plan runs)

Every pass is a function OptGraph -> (new OptGraph, counts); none changes its argument or the user's graph. Options:
True (every pass), False/None (off), or a dict of per-pass switches, e.g. {"fusion": False}.
"""
import os

from ..errors import ArgumentError
from .attention import fuse_attention
from .constant_folding import fold_constants
from .conv_epilogue import fuse_conv_epilogues
from .cse import eliminate_common_subexpressions
from .fusion import fuse_elementwise
from .ir import OptGraph
from .simplify import simplify


def prune_dead_nodes(graph):
    """A copy of `graph` without the nodes no fetch needs any more (a folded op's inputs, a merged duplicate)."""
    graph = graph.copy()
    return graph, {"pruned": graph.prune()}


# name -> pass, in the order they run; higher layers add theirs with register_pass (tinyflow.optim: multi_tensor)
PASSES = {"constant_folding": fold_constants, "cse": eliminate_common_subexpressions, "simplify": simplify,
          "prune": prune_dead_nodes, "conv_epilogue": fuse_conv_epilogues, "attention": fuse_attention,
          "fusion": fuse_elementwise}


def register_pass(name, run_pass):
    """Run `run_pass(OptGraph) -> (OptGraph, counts)` after the passes so far, switched by `name` in `optimize`."""
    PASSES.setdefault(name, run_pass)


def resolve_options(optimize):
    """{pass name: on?} from Session's `optimize` argument, or None when optimisation is off (`optimize=None`, the
    default, is on unless the environment says TINYFLOW_OPTIMIZE=0)."""
    if optimize is None:
        optimize = os.environ.get("TINYFLOW_OPTIMIZE", "1").strip().lower() not in ("0", "false", "no", "off")
    if optimize is False:
        return None
    if optimize is True:
        return dict.fromkeys(PASSES, True)
    if isinstance(optimize, dict):
        unknown = sorted(set(optimize) - set(PASSES))
        if unknown:
            raise ArgumentError(f"unknown optimiser pass(es) {unknown}; the passes are {list(PASSES)}")
        return {name: bool(optimize.get(name, True)) for name in PASSES}
    raise ArgumentError(f"optimize must be True, False, None or a dict of pass switches like {{'fusion': False}}, "
                        f"got {optimize!r}")


class OptimizationReport:
    """What each pass did: its counts and the number of op nodes before and after it."""

    def __init__(self, rows, ops_before):
        self.rows, self.ops_before = rows, ops_before  # rows: (pass name, counts, ops before, ops after)

    @property
    def ops_after(self):
        """How many op nodes the optimised graph runs."""
        return self.rows[-1][3] if self.rows else self.ops_before

    def counts(self):
        """{pass name: {count name: value}}."""
        return {name: counts for name, counts, _, _ in self.rows}

    def __str__(self):
        lines = [f"optimiser: {self.ops_before} ops -> {self.ops_after} ops"]
        for name, counts, before, after in self.rows:
            what = ", ".join(f"{k} {v}" for k, v in counts.items())
            lines.append(f"  {name:<17} {what:<34} ops {before} -> {after}")
        return "\n".join(lines)

    __repr__ = __str__


def optimize(fetches, fed=frozenset(), options=True):
    """The optimised OptGraph of `fetches` (fed nodes are inputs); its `.report` says what changed."""
    options = resolve_options(options)
    graph = OptGraph.from_fetches(list(fetches), frozenset(fed))
    ops_before, rows = graph.op_count(), []
    for name, run_pass in PASSES.items():
        if options and options.get(name):
            before = graph.op_count()
            graph, counts = run_pass(graph)
            rows.append((name, counts, before, graph.op_count()))
    graph.report = OptimizationReport(rows, ops_before)
    return graph
