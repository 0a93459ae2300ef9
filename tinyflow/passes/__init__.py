"""The graph optimiser: a pipeline of passes, each a pure function from graph to graph (pipeline.py: their order,
the options, dead-node pruning; one file per other pass)."""
from .attention import fuse_attention
from .constant_folding import fold_constants
from .conv_epilogue import fuse_conv_epilogues
from .cse import eliminate_common_subexpressions
from .fusion import fuse_elementwise
from .ir import OptGraph
from .pipeline import PASSES, OptimizationReport, optimize, prune_dead_nodes, register_pass, resolve_options
from .simplify import simplify

__all__ = ["optimize", "resolve_options", "register_pass", "PASSES", "OptimizationReport", "OptGraph",
           "fold_constants", "eliminate_common_subexpressions", "simplify", "prune_dead_nodes",
           "fuse_elementwise", "fuse_conv_epilogues", "fuse_attention"]
