"""Convolution over 1, 2 or 3 spatial axes (N, C, *spatial), with strides, dilations, padding and groups.

A convolution is im2col (the windows of x as rows, windows.py) then one matrix product per group with the filters. Its
backward ops are graph nodes too; convolution is bilinear in (input, filter), so their gradients are the same three ops:
  conv(x, w) -> y;  dx = conv_back_input(g, w);  dw = conv_back_filter(x, g).
A transposed convolution is conv_back_input with its output size given by its arguments.
"""
import numpy as np

from ..arguments import PADDING_MODES, Arguments, rank_of
from ..errors import ShapeError
from ..shapes import dims_compatible, shapes_compatible
from .array_ops import reshape
from .registry import register_gradient
from .windows import WindowOperation, columns, per_rank, scatter_windows, span, spatial_rank


# ------------------------------------------------------------ the numpy backend's kernels
def _per_group(rows, groups):
    """(M, G·n) rows as (G, M, n): the columns of each group on their own."""
    return rows.reshape(rows.shape[0], groups, -1).transpose(1, 0, 2)


def filter_rows(cols, w, groups):
    """im2col rows (M, C·K) times the filters w (O, C/G, *kernel), group by group: (M, O)."""
    filters = w.reshape(groups, w.shape[0] // groups, -1)                           # (G, O/G, C/G·K)
    product = np.matmul(_per_group(cols, groups), filters.transpose(0, 2, 1))     # (G, M, O/G)
    return product.transpose(1, 0, 2).reshape(len(cols), -1)


def rows_through_filters(rows, w, groups):
    """The adjoint of filter_rows: output-gradient rows (M, O) back to im2col rows (M, C·K)."""
    filters = w.reshape(groups, w.shape[0] // groups, -1)
    return np.matmul(_per_group(rows, groups), filters).transpose(1, 0, 2).reshape(len(rows), -1)


def filter_gradient(rows, cols, w_shape, groups):
    """dL/dw from output-gradient rows (M, O) and im2col rows (M, C·K), group by group."""
    return np.matmul(_per_group(rows, groups).transpose(0, 2, 1), _per_group(cols, groups)).reshape(w_shape)


def channels_last_rows(y):
    """(N, O, *spatial) as (N·P, O) rows."""
    return np.moveaxis(y, 1, -1).reshape(-1, y.shape[1])


def conv_adjoint(g, w, x_shape, stride, pads, dilation, groups):
    """g (N, O, *out) back through the filters onto x_shape: conv's input gradient, conv_transpose's value."""
    rank = g.ndim - 2
    cols = rows_through_filters(channels_last_rows(g), w, groups)       # (N·P, C·K)
    taps = cols.reshape((g.shape[0],) + g.shape[2:] + (x_shape[1],) + w.shape[2:])
    order = (0, rank + 1) + tuple(range(1, rank + 1)) + tuple(range(rank + 2, 2 * rank + 2))
    return scatter_windows(taps.transpose(order), x_shape, stride, pads, dilation)


# ------------------------------------------------------------ convolution
class ConvOperation(WindowOperation):
    """Shared by the convolution ops: the window from the filter's rank, groups, and the shape checks."""

    abstract = True

    def _set_conv(self, check, x, w, stride, padding, dilation, groups, modes=PADDING_MODES):
        self._set_window(check, spatial_rank(check, "stride", None, w, x), stride, padding, dilation, modes)
        self.groups = check.integer("groups", groups, minimum=1)

    def window(self):
        """The window's arguments, to build the ops of the gradient on the same windows."""
        return dict(stride=self.stride, padding=self.padding, dilation=self.dilation, groups=self.groups)

    def check_filter(self, x_shape, w_shape, transposed=False):
        """The output channels, raising ShapeError unless w is (C_out, C_in / groups, *kernel) (transposed:
        (C_in, C_out / groups, *kernel)) with known kernel sizes, for an input x."""
        rank, g = len(self.stride), self.groups
        layout = "(C_in, C_out / groups, *kernel)" if transposed else "(C_out, C_in / groups, *kernel)"
        in_channels = None if x_shape is None or len(x_shape) < 2 else x_shape[1]
        if w_shape is None or len(w_shape) != rank + 2 or any(k is None or k < 1 for k in w_shape[2:]):
            raise ShapeError(f"needs a filter of shape {layout} with {rank} known kernel sizes >= 1, got {w_shape}")
        if transposed and not dims_compatible(in_channels, w_shape[0]):
            raise ShapeError(f"the input has {in_channels} channels but the filter {layout} has {w_shape[0]} "
                             f"(shape {w_shape})")
        if not transposed and in_channels is not None and in_channels % g:
            raise ShapeError(f"{in_channels} input channels do not split into groups={g}")
        if not transposed and not dims_compatible(None if in_channels is None else in_channels // g, w_shape[1]):
            raise ShapeError(f"the input has {in_channels} channels, so with groups={g} the filter "
                             f"{layout} needs {in_channels // g} at axis 1, got filter shape {w_shape}")
        if w_shape[0] is not None and w_shape[0] % g:
            raise ShapeError(f"{w_shape[0]} {'input' if transposed else 'output'} channels (filter {w_shape}) do not "
                             f"split into groups={g}")
        return (None if w_shape[1] is None else w_shape[1] * g) if transposed else w_shape[0]

    def check_output_gradient(self, x_shape, w_shape, grad_shape):
        """Raise ShapeError unless grad may have the shape of the convolution of x by w."""
        expected = (x_shape[0], self.check_filter(x_shape, w_shape)) + self.out_spatial(x_shape, w_shape[2:])
        if not shapes_compatible(expected, grad_shape):
            raise ShapeError(f"the output gradient has shape {grad_shape}, but the convolution of an input "
                             f"{x_shape} by a filter {w_shape} has shape {expected}")


class Conv(ConvOperation):
    """y[n, o, p] = Σ_c,t x[n, g(o)·C/G + c, s·p + d·t - before] · w[o, c, t], zero padding, G groups (output channel o
    sees only the input channels of its group g(o)); x (N, C, *spatial), w (O, C/G, *kernel).
    Gradient: (conv_back_input(g, w), conv_back_filter(x, g))."""

    def __init__(self, x, w, stride=1, padding=0, dilation=1, groups=1, name=None):
        self._set_conv(Arguments(self, name, x, w), x, w, stride, padding, dilation, groups)
        super().__init__(x, w, name=name)

    def compute(self, x, w):
        out = self.out_spatial(x.shape, w.shape[2:])
        rows = filter_rows(columns(self.windows(x, w.shape[2:], out)), w, self.groups)  # (N·P, O)
        return np.ascontiguousarray(np.moveaxis(rows.reshape((x.shape[0],) + out + (-1,)), -1, 1))

    def infer_shape(self, x_shape, w_shape):
        return (x_shape[0], self.check_filter(x_shape, w_shape)) + self.out_spatial(x_shape, w_shape[2:])


class ConvBackInput(ConvOperation):
    """dL/dx of conv: the gradient scattered back through the filters onto x's grid (x gives the shape)."""

    dtype_of = 0

    def __init__(self, grad, w, x, stride, padding, dilation=1, groups=1, name=None):
        self._set_conv(Arguments(self, name, grad, w, x), x, w, stride, padding, dilation, groups)
        super().__init__(grad, w, x, name=name)

    def compute(self, grad, w, x):
        return conv_adjoint(grad, w, x.shape, self.stride, self.pads(x.shape[2:], w.shape[2:]), self.dilation,
                            self.groups)

    def infer_shape(self, grad_shape, w_shape, x_shape):
        self.check_output_gradient(x_shape, w_shape, grad_shape)
        return x_shape


class ConvBackFilter(ConvOperation):
    """dL/dw of conv: each filter tap correlated with the gradient over the batch, group by group."""

    dtype_of = 1

    def __init__(self, x, grad, w, stride, padding, dilation=1, groups=1, name=None):
        self._set_conv(Arguments(self, name, x, grad, w), x, w, stride, padding, dilation, groups)
        super().__init__(x, grad, w, name=name)

    def compute(self, x, grad, w):
        windows = self.windows(x, w.shape[2:], grad.shape[2:])
        return filter_gradient(channels_last_rows(grad), columns(windows), w.shape, self.groups)

    def infer_shape(self, x_shape, grad_shape, w_shape):
        self.check_output_gradient(x_shape, w_shape, grad_shape)
        return w_shape


@register_gradient(Conv)
def _conv_grad(op, grad):
    x, w = op.inputs
    return [ConvBackInput(grad, w, x, **op.window()), ConvBackFilter(x, grad, w, **op.window())]


@register_gradient(ConvBackInput)
def _conv_back_input_grad(op, grad):
    g, w, x = op.inputs
    return [Conv(grad, w, **op.window()), ConvBackFilter(grad, g, w, **op.window()), None]


@register_gradient(ConvBackFilter)
def _conv_back_filter_grad(op, grad):
    x, g, w = op.inputs
    return [ConvBackInput(g, grad, x, **op.window()), Conv(x, grad, **op.window()), None]


# ------------------------------------------------------------ transposed convolution
class ConvTranspose(ConvOperation):
    """The adjoint of conv (a "deconvolution"): each input value spreads w over an s-strided output grid;
    x (N, C, *spatial), w (C, O/G, *kernel), y (N, O, *out), out = s·(n - 1) + d·(k - 1) + 1 + output_padding - pads.
    Gradient: (conv(g, w), conv_back_filter(g, x)), with the same stride, padding, dilation and groups."""

    def __init__(self, x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1, name=None):
        check = Arguments(self, name, x, w)
        self._set_conv(check, x, w, stride, padding, dilation, groups, modes=("valid",))
        self.output_padding = check.ints("output_padding", output_padding, len(self.stride), minimum=0)
        if any(p >= s for p, s in zip(self.output_padding, self.stride)):
            check.fail("output_padding", output_padding, f"is not below the stride {self.stride}",
                       "pad the output by less than the stride on each axis (it only picks among the sizes "
                       "a strided convolution maps to one input size)")
        super().__init__(x, w, name=name)

    def out_spatial(self, x_shape, kernel):
        spatial = self.spatial(x_shape, len(kernel))
        out = tuple(None if n is None else s * (n - 1) + span(k, d) + extra - before - after
                    for n, k, s, d, extra, (before, after) in
                    zip(spatial, kernel, self.stride, self.dilation, self.output_padding, self.pads(spatial, kernel)))
        if any(o is not None and o < 1 for o in out):
            raise ShapeError(f"padding {self.padding} crops away the whole output of input "
                             f"{x_shape}; pad less")
        return out

    def compute(self, x, w):
        out = self.out_spatial(x.shape, w.shape[2:])
        y_shape = (x.shape[0], w.shape[1] * self.groups) + out
        return conv_adjoint(x, w, y_shape, self.stride, self.pads(out, w.shape[2:]), self.dilation, self.groups)

    def infer_shape(self, x_shape, w_shape):
        channels = self.check_filter(x_shape, w_shape, transposed=True)
        return (x_shape[0], channels) + self.out_spatial(x_shape, w_shape[2:])


@register_gradient(ConvTranspose)
def _conv_transpose_grad(op, grad):
    x, w = op.inputs
    return [Conv(grad, w, **op.window()), ConvBackFilter(grad, x, w, **op.window())]


# ------------------------------------------------------------ the public functions
def _filtered(op_class, function, rank, x, w, bias, name, *window):
    """op_class(x, w, *window), plus a bias per channel, once w has the rank of `function`'s filters."""
    known = rank_of(w)
    if known is not None and known != rank + 2:
        Arguments(op_class, name, x, w).fail(
            "w", f"a filter of rank {known}", f"does not fit {function}, whose filters have rank {rank + 2}",
            f"pass a filter with {rank} kernel sizes after its two channel axes")
    y = op_class(x, w, *window, name=name)
    return y if bias is None else y + reshape(bias, (1, -1) + (1,) * rank)


def _conv(rank):
    def conv(x, w, stride=1, padding=0, dilation=1, groups=1, bias=None, name=None):
        return _filtered(Conv, f"conv{rank}d", rank, x, w, bias, name, stride, padding, dilation, groups)
    return conv


def _conv_transpose(rank):
    def conv_transpose(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1, bias=None, name=None):
        return _filtered(ConvTranspose, f"conv_transpose{rank}d", rank, x, w, bias, name, stride, padding,
                         output_padding, dilation, groups)
    return conv_transpose


conv1d, conv2d, conv3d = per_rank(
    _conv, "conv{rank}d", "{rank}-D convolution (cross-correlation, as in every framework): x {layout}, w (C_out, "
    "C_in / groups, *kernel); padding an int, per-axis ints or pairs, 'valid' or 'same'.")
conv_transpose1d, conv_transpose2d, conv_transpose3d = per_rank(
    _conv_transpose, "conv_transpose{rank}d", "{rank}-D transposed convolution of {layout} (the gradient of "
    "conv{rank}d with respect to its input, as torch's): w (C_in, C_out / groups, *kernel).")
