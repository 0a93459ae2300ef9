"""Reductions over axes (sum, mean, max, min, prod, logsumexp; any, all, var, std and norm built of them), argmax,
argmin, cumsum and cumprod. Empty reductions give ONNX's and numpy's identities: a sum 0, a product 1, a max -inf (the
dtype's lowest for integers), a min +inf, a logsumexp -inf."""
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..nodes import Operation, as_node
from ..shapes import reduced_shape
from .broadcasting import ShapedLike
from .elementwise_ops import Cast, Exp, Sqrt, Square, divide, equal, extreme, logical_and, maximum, where
from .registry import not_differentiable, op_function, register_gradient
from .runtime_shapes import Size


# dtypes np.add.reduce sums in their own precision, as np.sum and np.mean do (they promote the others first)
_SUMMED_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))


def reduced_axes(check, axis, x):
    """The sorted axes `axis` names (None: all); on a rank-0 x, axis 0 and -1 name none (as torch's dim)."""
    rank = rank_of(x)
    axes = check.axes("axis", axis, 1 if rank == 0 else rank)
    return () if rank == 0 else axes


class Reduction(Operation):
    """Base of reductions over `axis` (None: all, an int or a tuple), keeping size-1 axes if `keepdims`."""

    abstract = True

    def __init__(self, x, axis=None, keepdims=False, name=None):
        check = Arguments(self, name, x)
        self.axis, self.keepdims = axis, check.flag("keepdims", keepdims)
        self.axes = reduced_axes(check, axis, x)
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


class ReduceMean(Reduction):
    """Mean over axes.  Gradient: g broadcast back, divided by the number of reduced elements."""

    def compute(self, x):
        # np.mean's bookkeeping costs a small array several times the sum; empty slices go to np.mean (it warns)
        if getattr(x, "dtype", None) in _SUMMED_AS_IS:
            count = math.prod(x.shape) if self.axes is None else math.prod(x.shape[a] for a in self.axes)
            if count:
                return np.add.reduce(x, axis=self.axes, keepdims=self.keepdims) / x.dtype.type(count)
        return np.mean(x, axis=self.axes, keepdims=self.keepdims)

    def infer_dtype(self, x):
        return x if np.issubdtype(x, np.floating) else np.dtype(np.float64)


class ReduceMax(Reduction):
    """Max over axes.  Gradient: g to the maximal elements, split evenly among ties (as TF)."""

    pick = staticmethod(np.max)

    def compute(self, x):  # np.max refuses empty slices: they start from its identity
        empty = {"initial": extreme(x.dtype, type(self).pick is np.min)} if x.size == 0 else {}
        return type(self).pick(x, axis=self.axes, keepdims=self.keepdims, **empty)


class ReduceMin(ReduceMax):
    """Min over axes.  Gradient: g to the minimal elements, split evenly among ties."""

    pick = staticmethod(np.min)


class ExpandReduced(ShapedLike):
    """g (of a reduction of x) broadcast back to x's shape, divided by the count if `mean`.  Gradient: the reduction."""

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


class MaxMask(Operation):
    """1/k where x equals its reduced extreme y (max or min; k = ties in that slice), else 0."""

    shape_of = 0

    def __init__(self, x, y, axes, keepdims, name=None):
        self.axes, self.keepdims = axes, keepdims
        super().__init__(x, y, name=name)

    def compute(self, x, y):
        axes = tuple(range(x.ndim)) if self.axes is None else self.axes
        y = y if self.keepdims else np.expand_dims(y, axes)
        hits = (x == y).astype(x.dtype)
        return hits / hits.sum(axis=axes, keepdims=True)


def spread(op, value, mean=False):
    """`value` (shaped as reduction op's output) broadcast back over the reduced axes of op's input."""
    return ExpandReduced(value, op.inputs[0], op.axes, op.keepdims, mean)


not_differentiable(MaxMask)
register_gradient(ReduceSum)(lambda op, grad: [spread(op, grad)])
register_gradient(ReduceMean)(lambda op, grad: [spread(op, grad, mean=True)])
register_gradient(ExpandReduced)(lambda op, grad: [(ReduceMean if op.mean else ReduceSum)(grad, op.axes, op.keepdims),
                                                   None])


@register_gradient(ReduceMax)
@register_gradient(ReduceMin)
def _extreme_grad(op, grad):
    return [spread(op, grad) * MaxMask(op.inputs[0], op, op.axes, op.keepdims)]


