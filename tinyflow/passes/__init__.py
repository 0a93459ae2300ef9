"""The graph optimiser: a pipeline of passes, each a pure function from graph to graph.

See pipeline.py for the order and the options, one file per pass for its rewrite rule.
"""
from .constant_folding import fold_constants
from .cse import eliminate_common_subexpressions
from .fusion import fuse_elementwise
from .ir import OptGraph
from .pipeline import PASS_NAMES, PASSES, OptimizationReport, optimize, register_pass, resolve_options
from .prune import prune_dead_nodes
from .simplify import simplify

__all__ = ["optimize", "resolve_options", "register_pass", "PASSES", "PASS_NAMES", "OptimizationReport", "OptGraph",
           "fold_constants", "eliminate_common_subexpressions", "simplify", "prune_dead_nodes",
           "fuse_elementwise"]
