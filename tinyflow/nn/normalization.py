"""Layer, group and instance normalization layers (tfl.layer_norm, group_norm, instance_norm with their parameters)."""
from ..ops.normalization import group_norm, instance_norm, layer_norm
from .layer import Layer, ranked


class LayerNorm(Layer):
    """Normalizes the trailing axes `normalized_shape`, then · weight + bias of that shape, as torch.nn.LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.weight, self.bias = self.add_affine(self.normalized_shape, elementwise_affine, bias)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(Layer):
    """Normalizes `num_groups` groups of channels of each sample, then a per-channel γ, β, as torch.nn.GroupNorm."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, name=None, dtype="float32"):
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups={num_groups} does not divide num_channels={num_channels}")
        super().__init__(name, dtype)
        self.num_groups, self.eps = num_groups, eps
        self.weight, self.bias = self.add_affine((num_channels,), affine)

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(Layer):
    """Normalizes each (sample, channel) over its spatial axes, then (affine) a per-channel γ, β, as
    torch.nn.InstanceNormNd (no running statistics)."""

    def __init__(self, num_features, eps=1e-5, affine=False, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self.eps = eps
        self.weight, self.bias = self.add_affine((num_features,), affine)

    def forward(self, x):
        self.check_rank(x)
        return instance_norm(x, self.weight, self.bias, self.eps)


InstanceNorm1d, InstanceNorm2d, InstanceNorm3d = ranked(_InstanceNorm, "InstanceNorm{}d", "Instance normalization")
