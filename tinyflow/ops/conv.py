"""2-D convolution, max and average pooling on NCHW tensors, by sliding windows (the numpy im2col).

Each forward op has backward ops that are graph nodes too; their gradients are
written with the same ops, since convolution is bilinear in (input, filter):
  conv(x, w) -> y;  dx = conv_back_input(g, w);  dw = conv_back_filter(x, g).
"""
import numpy as np

from ..arguments import Arguments
from ..errors import ShapeError
from ..nodes import Operation
from ..shapes import dims_compatible
from .registry import register_gradient


def window_output_size(size, kernel, stride, pad):
    """Output length of a window sliding over `size` (None stays unknown): the one formula, also used by the
    C and OpenCL backends (tinyflow/backends/kernel_codes.py)."""
    return None if size is None else (size + 2 * pad - kernel) // stride + 1


def _windows(x, kernel, stride, padding, fill=0.0):
    """All kernel-sized windows of x (padded): an (N, C, Ho, Wo, kH, kW) view, no copy."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    if ph or pw:
        x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    view = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    return view[:, :, ::sh, ::sw]


class WindowOperation(Operation):
    """Shared by conv and pooling ops: stride and padding (checked when built), and the output size rule."""

    abstract = True

    def _set_window(self, check, stride, padding):
        self.stride = check.pair("stride", stride, minimum=1)
        self.padding = check.pair("padding", padding, minimum=0)

    def _spatial_out(self, x_shape, kernel):
        """(Ho, Wo) for an NCHW input shape, raising ShapeError when the window does not fit."""
        if x_shape is None or len(x_shape) != 4:
            raise ShapeError(f"{self.op_type} needs an NCHW input of rank 4, got shape {x_shape}")
        out = tuple(window_output_size(size, k, s, p) for size, k, s, p in
                    zip(x_shape[2:], kernel, self.stride, self.padding))
        if any(o is not None and o < 1 for o in out):
            raise ShapeError(f"kernel {tuple(kernel)} does not fit input {x_shape} with padding {self.padding}; "
                             "use a smaller kernel or more padding")
        return out

    def _pad_crop(self, padded):
        (ph, pw) = self.padding
        return padded[:, :, ph:padded.shape[2] - ph, pw:padded.shape[3] - pw]


# ------------------------------------------------------------ convolution
class Conv2D(WindowOperation):
    """y[n,o] = Σ_c,i,j x[n,c,s·h+i,s·w+j] w[o,c,i,j]: x (N,C,H,W), w (O,C,kH,kW), zero padding.

    Gradient: (conv2d_back_input(g, w), conv2d_back_filter(x, g)).
    """

    def __init__(self, x, w, stride=1, padding=0, name=None):
        self._set_window(Arguments(self, name, x, w), stride, padding)
        super().__init__(x, w, name=name)

    def compute(self, x, w):
        windows = _windows(x, w.shape[2:], self.stride, self.padding)
        out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, Ho, Wo, O)
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2))

    def infer_shape(self, x_shape, w_shape):
        if w_shape is None or len(w_shape) != 4 or None in w_shape[2:] or 0 in w_shape[2:]:
            raise ShapeError(f"conv2d needs a filter of shape (C_out, C_in, kH, kW) with known kH, kW >= 1, "
                             f"got {w_shape}")
        ho, wo = self._spatial_out(x_shape, w_shape[2:])
        if not dims_compatible(x_shape[1], w_shape[1]):
            raise ShapeError(f"conv2d input has {x_shape[1]} channels (shape {x_shape}, NCHW) but the filter "
                             f"expects {w_shape[1]} (shape {w_shape}, (C_out, C_in, kH, kW))")
        return (x_shape[0], w_shape[0], ho, wo)


def conv2d(x, w, stride=1, padding=0, name=None):
    """2-D convolution (cross-correlation, as in every framework): x NCHW, w (C_out, C_in, kH, kW)."""
    return Conv2D(x, w, stride, padding, name=name)


class Conv2DBackInput(WindowOperation):
    """dL/dx of conv2d: the filter-weighted gradient scattered back onto x's (padded) grid."""

    def __init__(self, grad, w, x, stride, padding, name=None):
        self._set_window(Arguments(self, name, grad, w, x), stride, padding)
        super().__init__(grad, w, x, name=name)

    def compute(self, grad, w, x):
        (kh, kw), (sh, sw), (ph, pw) = w.shape[2:], self.stride, self.padding
        n, c, h, wid = x.shape
        padded = np.zeros((n, c, h + 2 * ph, wid + 2 * pw), dtype=grad.dtype)
        ho, wo = grad.shape[2:]
        for i in range(kh):
            for j in range(kw):
                contribution = np.tensordot(grad, w[:, :, i, j], axes=([1], [0]))  # (N, Ho, Wo, C)
                padded[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] += \
                    contribution.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(self._pad_crop(padded))

    def infer_shape(self, grad_shape, w_shape, x_shape):
        return x_shape

    def infer_dtype(self, grad, w, x):
        return grad


