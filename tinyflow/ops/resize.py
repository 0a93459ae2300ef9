"""Resizing (interpolation) along any axes: nearest, linear and cubic, as ONNX's Resize (opset 19) and its reference.

Resizing is separable and linear: along each resized axis the output is M · x for an (out × in) interpolation matrix M
whose rows hold one output position's taps, so the gradient applies the transposes in reverse order (ResizeGrad),
whatever the mode. An output position maps back to an input coordinate (coordinate_transformation_mode, s = out/in):
  half_pixel (x + ½)/s - ½   pytorch_half_pixel (the same, -½ for a single output)   asymmetric x/s
  align_corners x·(in-1)/(out-1)   half_pixel_symmetric (half_pixel, centred when out is rounded)
  tf_crop_and_resize (within a region of interest; outside it, extrapolation_value)
and taps come from its clamped neighbours: the nearest (nearest_mode rounds halves), two (linear) or four (cubic,
coefficient a); antialias widens the taps by 1/s when shrinking.
"""
import functools
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..nodes import Node, Operation, is_eager
from ..shapes import shapes_compatible
from .broadcasting import ShapedLike
from .registry import register_gradient
from .array_ops import known_entries
from .windows import spatial_rank

# Resize's options after sizes and scales, with their defaults (saved graphs read them as the op's attributes)
OPTIONS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
           "cubic_coeff_a": -0.75, "exclude_outside": False, "antialias": False, "roi": None,
           "extrapolation_value": 0.0, "keep_aspect_ratio_policy": "stretch"}
CHOICES = {"mode": ("nearest", "linear", "cubic"),
           "coordinate_transformation_mode": ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                              "tf_crop_and_resize", "half_pixel_symmetric"),
           "nearest_mode": ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"),
           "keep_aspect_ratio_policy": ("stretch", "not_larger", "not_smaller")}


# ------------------------------------------------------------ the taps of the output positions
def _nearest(ratios, mode):
    """Weights of the pixel before and after each position `ratios` past a pixel: 1 for the nearest."""
    right = {"round_prefer_floor": ratios > 0.5, "round_prefer_ceil": ratios >= 0.5,
             "floor": np.zeros(ratios.shape, bool), "ceil": np.ones(ratios.shape, bool)}[mode]
    right |= ratios == 1  # an integer coordinate: the pixel itself (ONNX counts it as ratio 1 of the left one)
    return np.stack([~right, right], axis=1).astype(np.float64)


