"""Windows sliding over the spatial axes of (N, C, *spatial) tensors: the geometry shared by convolution and pooling.

A window has, per spatial axis, a kernel size k, a stride s, a dilation d (taps d apart, so it spans d·(k-1)+1 values)
and zero padding (before, after). Its output length is

    out = ⌊(n + before + after - d·(k-1) - 1) / s⌋ + 1        (⌈·⌉ with ceil_mode, as PyTorch and ONNX:
                                                                 a last window starting in the padding is dropped)

Padding may also be a mode resolved from the input size: 'valid' (none) or 'same_upper' / 'same_lower' (out = ⌈n / s⌉,
the odd pad after / before). These are the one formulas: shape inference, the numpy kernels and the C and OpenCL
geometry (backends/kernel_codes.py) all call them.
"""
import numpy as np

from ..arguments import PADDING_MODES, rank_of
from ..errors import ShapeError
from ..nodes import Operation


def span(kernel, dilation):
    """How many input values a window of `kernel` taps, `dilation` apart, covers."""
    return dilation * (kernel - 1) + 1


def resolve_padding(padding, spatial, kernel, stride, dilation):
    """((before, after), ...) for these spatial sizes: pads as given, modes resolved (None: size unknown)."""
    if not isinstance(padding, str):
        return padding
    if padding == "valid":
        return ((0, 0),) * len(kernel)
    if any(n is None for n in spatial):
        return None
    totals = [max(0, (-(-n // s) - 1) * s + span(k, d) - n)  # out = ⌈n / s⌉
              for n, k, s, d in zip(spatial, kernel, stride, dilation)]
    return tuple((t // 2, t - t // 2) if padding == "same_upper" else (t - t // 2, t // 2) for t in totals)


def window_output_size(size, kernel, stride=1, pads=(0, 0), dilation=1, ceil_mode=False):
    """Output length of a window sliding over `size` values (None stays unknown); see the module docstring."""
    if size is None or pads is None:
        return None
    room = size + pads[0] + pads[1] - span(kernel, dilation)
    if room < 0:
        return 0
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pads[0]:
        out -= 1  # the last window would start in the padding
    return out


def sliding_windows(x, kernel, stride, pads, dilation, out, fill=0):
    """All windows of x (padded with `fill`): an (N, C, *out, *kernel) view of a padded copy (or of x itself)."""
    widths = [(0, 0), (0, 0)]
    for n, k, s, (before, _), d, o in zip(x.shape[2:], kernel, stride, pads, dilation, out):
        widths.append((before, max(0, (o - 1) * s + span(k, d) - n - before)))
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=fill)
    rank = len(kernel)
    view = np.lib.stride_tricks.sliding_window_view(
        x, [span(k, d) for k, d in zip(kernel, dilation)], axis=tuple(range(2, 2 + rank)))
    index = (slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride)) + \
        tuple(slice(None, None, d) for d in dilation)
    return view[index]


def columns(windows):
    """(N·P, C·K) rows of window values (P output positions, K taps) from an (N, C, *out, *kernel) view: im2col."""
    rank = (windows.ndim - 2) // 2
    n, c = windows.shape[:2]
    order = (0,) + tuple(range(2, 2 + rank)) + (1,) + tuple(range(2 + rank, 2 + 2 * rank))
    return windows.transpose(order).reshape(n * int(np.prod(windows.shape[2:2 + rank])), -1)


def scatter_windows(taps, shape, stride, pads, dilation):
    """The adjoint of sliding_windows: taps (N, C, *out, *kernel) added back onto an x of `shape`, padding dropped."""
    rank = len(stride)
    out, kernel = taps.shape[2:2 + rank], taps.shape[2 + rank:]
    padded_sizes = [max(n + before, (o - 1) * s + span(k, d)) for n, (before, _), o, s, k, d in
                    zip(shape[2:], pads, out, stride, kernel, dilation)]
    padded = np.zeros(tuple(shape[:2]) + tuple(padded_sizes), dtype=taps.dtype)
    for tap in np.ndindex(*kernel):
        where = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, out, stride))
        padded[(slice(None), slice(None)) + where] += taps[(Ellipsis,) + tap]
    crop = tuple(slice(before, before + n) for n, (before, _) in zip(shape[2:], pads))
    return np.ascontiguousarray(padded[(slice(None), slice(None)) + crop])


def spatial_rank(check, argument, value, *inputs):
    """The number of spatial axes: the length of a sequence `value`, else the first known input rank - 2."""
    if isinstance(value, (tuple, list)):
        return len(value)
    for x in inputs:
        rank = rank_of(x)
        if rank is not None:
            if rank < 3:
                check.fail(argument, value, f"needs an input with spatial axes, got rank {rank}",
                           "pass (N, C, *spatial) inputs, e.g. NCHW")
            return rank - 2
    check.fail(argument, value, "cannot tell the number of spatial axes (input of unknown rank)",
               "give the input a shape, or pass one size per spatial axis")


def per_rank(make, name, doc):
    """The functions make(1), make(2) and make(3), named `name` and documented `doc` ({rank} and {layout} filled in)."""
    made = []
    for rank, layout in zip((1, 2, 3), ("NCL", "NCHW", "NCDHW")):
        function = make(rank)
        function.__name__ = function.__qualname__ = name.format(rank=rank)
        function.__doc__ = doc.format(rank=rank, layout=layout)
        made.append(function)
    return made


class WindowOperation(Operation):
    """Shared by conv and pooling ops: stride, padding and dilation, checked when built, and the output size rule."""

    abstract = True
    ceil_mode = False

    def _set_window(self, check, rank, stride, padding, dilation, modes=PADDING_MODES):
        self.stride = check.ints("stride", stride, rank, minimum=1)
        self.padding = check.padding("padding", padding, rank, modes)
        self.dilation = check.ints("dilation", dilation, rank, minimum=1)

    def pads(self, spatial, kernel):
        """((before, after), ...) of this op's padding for inputs of these spatial sizes (None if unknown)."""
        return resolve_padding(self.padding, spatial, kernel, self.stride, self.dilation)

    def windows(self, x, kernel, out=None, fill=0):
        """x's windows (padded with `fill`): an (N, C, *out, *kernel) view; `out` defaults to this op's output size."""
        out = self.out_spatial(x.shape, kernel) if out is None else out
        return sliding_windows(x, kernel, self.stride, self.pads(x.shape[2:], kernel), self.dilation, out, fill)

    @staticmethod
    def spatial(x_shape, rank):
        """The spatial sizes of x_shape, raising ShapeError unless it is (N, C, *spatial) with `rank` spatial axes."""
        if x_shape is None or len(x_shape) != rank + 2:
            raise ShapeError(f"needs an input of rank {rank + 2} (N, C and {rank} spatial axes), got shape {x_shape}")
        return x_shape[2:]

    def out_spatial(self, x_shape, kernel):
        """Output spatial sizes for an (N, C, *spatial) input shape, raising ShapeError when the window does not fit."""
        rank = len(kernel)
        spatial = self.spatial(x_shape, rank)
        pads = self.pads(spatial, kernel)
        out = tuple(window_output_size(n, k, s, p, d, self.ceil_mode) for n, k, s, p, d in
                    zip(spatial, kernel, self.stride, pads or [None] * rank, self.dilation))
        if any(o is not None and o < 1 for o in out):
            raise ShapeError(f"a window of {tuple(kernel)} taps (dilation {self.dilation}) does not fit the input "
                             f"{x_shape} with padding {self.padding}; use a smaller kernel or more padding")
        return out