class ReduceProd(Reduction):
    """Product over axes.  Gradient: g times the product of the other elements of each slice."""

    def compute(self, x):
        return np.prod(x, axis=self.axes, keepdims=self.keepdims)


class ProdOfOthers(Operation):
    """Each element's product of the other elements of its slice over `axes` (exact with zeros).  Gradient: through
    y / x (exact where x has no zero), h -> P (Σ h / x - h / x) per slice."""

    def __init__(self, x, axes=None, name=None):
        self.axes = axes
        super().__init__(x, name=name)

    def compute(self, x):
        axes = tuple(range(x.ndim)) if self.axes is None else self.axes
        kept = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape(moved.shape[:len(kept)] + (math.prod(moved.shape[len(kept):]),))
        ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
        before = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        after = np.flip(np.cumprod(np.concatenate([ones, np.flip(flat, -1)[..., :-1]], axis=-1), axis=-1), -1)
        return np.transpose((before * after).reshape(moved.shape), np.argsort(kept + list(axes)))


register_gradient(ReduceProd)(lambda op, grad: [spread(op, grad) * ProdOfOthers(op.inputs[0], op.axes)])


@register_gradient(ProdOfOthers)
def _prod_of_others_grad(op, grad):
    x = op.inputs[0]
    ratio = grad / x
    return [op * (ExpandReduced(ReduceSum(ratio, op.axes, keepdims=True), x, op.axes, True, mean=False) - ratio)]


class ReduceLogSumExp(Reduction):
    """log Σ exp(x) over axes, computed as m + log Σ exp(x - m) with m the max.  Gradient: g exp(x - y)."""

    def compute(self, x):
        axes = self.axes
        if x.dtype.kind != "f":
            x = x.astype(np.float64)
        top = np.max(x, axis=axes, keepdims=True, **({"initial": -np.inf} if x.size == 0 else {}))
        top = np.where(np.isfinite(top), top, 0).astype(x.dtype, copy=False)  # all -inf (or inf): no shift
        with np.errstate(divide="ignore"):  # an empty or all -inf slice: log 0 = -inf, the answer
            out = np.log(np.sum(np.exp(x - top), axis=axes, keepdims=True)) + top
        return out if self.keepdims else np.squeeze(out, axis=axes)

    infer_dtype = ReduceMean.infer_dtype


register_gradient(ReduceLogSumExp)(lambda op, grad: [spread(op, grad) * Exp(op.inputs[0] - spread(op, op))])

reduce_sum = op_function(ReduceSum, "reduce_sum", "Sum over `axis` (all axes by default).")
reduce_mean = op_function(ReduceMean, "reduce_mean", "Mean over `axis` (all axes by default).")
reduce_max = op_function(ReduceMax, "reduce_max", "Maximum over `axis` (all axes by default).")
reduce_min = op_function(ReduceMin, "reduce_min", "Minimum over `axis` (all axes by default).")
reduce_prod = op_function(ReduceProd, "reduce_prod", "Product over `axis` (all axes by default).")
reduce_logsumexp = op_function(ReduceLogSumExp, "reduce_logsumexp")


def reduce_any(x, axis=None, keepdims=False, name=None):
    """Whether any element over `axis` is non-zero (all axes by default): tfl.any, for a tensor `if`."""
    return ReduceMax(Cast(x, bool), axis, keepdims, name=name)


def reduce_all(x, axis=None, keepdims=False, name=None):
    """Whether every element over `axis` is non-zero (all axes by default): tfl.all."""
    return ReduceMin(Cast(x, bool), axis, keepdims, name=name)


def var(x, axis=None, correction=1, keepdims=False, name=None):
    """The variance over `axis` (all axes by default): Σ (x - mean)² / (n - correction), as torch.var."""
    x = as_node(x)
    check = Arguments(ReduceSum, name, x)
    correction = check.number("correction", correction)
    squares = ReduceSum(Square(x - ReduceMean(x, axis, keepdims=True)), axis, keepdims)
    sizes = [None] if x.shape is None else [x.shape[a] for a in reduced_axes(check, axis, x)]
    if None in sizes:  # the count is known when the graph runs
        return divide(squares, maximum(Size(x) / Size(squares) - correction, 0.0), name=name)
    return divide(squares, max(math.prod(sizes) - correction, 0), name=name)


def std(x, axis=None, correction=1, keepdims=False, name=None):
    """The standard deviation over `axis` (all axes by default): √var, as torch.std."""
    return Sqrt(var(x, axis, correction, keepdims), name=name)


