"""Graph control flow: `cond` runs one of two subgraphs, `while_loop` runs a subgraph until a test fails; their
gradients (a loop's: a second loop over the stacks of per-iteration values, stacks.py) and tfl.range."""
from .cond import Cond, cond
from .sequences import range
from .stacks import StackPop, StackPush, StackValue
from .subgraph import ControlFlowOp, Output, Subgraph
from .while_loop import WhileLoop, while_loop

__all__ = ["cond", "while_loop", "range", "Cond", "WhileLoop", "Output", "ControlFlowOp", "Subgraph",
           "StackPush", "StackPop", "StackValue"]
