"""Slicing with bounds known only at run time: x[start:end:step] along some axes, start and end int vectors.

What ONNX's Slice computes when its starts or ends are computed by the graph (the iteration number of a Loop, a length
read from a shape with unknown dimensions). Bounds are clamped as Python slices clamp them; the axes and steps are fixed
when the graph is built. Static bounds use tfl's indexing (x[1:3]), which this op equals.
"""
import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Operation
from .broadcasting import ShapedLike
from .registry import register_gradient


class RuntimeSliceOperation(Operation):
    """Shared by RuntimeSlice and its gradient: the fixed axes and steps, and the slice key from run-time bounds."""

    abstract = True

    def _set_slice(self, check, x, starts, axes, steps):
        bounds_shape = getattr(starts, "shape", None)
        count = bounds_shape[0] if bounds_shape is not None and len(bounds_shape) == 1 else None
        axes = tuple(check.integer("axes", a) for a in axes)
        steps = (1,) * len(axes) if steps is None else tuple(check.integer("steps", s) for s in steps)
        if len(steps) != len(axes) or (count is not None and count != len(axes)):
            check.fail("axes", axes, f"do not match the {len(steps)} steps and {count} bounds",
                       "pass one axis, one step and one start and end per sliced axis")
        if 0 in steps:
            check.fail("steps", steps, "holds a 0", "slice with steps other than 0")
        rank = rank_of(x)
        if rank is not None and (any(not -rank <= a < rank for a in axes) or
                                 len({a % rank for a in axes}) != len(axes)):
            check.fail("axes", axes, f"are out of range or repeated for an input of rank {rank}",
                       f"pass distinct axes in [-{rank}, {rank})")
        self.axes, self.steps = axes, steps

    def key(self, rank, starts, ends):
        """The slice tuple for an input of this rank and these run-time bounds."""
        starts, ends = np.asarray(starts).reshape(-1), np.asarray(ends).reshape(-1)
        if starts.dtype.kind not in "iu" or ends.dtype.kind not in "iu" or len(starts) != len(self.axes) \
                or len(ends) != len(self.axes):
            raise ValueError(f"the bounds must be {len(self.axes)} integers each, got starts {starts.tolist()} and "
                             f"ends {ends.tolist()}")
        key = [slice(None)] * rank
        for axis, start, end, step in zip(self.axes, starts.tolist(), ends.tolist(), self.steps):
            key[axis % rank] = slice(start, end, step)
        return tuple(key)

    def sliced_shape(self, x_shape):
        """x's shape with the sliced axes unknown (their sizes depend on run-time bounds)."""
        if x_shape is None:
            return None
        sliced = {a % len(x_shape) for a in self.axes}
        return tuple(None if i in sliced else d for i, d in enumerate(x_shape))


class RuntimeSlice(RuntimeSliceOperation):
    """x[start_i:end_i:step_i] along axes[i], start and end int vectors read at run time.  Gradient: g put back where
    the slice came from, in zeros of x's shape (RuntimeSliceGrad)."""

    def __init__(self, x, starts, ends, axes, steps=None, name=None):
        self._set_slice(Arguments(self, name, x, starts, ends), x, starts, axes, steps)
        super().__init__(x, starts, ends, name=name)

    def compute(self, x, starts, ends):
        return x[self.key(x.ndim, starts, ends)]

    def infer_shape(self, x_shape, starts_shape, ends_shape):
        return self.sliced_shape(x_shape)

    def infer_dtype(self, x, starts, ends):
        return x


class RuntimeSliceGrad(RuntimeSliceOperation, ShapedLike):
    """Zeros of x's shape with g written at x[start:end:step] (the adjoint of RuntimeSlice)."""

    def __init__(self, grad, x, starts, ends, axes, steps=None, name=None):
        self._set_slice(Arguments(self, name, grad, x, starts, ends), x, starts, axes, steps)
        super().__init__(grad, x, starts, ends, name=name)

    def compute(self, grad, x, starts, ends):
        out = np.zeros(np.shape(x), grad.dtype)
        out[self.key(np.ndim(x), starts, ends)] = grad
        return out

    def infer_shape(self, grad_shape, x_shape, starts_shape, ends_shape):
        if grad_shape is not None and x_shape is not None and len(grad_shape) != len(x_shape):
            raise ShapeError(f"the gradient of a slice of shape {x_shape} has rank {len(x_shape)}, got {grad_shape}")
        return x_shape


def runtime_slice(x, starts, ends, axes, steps=None, name=None):
    """x[start:end:step] along `axes`, `starts` and `ends` int vector nodes read at run time (Python clamping)."""
    return RuntimeSlice(x, starts, ends, axes, steps, name=name)


@register_gradient(RuntimeSlice)
def _runtime_slice_grad(op, grad):
    x, starts, ends = op.inputs
    return [RuntimeSliceGrad(grad, x, starts, ends, op.axes, op.steps), None, None]


@register_gradient(RuntimeSliceGrad)
def _runtime_slice_grad_grad(op, grad):
    _, x, starts, ends = op.inputs
    return [RuntimeSlice(grad, starts, ends, op.axes, op.steps), None, None, None]
