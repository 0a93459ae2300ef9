"""Graph control flow: `cond` runs one of two subgraphs, `while_loop` runs a subgraph until a test fails.

    subgraph.py    what a branch or loop body is (the nodes a function built, the outer nodes it reads)
    outputs.py     ops with several outputs: a tuple value read by Output nodes
    cond.py        tfl.cond and its gradient (a cond of the branches' gradients)
    while_loop.py  tfl.while_loop: the op, its kernel, and the stacks it records for its gradient
    stacks.py      StackPush / StackPop: per-iteration values kept for the backward pass
    while_grad.py  the gradient of a loop: a second loop running the body's gradient in reverse
    sequences.py   tfl.range and what a tensor `for` loop iterates over (rows, enumerate, zip)
"""
from .cond import Cond, cond
from .outputs import ControlFlowOp, Output
from .sequences import range
from .stacks import StackPop, StackPush, StackValue
from .subgraph import Subgraph
from .while_loop import WhileLoop, while_loop
from . import while_grad  # noqa: F401 - registers the gradient of WhileLoop

__all__ = ["cond", "while_loop", "range", "Cond", "WhileLoop", "Output", "ControlFlowOp", "Subgraph",
           "StackPush", "StackPop", "StackValue"]
