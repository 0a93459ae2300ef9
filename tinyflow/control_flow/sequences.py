"""What a tensor `for` loop iterates over: tfl.range, a tensor's rows, and enumerate / zip of those.

    for i in tfl.range(n): ...        n a tensor: i = 0, 1, ... as an int64 scalar node
    for row in x: ...                 x a tensor: row = x[k] for k = 0 .. len(x) - 1
    for k, row in enumerate(x): ...   for a, b in zip(x, y): ...   (stops at the shorter)

A sequence answers `valid(k)` and `item(k)` for a position k (an int64 scalar node); to_static turns such a `for`
into a while_loop over k (tinyflow/jit/dispatch.py).
"""
import builtins
import functools
import operator

import numpy as np

from ..errors import ShapeError, TinyflowError
from ..nodes import Node, Operation, is_eager
from ..ops.array_ops import checks
from ..ops.elementwise_ops import cast, greater, less, where
from ..ops.indexing import gather
from ..ops.registry import not_differentiable


class Length(Operation):
    """len(x): the size of x's first dimension, an int64 scalar (known at run time only for a None dimension)."""

    def infer_shape(self, x_shape):
        if x_shape is not None and len(x_shape) == 0:
            raise ShapeError("len() of a scalar tensor; iterate over a tensor of rank 1 or more")
        return ()

    def infer_dtype(self, x_dtype):
        return np.dtype(np.int64)

    def compute(self, x):
        return np.int64(np.shape(x)[0])


not_differentiable(Length)


def length(x):
    """len(x) for a graph node: a Python int when its first dimension is known, else a Length node."""
    return x.shape[0] if x.shape is not None and len(x.shape) and x.shape[0] is not None else Length(x)


class Sequence:
    """A tensor sequence: `valid(k)` says whether position k is inside it, `item(k)` is its element there."""

    def __init__(self, valid, item):
        self.valid, self.item = valid, item

    def __iter__(self):
        raise TinyflowError("a tfl.range, enumerate or zip over a tensor is iterated only by a `for` statement "
                            "inside tfl.jit.to_static (it becomes a while_loop), not by a comprehension, list() or "
                            "graph code; write a `for` loop (appending to a list), tfl.while_loop, or pass Python ints")


def rows(x):
    """The rows of a tensor."""
    if x.shape is not None and len(x.shape) == 0:
        raise TinyflowError(f"cannot iterate over '{x.name}', a scalar tensor; iterate over tfl.range(n) or a "
                            "tensor of rank 1 or more")
    return Sequence(lambda k: less(k, length(x)), lambda k: gather(x, k))


def graph_range(start, stop, step):
    """range(start, stop, step) whose bounds are graph nodes: tfl.range's value when one of them is a tensor."""
    rising = step > 0 if not isinstance(step, Node) else None  # a tensor step: its sign at run time
    dtype = np.result_type(*[v.dtype if isinstance(v, Node) else np.asarray(v).dtype for v in (start, stop, step)])
    start, stop, step = (cast(v if isinstance(v, Node) else np.asarray(v, dtype), dtype)
                         for v in (start, stop, step))

    def item(k):
        return start + cast(k, dtype) * step

    def valid(k):
        value = item(k)
        if rising is None:
            return where(greater(step, 0), less(value, stop), greater(value, stop))
        return less(value, stop) if rising else greater(value, stop)
    return Sequence(valid, item)


def enumerated(sequence, start=0):
    """enumerate(sequence, start)."""
    return Sequence(sequence.valid, lambda k: ((k + start if start else k), sequence.item(k)))


def zipped(sequences):
    """zip(*sequences): stops at the shortest."""
    return Sequence(lambda k: functools.reduce(lambda ok, s: where(ok, s.valid(k), False), sequences[1:],
                                               sequences[0].valid(k)),
                    lambda k: tuple(s.item(k) for s in sequences))


def range(start, stop=None, step=1):  # noqa: A001 - tfl.range, as Python's
    """Python's range (eager Tensors give their values); with a graph tensor bound, a sequence to_static loops over."""
    if stop is None:
        start, stop = 0, start
    check = checks("range", None)
    values = [v if isinstance(v, Node) else check.integer(argument, operator.index(v) if is_eager(v) else v)
              for argument, v in zip(("start", "stop", "step"), (start, stop, step))]  # eager Tensors: values known
    if not isinstance(values[2], Node) and values[2] == 0:
        check.fail("step", 0, "is zero", "pass a step other than 0")
    return graph_range(*values) if any(isinstance(v, Node) for v in values) else builtins.range(*values)
