"""Ops whose values are shapes, or arrays of a run-time shape: shape, size, fill, arange; runtime_slice. ONNX models
compute shapes with them (Shape, Size, ConstantOfShape, Range, Slice) where a shape is known only at run time.
Only runtime_slice is differentiable (the others give integers, or values that depend on no input's value)."""
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Constant, Operation
from .broadcasting import ShapedLike
from .registry import not_differentiable, op_function, register_gradient
from .array_ops import MAX_RANK, known_entries


class Shape(Operation):
    """The run-time shape of x as an int64 vector, entries [start:end] (Python slice rules)."""

    dtype_of = np.dtype(np.int64)

    def __init__(self, x, start=0, end=None, name=None):
        check = Arguments(self, name, x)
        self.start = check.integer("start", start)
        self.end = None if end is None else check.integer("end", end)
        super().__init__(x, name=name)

    def compute(self, x):
        return np.array(np.shape(x)[self.start:self.end], dtype=np.int64)

    def infer_shape(self, x_shape):
        return (None,) if x_shape is None else (len(range(len(x_shape))[self.start:self.end]),)


shape = op_function(Shape, "shape")


class Size(Operation):
    """The number of elements of x (an int64 scalar)."""

    dtype_of = np.dtype(np.int64)

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return np.array(np.size(x), dtype=np.int64)

    def infer_shape(self, x_shape):
        return ()


size = op_function(Size, "size", "The number of elements of x, as an int64 scalar.")


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


fill = op_function(Fill, "fill", "An array of run-time shape `dims` (an int64 vector node) filled with `value`.")


class Arange(Operation):
    """start, start + delta, ... up to (not including) limit, three scalars read at run time (np.arange)."""

    dtype_of = 0

    def __init__(self, start, limit, delta=1, name=None):
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
        if None in self.bounds or delta == 0:
            return (None,)
        if all(isinstance(v, int) for v in self.bounds):
            return (len(range(start, limit, delta)),)
        return (max(0, math.ceil((limit - start) / delta)) if all(map(math.isfinite, self.bounds)) else None,)


def _static(x):
    """x's value if it is known while the graph is built (a Constant or a number), else None."""
    if isinstance(x, Constant):
        return np.asarray(x.value).item()
    return np.asarray(x).item() if isinstance(x, (int, float, np.number, np.ndarray)) else None


arange = op_function(Arange, "arange", "np.arange(start, limit, delta) of run-time scalars (start's dtype).")

not_differentiable(Shape, Size, Fill, Arange)


def slice_key(rank, axes, steps, starts, ends):
    """The slice tuple of x[start_i:end_i:step_i] along axes[i] for an input of this rank and these run-time bounds."""
    starts, ends = np.asarray(starts).reshape(-1), np.asarray(ends).reshape(-1)
    if starts.dtype.kind not in "iu" or ends.dtype.kind not in "iu" or not len(starts) == len(ends) == len(axes):
        raise ValueError(f"the bounds must be {len(axes)} integers each, got starts {starts.tolist()} and "
                         f"ends {ends.tolist()}")
    key = [slice(None)] * rank
    for axis, start, end, step in zip(axes, starts.tolist(), ends.tolist(), steps):
        key[axis % rank] = slice(start, end, step)
    return tuple(key)


class RuntimeSlice(Operation):
    """x[start_i:end_i:step_i] along axes[i], start and end int vectors computed by the graph (ONNX Slice), clamped as
    Python's.  Gradient: g put back where the slice came from, in zeros of x's shape (RuntimeSliceGrad)."""

    dtype_of = 0

    def __init__(self, x, starts, ends, axes, steps=None, name=None):
        check = Arguments(self, name, x, starts, ends)
        bounds_shape = getattr(starts, "shape", None)
        count = bounds_shape[0] if bounds_shape is not None and len(bounds_shape) == 1 else None
        axes = tuple(check.integer("axes", a) for a in axes)
        steps = (1,) * len(axes) if steps is None else tuple(check.integer("steps", s) for s in steps)
        if len(steps) != len(axes) or (count is not None and count != len(axes)):
            check.fail("axes", axes, f"do not match the {len(steps)} steps and {count} bounds",
                       "pass one axis, one step and one start and end per sliced axis")
        if 0 in steps:
            check.fail("steps", steps, "holds a 0", "slice with steps other than 0")
        if rank_of(x) is not None:  # in range and distinct (self.axes keeps their order: each has its step)
            check.axes("axes", axes, rank_of(x))
        self.axes, self.steps = axes, steps
        super().__init__(x, starts, ends, name=name)

    def compute(self, x, starts, ends):
        return x[slice_key(x.ndim, self.axes, self.steps, starts, ends)]

    def infer_shape(self, x_shape, starts_shape, ends_shape):
        if x_shape is None:
            return None
        sliced = {a % len(x_shape) for a in self.axes}  # their sizes depend on the run-time bounds
        return tuple(None if i in sliced else d for i, d in enumerate(x_shape))


class RuntimeSliceGrad(ShapedLike):
    """Zeros of x's shape with g written at x[start:end:step] (the adjoint of RuntimeSlice, its axes and steps)."""

    def __init__(self, grad, x, starts, ends, axes, steps, name=None):
        self.axes, self.steps = axes, steps
        super().__init__(grad, x, starts, ends, name=name)

    def compute(self, grad, x, starts, ends):
        out = np.zeros(np.shape(x), grad.dtype)
        out[slice_key(np.ndim(x), self.axes, self.steps, starts, ends)] = grad
        return out

    def infer_shape(self, grad_shape, x_shape, starts_shape, ends_shape):
        if grad_shape is not None and x_shape is not None and len(grad_shape) != len(x_shape):
            raise ShapeError(f"the gradient of a slice of shape {x_shape} has rank {len(x_shape)}, got {grad_shape}")
        return x_shape


runtime_slice = op_function(RuntimeSlice, "runtime_slice", "x[start:end:step] along `axes`, starts and ends int vectors"
                                                           " read at run time (Python clamping).")
register_gradient(RuntimeSlice)(lambda op, grad: [RuntimeSliceGrad(grad, *op.inputs, op.axes, op.steps), None, None])
register_gradient(RuntimeSliceGrad)(lambda op, grad: [RuntimeSlice(grad, *op.inputs[2:], op.axes, op.steps), None, None,
                                                      None])
