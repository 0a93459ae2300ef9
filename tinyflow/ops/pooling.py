"""Max and average pooling over 1, 2 or 3 spatial axes (N, C, *spatial), and global pooling.

Windows (kernel_size, stride, padding, dilation, ceil_mode) as in windows.py. Max pooling ignores padding (it never
wins); the gradient goes to each window's first maximum (PyTorch's), NaN counting as the largest (numpy's max). Average
pooling divides by the window's size, padding included or not (count_include_pad), never what ceil_mode reaches beyond.
"""
import math

import numpy as np

from ..arguments import Arguments
from ..errors import ShapeError
from ..shapes import shapes_compatible
from .elementwise_ops import extreme
from .reductions import ReduceMax, ReduceMean, reduce_max, reduce_mean
from .registry import not_differentiable, register_gradient
from .windows import WindowOperation, per_rank, scatter_windows, sliding_windows, span, spatial_rank


class PoolOperation(WindowOperation):
    """A pooling op: kernel_size, stride (defaults to kernel_size), padding, dilation and ceil_mode."""

    abstract = True

    def __init__(self, *inputs, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, name=None):
        check = Arguments(self, name, *inputs)
        rank = spatial_rank(check, "kernel_size", kernel_size, inputs[0])
        self.kernel = check.ints("kernel_size", kernel_size, rank, minimum=1)
        self._set_window(check, rank, self.kernel if stride is None else stride, padding, dilation)
        self.ceil_mode = check.flag("ceil_mode", ceil_mode)
        if not isinstance(self.padding, str):
            for pads, k, d in zip(self.padding, self.kernel, self.dilation):
                if max(pads) >= span(k, d):
                    check.fail("padding", padding, f"is as large as the window ({k} taps, dilation {d})",
                               "pad each side by less than the window spans (a window must see some input)")
        elif ceil_mode and self.padding != "valid":
            check.fail("ceil_mode", ceil_mode, f"does not go with padding={self.padding!r}",
                       "use explicit padding with ceil_mode")
        super().__init__(*inputs, name=name)

    def window(self):
        """The window's arguments, to build another pooling op on the same windows."""
        return dict(kernel_size=self.kernel, stride=self.stride, padding=self.padding, dilation=self.dilation,
                    ceil_mode=self.ceil_mode)

    def pooled_shape(self, x_shape):
        return x_shape[:2] + self.out_spatial(x_shape, self.kernel)

    infer_shape = pooled_shape  # (the gradient ops infer x's shape, and check g's against this one)

    def check_same_shape(self, shape, expected, what):
        """Raise ShapeError unless `shape` may equal `expected`."""
        if not shapes_compatible(shape, expected):
            raise ShapeError(f"{what} has shape {shape}, but this window needs {expected}")

    def first_maximum(self, x, index=None):
        """Of each window's first maximum, (N, C, *out): its entry in `index` (broadcasting to x's shape; by default
        its index in x.reshape(-1)), and whether the window has one."""
        def taps(windows):  # (N, C, *out, kernel taps)
            return windows.reshape(windows.shape[:2 + len(self.kernel)] + (-1,))
        values = taps(self.windows(x, self.kernel, fill=extreme(x.dtype, largest=False)))
        index = np.arange(x.size).reshape(x.shape) if index is None else index
        where = taps(self.windows(index, self.kernel, fill=-1))  # each tap's entry in index, -1 in the padding
        top = values.max(axis=-1, keepdims=True)
        is_top = values == top
        if x.dtype.kind == "f":
            is_top |= np.isnan(values) & np.isnan(top)
        is_top &= where >= 0  # padding never wins, even against -inf
        first = np.take_along_axis(where, is_top.argmax(axis=-1)[..., None], axis=-1)[..., 0]
        return np.maximum(first, 0), is_top.any(axis=-1)


class PoolGradient(PoolOperation):
    """A pooling gradient op of (x, g): its value has x's shape and g's dtype (g is the pooled shape)."""

    abstract = True
    dtype_of = 1

    def infer_shape(self, x_shape, grad_shape):
        self.check_same_shape(grad_shape, self.pooled_shape(x_shape), "the pooled gradient")
        return x_shape


# ------------------------------------------------------------ max pooling
class MaxPool(PoolOperation):
    """The maximum of each window (padding ignored).  Gradient: g to each window's first maximum (as PyTorch)."""

    def compute(self, x):
        windows = self.windows(x, self.kernel, fill=extreme(x.dtype, largest=False))
        return windows.max(axis=tuple(range(-len(self.kernel), 0)))


class MaxPoolGrad(PoolGradient):
    """Scatter g (pooled shape) onto x's grid at each window's first maximum (overlaps add up)."""

    def compute(self, x, grad):
        index, found = self.first_maximum(x)
        total = np.bincount(index[found], weights=grad[found], minlength=x.size)
        return total.astype(grad.dtype).reshape(x.shape)


class MaxPoolGather(PoolOperation):
    """Pick h (x's shape) at each window's first maximum: the adjoint of MaxPoolGrad."""

    dtype_of = 1

    def compute(self, x, h):
        index, found = self.first_maximum(x)
        return np.where(found, h.reshape(-1)[index], np.zeros((), h.dtype))

    def infer_shape(self, x_shape, h_shape):
        self.check_same_shape(h_shape, x_shape, "the gathered input")
        return self.pooled_shape(x_shape)


