"""Normalization over trailing axes: the LayerNorm op, and layer, instance and group norm built on it.

LayerNorm normalizes each row of x viewed as (rows, cols), cols the product of the axes from `axis` on; the affine part
(γ, β) is an ordinary multiply and add (broadcasting gradients, fused by the optimiser). Instance norm is layer norm
over the spatial axes (axis 2) with a per-channel γ, β; group norm reshapes the channels into groups first.
"""
import math

import numpy as np

from ..arguments import Arguments, is_int, rank_of
from ..errors import ShapeError
from ..shapes import shapes_compatible
from .array_ops import ReshapeLike, identity, reshape
from .elementwise_ops import add, multiply, sqrt, square
from .reductions import reduce_mean
from .registry import register_gradient
from .softmax import AxisOperation


class NormOperation(AxisOperation):
    """An op over the axes from `axis` on, with a variance epsilon; its output has its first input's shape."""

    abstract = True

    def __init__(self, *inputs, axis=-1, eps=1e-5, name=None):
        self.eps = Arguments(self, name, *inputs).number("eps", eps, 0.0)
        super().__init__(*inputs, axis=axis, name=name)

    def axes(self, rank):
        """The normalized axes of an input of this rank."""
        return tuple(range(self.axis % rank, rank))

    def normalized(self, x):
        """(x - mean) and 1/√(var + ε) over the normalized axes (biased variance), both keeping x's rank."""
        if x.size == 0:  # nothing to normalize (and numpy warns about the mean of nothing)
            return x.copy(), np.ones_like(x)
        axes = self.axes(x.ndim)
        centered = x - x.mean(axis=axes, keepdims=True)
        variance = (centered * centered).mean(axis=axes, keepdims=True)
        return centered, 1 / np.sqrt(variance + np.asarray(self.eps, x.dtype))


class LayerNorm(NormOperation):
    """x̂ = (x - μ) / √(σ² + ε), μ and σ² the mean and biased variance over the axes from `axis` on.
    Gradient: (g - mean(g) - x̂ · mean(g x̂)) / √(σ² + ε) (LayerNormGrad), means over the same axes."""

    def compute(self, x):
        centered, inv_std = self.normalized(x)
        return centered * inv_std


class LayerNormGrad(NormOperation):
    """dL/dx of LayerNorm for an output gradient g: r (g - ⟨g⟩ - x̂ ⟨g x̂⟩), r = 1/√(σ² + ε), ⟨·⟩ the row means."""

    dtype_of = 1

    def compute(self, x, grad):
        if x.size == 0:
            return np.zeros_like(grad)
        centered, inv_std = self.normalized(x)
        x_hat = centered * inv_std
        axes = self.axes(x.ndim)
        return inv_std * (grad - grad.mean(axis=axes, keepdims=True)
                          - x_hat * (grad * x_hat).mean(axis=axes, keepdims=True))


register_gradient(LayerNorm)(lambda op, grad: [LayerNormGrad(op.inputs[0], grad, axis=op.axis, eps=op.eps)])


@register_gradient(LayerNormGrad)
def _layer_norm_grad_grad(op, grad):
    # L = Σ h·dx = r n (⟨h g⟩ - ⟨g⟩⟨h⟩ - ⟨g x̂⟩⟨h x̂⟩). In g it is linear (and symmetric): dL/dg = LayerNormGrad(x, h).
    # In x, through r (dr/dx = -r² x̂ / n) and x̂ (whose backward is LayerNormGrad itself):
    #   dL/dx = -r² (⟨h g⟩ - ⟨g⟩⟨h⟩ - ⟨g x̂⟩⟨h x̂⟩) x̂ + LayerNormGrad(x, -r (⟨h x̂⟩ g + ⟨g x̂⟩ h))
    x, g = op.inputs
    h, axis, eps = grad, op.axis, op.eps
    axes = op.axes(len(x.shape))

    def mean(v):
        return reduce_mean(v, axes, keepdims=True)
    x_hat = LayerNorm(x, axis=axis, eps=eps)
    inv_std = 1.0 / sqrt(mean(square(x - mean(x))) + eps)
    g_x_hat, h_x_hat = mean(g * x_hat), mean(h * x_hat)
    spread = mean(h * g) - mean(g) * mean(h) - g_x_hat * h_x_hat
    through_x_hat = LayerNormGrad(x, -inv_std * (h_x_hat * g + g_x_hat * h), axis=axis, eps=eps)
    return [through_x_hat - square(inv_std) * spread * x_hat, LayerNormGrad(x, h, axis=axis, eps=eps)]


