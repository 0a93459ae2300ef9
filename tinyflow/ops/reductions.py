"""Reductions over axes (sum, mean, max) and argmax; each reduction and its gradient differentiate each other.

Each op class is followed by its snake_case function; the gradients follow the
backward ops they are built from.
"""
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..nodes import Operation
from ..shapes import reduced_shape
from .registry import not_differentiable, register_gradient


# dtypes np.add.reduce sums in their own precision, as np.sum and np.mean do (they promote the others first)
_SUMMED_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))


class Reduction(Operation):
    """Base of reductions: `axis` None (all), an int or a tuple; `keepdims` keeps size-1 axes.

    `axes` is the normalised, sorted tuple of reduced axes (None when the input's rank is unknown).
    """

    abstract = True

    def __init__(self, x, axis=None, keepdims=False, name=None):
        check = Arguments(self, name, x)
        self.axis, self.keepdims = axis, check.flag("keepdims", keepdims)
        self.axes = check.axes("axis", axis, rank_of(x))
        if self.axes is None and self.keepdims:
            check.fail("keepdims", keepdims, "needs an input of known rank (its shape is unknown)",
                       "give the input node a shape, or pass keepdims=False")
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        return () if x_shape is None else reduced_shape(x_shape, self.axes, self.keepdims)


class ReduceSum(Reduction):
    """Σ over axes.  Gradient: g broadcast back over the reduced axes."""

    def compute(self, x):
        # np.sum's own bookkeeping costs a small array more than the sum
        if getattr(x, "dtype", None) in _SUMMED_AS_IS:
            return np.add.reduce(x, axis=self.axes, keepdims=self.keepdims)
        return np.sum(x, axis=self.axes, keepdims=self.keepdims)

    def infer_dtype(self, x):
        return np.zeros(1, x).sum().dtype  # numpy's rule: bools and small ints sum as the platform int


def reduce_sum(x, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes by default)."""
    return ReduceSum(x, axis, keepdims, name=name)


class ReduceMean(Reduction):
    """Mean over axes.  Gradient: g broadcast back, divided by the number of reduced elements."""

    def compute(self, x):
        # np.mean's own bookkeeping costs a small array several times the sum; empty slices are left to
        # np.mean, which warns about them
        if getattr(x, "dtype", None) in _SUMMED_AS_IS:
            count = math.prod(x.shape) if self.axes is None else math.prod(x.shape[a] for a in self.axes)
            if count:
                return np.add.reduce(x, axis=self.axes, keepdims=self.keepdims) / x.dtype.type(count)
        return np.mean(x, axis=self.axes, keepdims=self.keepdims)

    def infer_dtype(self, x):
        return x if np.issubdtype(x, np.floating) else np.dtype(np.float64)


def reduce_mean(x, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes by default)."""
    return ReduceMean(x, axis, keepdims, name=name)


class ReduceMax(Reduction):
    """Max over axes (of nothing: the dtype's lowest value, -inf for floats, as ONNX and TF).

    Gradient: g to the maximal elements, split evenly among ties (as TF).
    """

    def compute(self, x):
        if np.size(x) == 0:
            return np.max(x, axis=self.axes, keepdims=self.keepdims, initial=_lowest(np.asarray(x).dtype))
        return np.max(x, axis=self.axes, keepdims=self.keepdims)


def _lowest(dtype):
    """The smallest value of a dtype: -inf for floats, the minimum for ints, False for bools."""
    if dtype.kind == "f":
        return -np.inf
    return False if dtype.kind == "b" else np.iinfo(dtype).min


def reduce_max(x, axis=None, keepdims=False, name=None):
    """Maximum over `axis` (all axes by default)."""
    return ReduceMax(x, axis, keepdims, name=name)


class ExpandReduced(Operation):
    """g (the gradient of a reduction of x) broadcast back to x's shape; divided by the count if `mean`.

    Its own gradient is the matching reduction, so reductions and their
    gradients differentiate each other.
    """

    def __init__(self, grad, x, axes, keepdims, mean, name=None):
        self.axes, self.keepdims, self.mean = axes, keepdims, mean
        super().__init__(grad, x, name=name)

    def compute(self, grad, x):
        axes = range(x.ndim) if self.axes is None else self.axes
        grad = np.asarray(grad)
        if grad.ndim:  # g with size-1 reduced axes (a reshape: cheaper than expand_dims)
            grad = grad.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        if self.mean:  # scaled before it is broadcast
            grad = grad / max(math.prod(x.shape[a] for a in axes), 1)
        out = np.empty(x.shape, grad.dtype)
        out[...] = grad
        return out

    def infer_shape(self, grad_shape, x_shape):
        return x_shape

    def infer_dtype(self, grad, x):
        return grad


class MaxMask(Operation):
    """1/k where x equals its reduced maximum y (k = ties in that slice), else 0."""

    def __init__(self, x, y, axes, keepdims, name=None):
        self.axes, self.keepdims = axes, keepdims
        super().__init__(x, y, name=name)

    def compute(self, x, y):
        axes = tuple(range(x.ndim)) if self.axes is None else self.axes
        y = y if self.keepdims else np.expand_dims(y, axes)
        hits = (x == y).astype(x.dtype)
        return hits / hits.sum(axis=axes, keepdims=True)

    def infer_shape(self, x_shape, y_shape):
        return x_shape


not_differentiable(MaxMask)


@register_gradient(ReduceSum)
def _reduce_sum_grad(op, grad):
    return [ExpandReduced(grad, op.inputs[0], op.axes, op.keepdims, mean=False)]


@register_gradient(ReduceMean)
def _reduce_mean_grad(op, grad):
    return [ExpandReduced(grad, op.inputs[0], op.axes, op.keepdims, mean=True)]


@register_gradient(ReduceMax)
def _reduce_max_grad(op, grad):
    x = op.inputs[0]
    spread = ExpandReduced(grad, x, op.axes, op.keepdims, mean=False)
    return [spread * MaxMask(x, op, op.axes, op.keepdims)]


@register_gradient(ExpandReduced)
def _expand_reduced_grad(op, grad):
    reduce = ReduceMean if op.mean else ReduceSum
    return [reduce(grad, op.axes, op.keepdims), None]


class ArgMax(Operation):
    """Index of the maximum along `axis` (int64).  Not differentiable."""

    def __init__(self, x, axis=-1, name=None):
        self.axis = Arguments(self, name, x).axis("axis", axis, rank_of(x))
        super().__init__(x, name=name)

    def compute(self, x):
        return np.argmax(x, axis=self.axis)

    def infer_shape(self, x_shape):
        return None if x_shape is None else reduced_shape(x_shape, (self.axis,), keepdims=False)

    def infer_dtype(self, x):
        return np.dtype(np.int64)


def argmax(x, axis=-1, name=None):
    """Index of the largest entry along `axis`."""
    return ArgMax(x, axis, name=name)


not_differentiable(ArgMax)
