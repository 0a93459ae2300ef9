"""Ops whose values are shapes, or arrays of a run-time shape: shape, size, fill, arange.

They are what ONNX models compute shapes with (Shape, Size, ConstantOfShape, Range). When the input's shape is fully
known while the graph is built, the ONNX importer folds them into constants; these ops compute what is only known at run
time. None of them is differentiable (integer results, or a value that does not depend on any input's value).
"""
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Constant, Operation
from .registry import not_differentiable
from .shape_ops import MAX_RANK, known_entries


class Shape(Operation):
    """The run-time shape of x as an int64 vector, entries [start:end] (Python slice rules)."""

    def __init__(self, x, start=0, end=None, name=None):
        check = Arguments(self, name, x)
        self.start = check.integer("start", start)
        self.end = None if end is None else check.integer("end", end)
        super().__init__(x, name=name)

    def compute(self, x):
        return np.array(np.shape(x)[self.start:self.end], dtype=np.int64)

    def infer_shape(self, x_shape):
        if x_shape is None:
            return (None,)
        return (len(range(len(x_shape))[self.start:self.end]),)

    def infer_dtype(self, x):
        return np.dtype(np.int64)


def shape(x, start=0, end=None, name=None):
    """The run-time shape of x as an int64 vector (optionally only the dims [start:end])."""
    return Shape(x, start, end, name=name)


class Size(Operation):
    """The number of elements of x (an int64 scalar)."""

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return np.array(np.size(x), dtype=np.int64)

    def infer_shape(self, x_shape):
        return ()

    def infer_dtype(self, x):
        return np.dtype(np.int64)


def size(x, name=None):
    """The number of elements of x, as an int64 scalar."""
    return Size(x, name=name)


class Fill(Operation):
    """An array of the shape held by the int64 vector `dims` (a run-time value), every entry `value`."""

    def __init__(self, dims, value=0.0, dtype=None, name=None):
        check = Arguments(self, name, dims)
        self.value = np.asarray(check.numeric_array("value", value))
        if self.value.size != 1:
            check.fail("value", value, "is not a single number", "pass one number, e.g. 0.0")
        self.fill_dtype = check.dtype("dtype", dtype) if dtype is not None else self.value.dtype
        if rank_of(dims) not in (None, 1):
            check.fail("dims", dims, f"has shape {dims.shape}", "pass a 1-D int64 vector of dimensions")
        self.known = known_entries(dims)  # ints and None (known at run time only), or None
        super().__init__(dims, name=name)

    def compute(self, dims):
        if np.any(np.asarray(dims) < 0):
            raise ShapeError(f"Fill '{self.name}': negative dimension in {list(dims)}")
        return np.full(tuple(int(d) for d in dims), self.value.reshape(()), dtype=self.fill_dtype)

    def infer_shape(self, dims_shape):
        if dims_shape is None or dims_shape[0] is None:
            return None
        if dims_shape[0] > MAX_RANK:
            raise ShapeError(f"dims holds {dims_shape[0]} sizes; no array has more than {MAX_RANK} dimensions")
        if self.known is not None and all(d is None or d >= 0 for d in self.known):
            return tuple(self.known)
        return (None,) * dims_shape[0]

    def infer_dtype(self, dims):
        return self.fill_dtype


def fill(dims, value=0.0, dtype=None, name=None):
    """An array of run-time shape `dims` (an int64 vector node) filled with `value`."""
    return Fill(dims, value, dtype, name=name)


class Arange(Operation):
    """start, start + delta, ... up to (not including) limit, three scalars read at run time (np.arange)."""

    def __init__(self, start, limit, delta, name=None):
        check = Arguments(self, name, start, limit, delta)
        for argument, node in (("start", start), ("limit", limit), ("delta", delta)):
            if rank_of(node) not in (None, 0):
                check.fail(argument, node, f"has shape {node.shape}", "pass a scalar")
        self.bounds = [_static(x) for x in (start, limit, delta)]
        super().__init__(start, limit, delta, name=name)

    def compute(self, start, limit, delta):
        if delta == 0:
            raise ValueError(f"Arange '{self.name}': the step is 0")
        return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)

    def infer_shape(self, start_shape, limit_shape, delta_shape):
        start, limit, delta = self.bounds
        if None in self.bounds:
            return (None,)
        if all(isinstance(v, int) for v in (start, limit, delta)) and delta:
            return (len(range(start, limit, delta)),)
        if delta == 0 or not all(math.isfinite(v) for v in (start, limit, delta)):
            return (None,)
        return (max(0, math.ceil((limit - start) / delta)),)

    def infer_dtype(self, start, limit, delta):
        return start


def _static(x):
    """x's value if it is known while the graph is built (a Constant or a number), else None."""
    if isinstance(x, Constant):
        return np.asarray(x.value).item()
    return np.asarray(x).item() if isinstance(x, (int, float, np.number, np.ndarray)) else None


def arange(start, limit, delta=1, name=None):
    """np.arange(start, limit, delta) of scalars known at run time (nodes), in start's dtype."""
    return Arange(start, limit, delta, name=name)


not_differentiable(Shape, Size, Fill, Arange)