class Conv2DBackFilter(WindowOperation):
    """dL/dw of conv2d: each filter tap correlated with the gradient over the batch."""

    def __init__(self, x, grad, w, stride, padding, name=None):
        self._set_window(Arguments(self, name, x, grad, w), stride, padding)
        super().__init__(x, grad, w, name=name)

    def compute(self, x, grad, w):
        windows = _windows(x, w.shape[2:], self.stride, self.padding)
        return np.tensordot(grad, windows, axes=([0, 2, 3], [0, 2, 3]))  # (O, C, kH, kW)

    def infer_shape(self, x_shape, grad_shape, w_shape):
        return w_shape

    def infer_dtype(self, x, grad, w):
        return grad


@register_gradient(Conv2D)
def _conv2d_grad(op, grad):
    x, w = op.inputs
    return [Conv2DBackInput(grad, w, x, op.stride, op.padding),
            Conv2DBackFilter(x, grad, w, op.stride, op.padding)]


@register_gradient(Conv2DBackInput)
def _conv2d_back_input_grad(op, grad):
    g, w, x = op.inputs
    return [Conv2D(grad, w, op.stride, op.padding), Conv2DBackFilter(grad, g, w, op.stride, op.padding), None]


@register_gradient(Conv2DBackFilter)
def _conv2d_back_filter_grad(op, grad):
    x, g, w = op.inputs
    return [Conv2DBackInput(g, grad, x, op.stride, op.padding), Conv2D(x, grad, op.stride, op.padding), None]


# ------------------------------------------------------------ max pooling
class PoolOperation(WindowOperation):
    """A pooling op: kernel_size, stride (defaults to kernel_size) and padding."""

    abstract = True

    def __init__(self, *inputs, kernel_size, stride=None, padding=0, name=None):
        check = Arguments(self, name, *inputs)
        self.kernel = check.pair("kernel_size", kernel_size, minimum=1)
        self._set_window(check, self.kernel if stride is None else stride, padding)
        if any(p > k // 2 for p, k in zip(self.padding, self.kernel)):
            check.fail("padding", padding, f"is more than half the kernel size {self.kernel}",
                       "pad at most kernel_size // 2 on each side (a window must see some input)")
        super().__init__(*inputs, name=name)

    def _argmax_positions(self, x):
        """Row and column (in padded coordinates) of the first maximum of every window."""
        windows = _windows(x, self.kernel, self.stride, self.padding, fill=-np.inf)
        n, c, ho, wo, kh, kw = windows.shape
        flat = windows.reshape(n, c, ho, wo, kh * kw).argmax(axis=-1)
        rows = flat // kw + (np.arange(ho) * self.stride[0])[:, None]
        cols = flat % kw + (np.arange(wo) * self.stride[1])[None, :]
        return rows, cols

    def _index(self, x):
        n, c = x.shape[:2]
        rows, cols = self._argmax_positions(x)
        return (np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None], rows, cols)

    def _padded_zeros(self, x, dtype):
        (ph, pw) = self.padding
        n, c, h, w = x.shape
        return np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=dtype)