class MaxPoolIndices(PoolOperation):
    """Where each window's first maximum is, as int64: flat in its (N, C) plane (PyTorch's return_indices), or
    flat in the whole tensor (whole_tensor, ONNX's Indices), its spatial axes read in reverse order when
    storage_order=1 (ONNX's column-major)."""

    dtype_of = np.dtype(np.int64)

    def __init__(self, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, whole_tensor=False,
                 storage_order=0, name=None):
        check = Arguments(self, name, x)
        self.whole_tensor = check.flag("whole_tensor", whole_tensor)
        self.storage_order = check.integer("storage_order", storage_order, minimum=0)
        if self.storage_order > 1:
            check.fail("storage_order", storage_order, "is neither 0 nor 1", "pass 0 (row-major) or 1 (column-major)")
        super().__init__(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                         ceil_mode=ceil_mode, name=name)

    def compute(self, x):
        spatial = x.shape[2:]
        size = math.prod(spatial)
        plane = np.arange(size).reshape(spatial[::-1]).T if self.storage_order else np.arange(size).reshape(spatial)
        index = plane.reshape((1, 1) + spatial)
        if self.whole_tensor:
            index = index + size * np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * len(spatial))
        return self.first_maximum(x, index)[0].astype(np.int64)


not_differentiable(MaxPoolIndices)
register_gradient(MaxPool)(lambda op, grad: [MaxPoolGrad(op.inputs[0], grad, **op.window())])
register_gradient(MaxPoolGrad)(lambda op, grad: [None, MaxPoolGather(op.inputs[0], grad, **op.window())])
register_gradient(MaxPoolGather)(lambda op, grad: [None, MaxPoolGrad(op.inputs[0], grad, **op.window())])


# ------------------------------------------------------------ average pooling
class AvgPoolOperation(PoolOperation):
    """Shared by the average pooling ops: count_include_pad, and the divisor of each window."""

    abstract = True

    def __init__(self, *inputs, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 count_include_pad=True, name=None):
        self.count_include_pad = Arguments(self, name, *inputs).flag("count_include_pad", count_include_pad)
        super().__init__(*inputs, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                         ceil_mode=ceil_mode, name=name)

    def window(self):
        return dict(super().window(), count_include_pad=self.count_include_pad)

    def divisor(self, x_shape, dtype):
        """How many values each window averages, (1, 1, *out): its size, less what it reaches outside x (and its
        explicit padding when count_include_pad), never 0."""
        pads = self.pads(x_shape[2:], self.kernel)
        counted = np.ones((1, 1) + tuple(x_shape[2:]), dtype)
        if self.count_include_pad:
            counted = np.pad(counted, [(0, 0), (0, 0)] + list(pads), constant_values=1)
            pads = ((0, 0),) * len(pads)
        windows = sliding_windows(counted, self.kernel, self.stride, pads, self.dilation,
                                  self.out_spatial(x_shape, self.kernel))
        return np.maximum(windows.sum(axis=tuple(range(-len(self.kernel), 0))), 1)


class AvgPool(AvgPoolOperation):
    """The mean of each window: Σ window / divisor (see `divisor`).  Gradient: g/divisor to every tap of its window."""

    def compute(self, x):
        total = self.windows(x, self.kernel).sum(axis=tuple(range(-len(self.kernel), 0)))
        return (total / self.divisor(x.shape, x.dtype)).astype(x.dtype, copy=False)


class AvgPoolGrad(PoolGradient, AvgPoolOperation):
    """Spread g (pooled shape) evenly over each window, back on x's grid: the adjoint of AvgPool."""

    def compute(self, x, grad):
        share = grad / self.divisor(x.shape, grad.dtype)
        taps = np.broadcast_to(share.reshape(share.shape + (1,) * len(self.kernel)), share.shape + self.kernel)
        return scatter_windows(taps, x.shape, self.stride, self.pads(x.shape[2:], self.kernel), self.dilation)


register_gradient(AvgPool)(lambda op, grad: [AvgPoolGrad(op.inputs[0], grad, **op.window())])
register_gradient(AvgPoolGrad)(lambda op, grad: [None, AvgPool(grad, **op.window())])


# ------------------------------------------------------------ the public functions
def _max_pool(rank):
    def max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False,
                 name=None):
        kernel = Arguments(MaxPool, name, x).ints("kernel_size", kernel_size, rank, minimum=1)
        window = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
        y = MaxPool(x, **window, name=name)
        if not return_indices:
            return y
        return y, MaxPoolIndices(x, **window, name=None if name is None else name + "_indices")
    return max_pool


def _avg_pool(rank):
    def avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, dilation=1,
                 name=None):
        kernel = Arguments(AvgPool, name, x).ints("kernel_size", kernel_size, rank, minimum=1)
        return AvgPool(x, kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                       ceil_mode=ceil_mode, count_include_pad=count_include_pad, name=name)
    return avg_pool


max_pool1d, max_pool2d, max_pool3d = per_rank(
    _max_pool, "max_pool{rank}d", "{rank}-D max pooling of {layout} over kernel_size windows (stride defaults to "
    "kernel_size); with return_indices, also each maximum's flat index in its plane, as torch.")
avg_pool1d, avg_pool2d, avg_pool3d = per_rank(
    _avg_pool, "avg_pool{rank}d", "{rank}-D average pooling of {layout} over kernel_size windows (stride defaults to "
    "kernel_size); zero padding counted unless count_include_pad=False, as torch.")


def _spatial_axes(op_class, name, x):
    return tuple(range(2, 2 + spatial_rank(Arguments(op_class, name, x), "x", "(N, C, *spatial)", x)))


def global_avg_pool(x, name=None):
    """The mean over every spatial axis of (N, C, *spatial), kept as size-1 axes: (N, C, 1, ...)."""
    return reduce_mean(x, _spatial_axes(ReduceMean, name, x), keepdims=True, name=name)


def global_max_pool(x, name=None):
    """The maximum over every spatial axis of (N, C, *spatial), kept as size-1 axes: (N, C, 1, ...)."""
    return reduce_max(x, _spatial_axes(ReduceMax, name, x), keepdims=True, name=name)