# ------------------------------------------------------------ the public functions
def affine(y, weight=None, bias=None, shape=None, name=None):
    """y · γ + β (either may be None), γ and β reshaped to `shape` when given; the last op gets `name`."""
    if weight is not None:
        y = multiply(y, weight if shape is None else reshape(weight, shape), name=None if bias is not None else name)
    if bias is not None:
        y = add(y, bias if shape is None else reshape(bias, shape), name=name)
    return y if name is None or weight is not None or bias is not None else identity(y, name=name)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, name=None):
    """Layer normalization over the trailing axes `normalized_shape`, then · weight + bias (of that shape), as torch."""
    check = Arguments(LayerNorm, name, x)
    trailing = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list, np.ndarray)) else \
        (normalized_shape,)
    if not trailing or not all(is_int(d) and d >= 1 for d in trailing):
        check.fail("normalized_shape", normalized_shape, "is not a size or a tuple of sizes >= 1",
                   "pass the sizes of the trailing axes to normalize, e.g. x.shape[-1:]")
    shape = x.shape
    if shape is not None and not shapes_compatible(shape[len(shape) - len(trailing):], trailing):
        raise ShapeError(f"layer_norm: normalized_shape {trailing} is not the trailing shape of the input {shape}; "
                         "pass the sizes of the input's last axes")
    return affine(LayerNorm(x, axis=-len(trailing), eps=eps, name=name), weight, bias)


def _channels(function, name, x):
    rank = rank_of(x)
    if rank is not None and rank < 3:
        Arguments(LayerNorm, name, x).fail("x", f"an input of rank {rank}", f"has no spatial axes for {function}",
                                           "pass (N, C, *spatial) inputs")
    return (1, -1) + (1,) * ((rank or 3) - 2)


def instance_norm(x, weight=None, bias=None, eps=1e-5, name=None):
    """Instance normalization: each (sample, channel) over its spatial axes, then a per-channel γ, β, as torch."""
    shape = _channels("instance_norm", name, x)
    return affine(LayerNorm(x, axis=2, eps=eps, name=name), weight, bias, shape)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, name=None):
    """Group normalization: the channels of each sample in `num_groups` groups, each normalized over its channels and
    spatial axes, then a per-channel γ, β, as torch."""
    shape = _channels("group_norm", name, x)
    check = Arguments(LayerNorm, name, x)
    groups = check.integer("num_groups", num_groups, minimum=1)
    channels = x.shape[1] if x.shape is not None else None
    if channels is not None and channels % groups:
        check.fail("num_groups", num_groups, f"does not divide the {channels} channels", "pick a divisor of C")
    # x (N, C, *spatial) as (N, groups, C/groups · spatial), whatever N is
    if x.shape is not None and x.shape[0] is not None:
        grouped = reshape(x, (x.shape[0], groups, -1))
    elif x.shape is None or None in x.shape[1:]:
        raise ShapeError(f"group_norm needs the channel and spatial sizes of its input, got shape {x.shape}")
    else:
        grouped = reshape(x, (-1, groups, math.prod(x.shape[1:]) // groups))
    return affine(ReshapeLike(LayerNorm(grouped, axis=2, eps=eps), x, name=name), weight, bias, shape)