class MaxPool2D(PoolOperation):
    """The maximum of each window.  Gradient: g to the first maximum of each window (as PyTorch)."""

    def __init__(self, x, kernel_size, stride=None, padding=0, name=None):
        super().__init__(x, kernel_size=kernel_size, stride=stride, padding=padding, name=name)

    def compute(self, x):
        return _windows(x, self.kernel, self.stride, self.padding, fill=-np.inf).max(axis=(4, 5))

    def infer_shape(self, x_shape):
        spatial = self._spatial_out(x_shape, self.kernel)
        return x_shape[:2] + spatial


def max_pool2d(x, kernel_size, stride=None, padding=0, name=None):
    """Max pooling over kernel_size windows (stride defaults to kernel_size), NCHW."""
    return MaxPool2D(x, kernel_size, stride, padding, name=name)


class MaxPool2DGrad(PoolOperation):
    """Scatter g (pooled shape) onto x's grid at each window's first maximum (overlaps add up)."""

    def compute(self, x, grad):
        out = self._padded_zeros(x, grad.dtype)
        np.add.at(out, self._index(x), grad)
        return np.ascontiguousarray(self._pad_crop(out))

    def infer_shape(self, x_shape, grad_shape):
        return x_shape

    def infer_dtype(self, x, grad):
        return grad


class MaxPool2DGather(PoolOperation):
    """Pick h (x's shape) at each window's first maximum: the adjoint of MaxPool2DGrad."""

    def compute(self, x, h):
        (ph, pw) = self.padding
        padded = np.pad(h, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else h
        return padded[self._index(x)]

    def infer_shape(self, x_shape, h_shape):
        spatial = self._spatial_out(x_shape, self.kernel)
        return x_shape[:2] + spatial

    def infer_dtype(self, x, h):
        return h


def _same_window(op):
    return dict(kernel_size=op.kernel, stride=op.stride, padding=op.padding)


@register_gradient(MaxPool2D)
def _max_pool_grad(op, grad):
    return [MaxPool2DGrad(op.inputs[0], grad, **_same_window(op))]


@register_gradient(MaxPool2DGrad)
def _max_pool_grad_grad(op, grad):
    return [None, MaxPool2DGather(op.inputs[0], grad, **_same_window(op))]


@register_gradient(MaxPool2DGather)
def _max_pool_gather_grad(op, grad):
    return [None, MaxPool2DGrad(op.inputs[0], grad, **_same_window(op))]


# ------------------------------------------------------------ average pooling
class AvgPool2D(PoolOperation):
    """The mean of each window, zero padding counted (PyTorch's default).  Gradient: g/(kH·kW) to every tap."""

    def __init__(self, x, kernel_size, stride=None, padding=0, name=None):
        super().__init__(x, kernel_size=kernel_size, stride=stride, padding=padding, name=name)

    def compute(self, x):
        return _windows(x, self.kernel, self.stride, self.padding).mean(axis=(4, 5))

    def infer_shape(self, x_shape):
        spatial = self._spatial_out(x_shape, self.kernel)
        return x_shape[:2] + spatial


def avg_pool2d(x, kernel_size, stride=None, padding=0, name=None):
    """Average pooling over kernel_size windows (stride defaults to kernel_size), NCHW."""
    return AvgPool2D(x, kernel_size, stride, padding, name=name)


class AvgPool2DGrad(PoolOperation):
    """Spread g (pooled shape) evenly over each window, back on x's grid: the adjoint of AvgPool2D."""

    def compute(self, x, grad):
        (kh, kw), (sh, sw) = self.kernel, self.stride
        out = self._padded_zeros(x, grad.dtype)
        ho, wo = grad.shape[2:]
        share = grad / (kh * kw)
        for i in range(kh):
            for j in range(kw):
                out[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] += share
        return np.ascontiguousarray(self._pad_crop(out))

    def infer_shape(self, x_shape, grad_shape):
        return x_shape

    def infer_dtype(self, x, grad):
        return grad


@register_gradient(AvgPool2D)
def _avg_pool_grad(op, grad):
    return [AvgPool2DGrad(op.inputs[0], grad, **_same_window(op))]


@register_gradient(AvgPool2DGrad)
def _avg_pool_grad_grad(op, grad):
    return [None, AvgPool2D(grad, **_same_window(op))]