def norm(x, axis=None, keepdims=False, name=None):
    """The Euclidean (L2) norm over `axis`, √Σ x² (all axes by default; np.linalg.norm of a vector)."""
    return Sqrt(ReduceSum(Square(x), axis, keepdims), name=name)


class ArgExtreme(Operation):
    """Base of argmax / argmin: the index along `axis` (of the flattened x when None), int64."""

    abstract = True
    pick = None  # np.argmax or np.argmin
    dtype_of = np.dtype(np.int64)

    def __init__(self, x, axis=None, keepdims=False, select_last_index=False, name=None):
        check = Arguments(self, name, x)
        rank = rank_of(x)
        self.axis = None if axis is None else check.axis("axis", axis, 1 if rank == 0 else rank)
        self.axis = None if rank == 0 else self.axis  # a scalar's argmax along axis 0 or -1 is 0, as torch's
        self.keepdims = check.flag("keepdims", keepdims)
        self.select_last_index = check.flag("select_last_index", select_last_index)
        if keepdims and axis is None and rank is None:
            check.fail("keepdims", keepdims, "needs an input of known rank", "give the input node a shape")
        super().__init__(x, name=name)

    def compute(self, x):
        pick = type(self).pick
        if not self.select_last_index:
            return np.asarray(pick(x, axis=self.axis, keepdims=self.keepdims), dtype=np.int64)
        count = x.size if self.axis is None else x.shape[self.axis]  # the first of ties counted from the end
        return np.asarray(count - 1 - pick(np.flip(x, self.axis), axis=self.axis, keepdims=self.keepdims), np.int64)

    def infer_shape(self, x_shape):
        if x_shape is None:
            return None if self.keepdims else ()
        axes = range(len(x_shape)) if self.axis is None else (self.axis,)
        return reduced_shape(x_shape, axes, self.keepdims)


class ArgMax(ArgExtreme):
    """Index of the maximum along `axis` (the first of ties, the last with select_last_index).  Not differentiable."""

    pick = staticmethod(np.argmax)


class ArgMin(ArgExtreme):
    """Index of the minimum along `axis` (the first of ties, the last with select_last_index).  Not differentiable."""

    pick = staticmethod(np.argmin)


argmax = op_function(ArgMax, "argmax")
argmin = op_function(ArgMin, "argmin")
not_differentiable(ArgMax, ArgMin)


class CumSum(Operation):
    """Running sums along `axis`, from its end if `reverse` (ONNX CumSum).  Gradient: g's running sums the other way."""

    scan = staticmethod(np.cumsum)

    def __init__(self, x, axis, reverse=False, name=None):
        check = Arguments(self, name, x)
        rank = rank_of(x)
        self.axis = check.axis("axis", axis, None if rank is None else max(rank, 1))  # a scalar as one value
        self.reverse = check.flag("reverse", reverse)
        super().__init__(x, name=name)

    def compute(self, x):
        flip = (lambda v: np.flip(v, self.axis)) if self.reverse else (lambda v: v)
        return flip(type(self).scan(flip(np.atleast_1d(x)), axis=self.axis)).reshape(x.shape)

    def infer_dtype(self, x):
        return type(self).scan(np.ones(1, x)).dtype  # numpy's (and torch's) rule: small ints sum as int64


class CumProd(CumSum):
    """Running products along `axis` (torch.cumprod).  Gradient exact where x has zeros, as torch's."""

    scan = staticmethod(np.cumprod)


cumsum = op_function(CumSum, "cumsum", "The running sums of x along `axis` (torch.cumsum, np.cumsum).")
cumprod = op_function(CumProd, "cumprod", "The running products of x along `axis` (torch.cumprod, np.cumprod).")
register_gradient(CumSum)(lambda op, grad: [CumSum(grad, op.axis, not op.reverse)])


@register_gradient(CumProd)
def _cumprod_grad(op, grad):
    # d y_j / d x_i = Π_{k <= j, k != i} x_k for j >= i: Σ_{j >= i} g_j y_j / x_i where x_i != 0; at the first zero,
    # the running products of x with that zero taken as 1; after it, 0 (each product holds the zero)
    x, axis, reverse = op.inputs[0], op.axis, op.reverse
    zero = equal(x, 0)
    first_zero = logical_and(zero, equal(CumSum(zero, axis, reverse), 1))
    at_first_zero = CumSum(grad * CumProd(where(first_zero, 1, x), axis, reverse), axis, not reverse)
    elsewhere = CumSum(grad * op, axis, not reverse) / where(zero, 1, x)
    return [where(zero, where(first_zero, at_first_zero, 0), elsewhere)]