def _cubic_weight(t, a):
    """Keys' cubic convolution kernel with coefficient a."""
    t = np.abs(t)
    return np.where(t <= 1, (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1,
                    np.where(t < 2, a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a, 0.0))


def _filter(ratios, scale, weight, support, antialias):
    """weight(distance) of the taps around each position `ratios` past a pixel, out to `support` pixels; when
    antialias shrinks (scale < 1), the filter widens by 1/scale and its weights are normalised to sum to 1."""
    scale = min(scale, 1.0) if antialias else 1.0
    start = int(np.floor(-support / scale) + 1)
    coeffs = weight(scale * (np.arange(start, 2 - start) - ratios[:, None]))
    return coeffs / coeffs.sum(axis=1, keepdims=True) if antialias else coeffs


def _source_coordinates(mode, size, out, scale, roi):
    """Where each output position lies in input coordinates, and which fall outside a crop region."""
    y = np.arange(out, dtype=np.float64)
    width = scale * size
    outside = None
    if mode == "align_corners":
        x = np.zeros(out) if width == 1 else y * (size - 1) / (width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        x = np.full(out, (end - start) * (size - 1) / 2) if width == 1 else y * (end - start) * (size - 1) / (width - 1)
        x = x + start * (size - 1)
        outside = (x < 0) | (x > size - 1)
    elif mode == "pytorch_half_pixel":
        x = np.full(out, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif mode == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        x = size / 2 * (1 - out / width) + (y + 0.5) / scale - 0.5
    return x, outside


@functools.lru_cache(maxsize=256)
def interpolation_matrix(size, out, scale, mode, coordinates, nearest_mode, cubic_coeff_a, exclude_outside,
                         antialias, roi):
    """The (out × in) matrix resizing one axis of length `size` to `out`, and the rows (a boolean array, or None)
    that fall outside a tf_crop_and_resize region and take the extrapolation value instead."""
    x, outside = _source_coordinates(coordinates, size, out, scale, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    if mode == "nearest":
        coeffs = _nearest(ratios, nearest_mode)
    elif mode == "linear":
        coeffs = _filter(ratios, scale, lambda t: np.maximum(0.0, 1 - np.abs(t)), 1, antialias)
    else:
        coeffs = _filter(ratios, scale, functools.partial(_cubic_weight, a=cubic_coeff_a), 2, antialias)
    n = coeffs.shape[1]
    # the n neighbours nearest to x (ties to the smaller index), as ONNX's reference finds them
    pad = math.ceil(n / 2)
    base = np.floor(x + pad)
    past = (x + pad - base != 0) if n % 2 == 0 else (x + pad - base > 0.5)  # the first neighbour one further on
    neighbours = (base + past - n // 2 - pad).astype(np.int64)[:, None] + np.arange(n)
    if exclude_outside:
        coeffs = np.where((neighbours < 0) | (neighbours >= size), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    matrix = np.zeros((out, size))
    rows = np.repeat(np.arange(out), n)
    np.add.at(matrix, (rows, np.clip(neighbours, 0, size - 1).reshape(-1)), coeffs.reshape(-1))
    if outside is not None:
        matrix[outside] = 0.0
        if not outside.any():
            outside = None
    return matrix, outside


def _along(matrix, x, axis):
    """matrix (out × in) applied to axis `axis` of x."""
    return np.moveaxis(np.tensordot(matrix, x, axes=([1], [axis])), 0, axis)


# ------------------------------------------------------------ the ops
def _per_axis(check, argument, value, rank):
    """The entries of `value`, one per axis."""
    items = list(value) if isinstance(value, (tuple, list, np.ndarray)) else None
    if items is None or len(items) != rank:
        check.fail(argument, value, f"has no entry for each of the {rank} axes", f"pass {rank} entries")
    return items


class ResizeOperation(Operation):
    """Shared by Resize and ResizeGrad: the arguments, checked when built, and each axis's output size and matrix."""

    abstract = True
    attributes = OPTIONS  # the keyword options (**options), as the elementwise ops' attributes

    def __init__(self, *inputs, sizes=None, scales=None, name=None, **options):
        """Op(*inputs, sizes=... or scales=..., **options): the inputs (the last is x), checked when built."""
        check, rank, size_node = Arguments(self, name, *inputs), rank_of(inputs[-1]), sizes
        if (sizes is None) == (scales is None):
            check.fail("sizes", sizes, "and scales are both given or both missing", "pass one of them")
        if rank is None:
            check.fail("sizes" if scales is None else "scales", sizes if scales is None else scales,
                       "needs an input of known rank", "give the input a shape")
        for option, value in options.items():
            if option not in OPTIONS:
                check.fail(option, value, "is not an option of Resize", f"pass sizes, scales, {', '.join(OPTIONS)}")
        options = dict(OPTIONS, **options)
        for option, choices in CHOICES.items():
            if not isinstance(options[option], str) or options[option] not in choices:
                check.fail(option, options[option], "is not one of the choices", f"pick one of {', '.join(choices)}")
            setattr(self, option, options[option])
        # sizes may be an int vector (a graph node or an eager Tensor) read at run time, the op's last input
        self.dynamic = isinstance(sizes, Node) or is_eager(sizes)
        self.size_entries = None  # its entries as far as they are known when built
        if self.dynamic:
            if not shapes_compatible(sizes.shape, (rank,)) or np.dtype(sizes.dtype).kind not in "iu":
                check.fail("sizes", sizes, f"is not an int vector of {rank} sizes (shape {sizes.shape}, {sizes.dtype})",
                           f"pass {rank} sizes, one per axis")
            self.size_entries = known_entries(sizes) or [None] * rank
            sizes = None
        self.sizes = None if sizes is None else tuple(  # None keeps an axis's size
            None if n is None else check.integer("sizes", n, minimum=0)
            for n in _per_axis(check, "sizes", sizes, rank))
        self.scales = None if scales is None else tuple(
            check.number("scales", s, 0.0) for s in _per_axis(check, "scales", scales, rank))
        self.cubic_coeff_a = check.number("cubic_coeff_a", options["cubic_coeff_a"])
        self.extrapolation_value = check.number("extrapolation_value", options["extrapolation_value"])
        self.exclude_outside = check.flag("exclude_outside", options["exclude_outside"])
        self.antialias = check.flag("antialias", options["antialias"])
        if self.antialias and self.mode == "nearest":
            check.fail("antialias", self.antialias, "does not go with mode 'nearest'", "use mode 'linear' or 'cubic'")
        if self.keep_aspect_ratio_policy != "stretch" and self.sizes is None and not self.dynamic:
            check.fail("keep_aspect_ratio_policy", self.keep_aspect_ratio_policy, "needs sizes",
                       "pass sizes, not scales")
        self.roi = None
        if self.coordinate_transformation_mode == "tf_crop_and_resize":
            regions = _per_axis(check, "roi", options["roi"], rank)
            if not all(isinstance(r, (tuple, list)) and len(r) == 2 for r in regions):
                check.fail("roi", options["roi"], "holds an entry that is not a (start, end) pair",
                           "pass one (start, end) pair per axis")
            self.roi = tuple((check.number("roi", start), check.number("roi", end)) for start, end in regions)
        super().__init__(*inputs, *([size_node] if self.dynamic else []), name=name)

    def resized(self, shape, sizes=None):
        """[(axis, in size, out size, scale)] of the axes that change (input shape; `sizes`: at run time)."""
        if self.scales is not None:
            plan = [(a, n, int(np.floor(n * s)), s) for a, (n, s) in enumerate(zip(shape, self.scales))]
        else:
            wanted = self.sizes if sizes is None else [int(t) for t in sizes]
            targets = [n if t is None else t for n, t in zip(shape, wanted)]
            scales = [t / n if n else 1.0 for n, t in zip(shape, targets)]
            if self.keep_aspect_ratio_policy != "stretch":
                chosen = [s for s, t in zip(scales, wanted) if t is not None]
                scale = min(chosen) if self.keep_aspect_ratio_policy == "not_larger" else max(chosen)
                scales = [1.0 if t is None else scale for t in wanted]
                targets = [n if t is None else int(scale * n + 0.5) for n, t in zip(shape, wanted)]
            plan = list(zip(range(len(shape)), shape, targets, scales))
        return [(a, n, o, s) for a, n, o, s in plan
                if not (o == n and math.isclose(s, 1.0) and (self.roi is None or self.roi[a] == (0.0, 1.0)))]

    def matrix(self, axis, size, out, scale):
        return interpolation_matrix(size, out, float(scale), self.mode, self.coordinate_transformation_mode,
                                    self.nearest_mode, self.cubic_coeff_a, self.exclude_outside, self.antialias,
                                    None if self.roi is None else self.roi[axis])

    def arguments(self):
        """The resize's arguments, to build its gradient ops (sizes: the tuple, or the sizes vector node)."""
        return dict(sizes=self.inputs[-1] if self.dynamic else self.sizes, scales=self.scales,
                    **{option: getattr(self, option) for option in OPTIONS})


class Resize(ResizeOperation):
    """x resized to `sizes` (None keeps an axis; or an int vector node read at run time) or by `scales`
    (out = ⌊in·scale⌋), one interpolation matrix M per resized axis (see the module docstring): y = M_k ⋯ M_1 x.
    Gradient: M_1ᵀ ⋯ M_kᵀ g (ResizeGrad)."""

    dtype_of = 0

    def __init__(self, x, sizes=None, scales=None, name=None, **options):  # saved graphs rebuild it by these names
        super().__init__(x, sizes=sizes, scales=scales, name=name, **options)

    def compute(self, x, *sizes):
        y = x.astype(np.float64)
        for axis, size, out, scale in self.resized(x.shape, *sizes):
            matrix, outside = self.matrix(axis, size, out, scale)
            y = _along(matrix, y, axis)
            if outside is not None:
                y[(slice(None),) * axis + (outside,)] = self.extrapolation_value
        if x.dtype.kind in "iu":
            y = np.clip(np.rint(y), np.iinfo(x.dtype).min, np.iinfo(x.dtype).max)
        return y.astype(x.dtype)

    def infer_shape(self, shape, *sizes_shape):
        """The output shape for an input shape (None dims stay unknown where they matter)."""
        if self.dynamic:
            return (None,) * len(shape) if self.keep_aspect_ratio_policy != "stretch" else tuple(self.size_entries)
        if None not in shape:
            out = list(shape)
            for a, _, o, _ in self.resized(shape):
                out[a] = o
            return tuple(out)
        if self.scales is not None:
            return tuple(None if n is None else int(np.floor(n * s)) for n, s in zip(shape, self.scales))
        stretch = self.keep_aspect_ratio_policy == "stretch"
        return tuple(n if t is None else t if stretch else None for n, t in zip(shape, self.sizes))


class ResizeGrad(ResizeOperation, ShapedLike):
    """dL/dx of Resize: the gradient (the resized shape) taken back through each axis's matrix transposed."""

    def __init__(self, grad, x, sizes=None, scales=None, name=None, **options):
        super().__init__(grad, x, sizes=sizes, scales=scales, name=name, **options)

    def compute(self, grad, x, *sizes):
        g = grad.astype(np.float64)
        for axis, size, out, scale in reversed(self.resized(x.shape, *sizes)):
            g = _along(self.matrix(axis, size, out, scale)[0].T, g, axis)  # extrapolated rows are zero in M
        return g.astype(grad.dtype)


register_gradient(Resize)(lambda op, grad: [ResizeGrad(grad, op.inputs[0], **op.arguments())] + [None] * op.dynamic)
# ResizeGrad is linear in g: its adjoint is Resize without the constant crop mode writes outside the region
register_gradient(ResizeGrad)(lambda op, grad: [Resize(grad, **dict(op.arguments(), extrapolation_value=0.0)),
                                                None] + [None] * op.dynamic)


# ------------------------------------------------------------ the public function
# torch's modes: (Resize's mode, coordinate_transformation_mode, nearest_mode, spatial axes needed, 0 for any)
_TORCH_MODES = {"nearest": ("nearest", "asymmetric", "floor", 0),
                "nearest-exact": ("nearest", "half_pixel", "round_prefer_ceil", 0),
                "linear": ("linear", "half_pixel", "round_prefer_floor", 1),
                "bilinear": ("linear", "half_pixel", "round_prefer_floor", 2),
                "trilinear": ("linear", "half_pixel", "round_prefer_floor", 3),
                "bicubic": ("cubic", "half_pixel", "round_prefer_floor", 2)}


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None, name=None):
    """Resize the spatial axes of (N, C, *spatial) as torch.nn.functional.interpolate (a mode of _TORCH_MODES); size
    or scale_factor: one number or one per spatial axis. (The Resize op also has ONNX's antialias, not torch's.)"""
    check = Arguments(Resize, name, x)
    if not isinstance(mode, str) or mode not in _TORCH_MODES:
        check.fail("mode", mode, "is not an interpolation mode", f"pick one of {', '.join(_TORCH_MODES)}")
    kind, coordinates, nearest, needed = _TORCH_MODES[mode]
    rank = spatial_rank(check, "x", "(N, C, *spatial)", x)
    if needed and needed != rank:
        check.fail("mode", mode, f"does not fit an input with {rank} spatial axes",
                   "use linear for 1, bilinear or bicubic for 2, trilinear for 3")
    if align_corners and kind == "nearest":
        check.fail("align_corners", align_corners, f"does not go with mode {mode!r}", "leave it None")
    if (size is None) == (scale_factor is None):
        check.fail("size", size, "and scale_factor are both given or both missing", "pass one of them")

    def per_axis(value, kept):  # the two leading axes `kept`, then one entry per spatial axis
        return None if value is None else kept + (list(value) if isinstance(value, (tuple, list)) else [value] * rank)
    return Resize(x, sizes=per_axis(size, [None, None]), scales=per_axis(scale_factor, [1.0, 1.0]), mode=kind,
                  coordinate_transformation_mode="align_corners" if align_corners else coordinates,
                  nearest_mode=nearest, name=name)
