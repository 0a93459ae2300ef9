"""Layer, group and instance normalization layers (tfl.layer_norm, group_norm, instance_norm with their parameters)."""
import math

from ..ops.normalization import group_norm, instance_norm, layer_norm
from .layer import Layer


class LayerNorm(Layer):
    """Normalizes the trailing axes `normalized_shape`, then · weight + bias of that shape, as torch.nn.LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        size = math.prod(self.normalized_shape)
        self.weight = self.add_variable("weight", self.normalized_shape, "ones", size, size) \
            if elementwise_affine else None
        self.bias = self.add_variable("bias", self.normalized_shape, "zeros", size, size) \
            if elementwise_affine and bias else None

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(Layer):
    """Normalizes `num_groups` groups of channels of each sample, then a per-channel γ, β, as torch.nn.GroupNorm."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, name=None, dtype="float32"):
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups={num_groups} does not divide num_channels={num_channels}")
        super().__init__(name, dtype)
        self.num_groups, self.eps = num_groups, eps
        self.weight = self.add_variable("weight", (num_channels,), "ones") if affine else None
        self.bias = self.add_variable("bias", (num_channels,), "zeros") if affine else None

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(Layer):
    """Normalizes each (sample, channel) over its spatial axes, then (affine) a per-channel γ, β, as
    torch.nn.InstanceNormNd (no running statistics)."""

    rank = None

    def __init__(self, num_features, eps=1e-5, affine=False, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self.eps = eps
        self.weight = self.add_variable("weight", (num_features,), "ones") if affine else None
        self.bias = self.add_variable("bias", (num_features,), "zeros") if affine else None

    def forward(self, x):
        if x.shape is None or len(x.shape) != self.rank:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self.rank}, got shape {x.shape}")
        return instance_norm(x, self.weight, self.bias, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) inputs."""

    rank = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) inputs."""

    rank = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) inputs."""

    rank = 5
