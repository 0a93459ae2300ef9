"""Normalization layers: tfl.batch_norm and the BatchNorm layers built on it; LayerNorm, GroupNorm, InstanceNorm.
One batch-norm graph serves training and evaluation (`training` may be the graph's boolean training flag); moving
statistics follow torch's `momentum`, through update ops in graph mode (tfl.nn.update_ops()), eagerly at once.
"""
import numpy as np

from ..errors import ShapeError
from ..nodes import Variable, is_eager
from ..ops.array_ops import checks, reshape
from ..ops.elementwise_ops import greater, maximum, ones_like, sqrt, square, where
from ..ops.normalization import affine, group_norm, instance_norm, layer_norm
from ..ops.reductions import reduce_mean, reduce_sum
from ..ops.state_ops import assign, group
from .layer import Layer, flags, ranked, sizes, training_flag


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5,
               name=None):
    """γ (x - μ) / √(σ² + ε) + β per channel (axis 1), as torch.nn.functional.batch_norm: μ, σ² of the batch when
    `training` (a bool or a boolean node), else the running statistics, which training moves by `momentum`
    (None: not at all) when they are Variables."""
    if x.shape is None or len(x.shape) < 2:
        raise ShapeError(f"batch_norm needs an (N, C, ...) input, got shape {x.shape}")
    check = checks("batch_norm", name, x)
    eps = check.number("eps", eps, 0.0)
    momentum = None if momentum is None else check.number("momentum", momentum, 0.0, 1.0)
    shape = (1, -1) + (1,) * (len(x.shape) - 2)
    if is_eager(x):  # the running statistics are read (and moved) as arrays, outside autograd
        training, name = bool(training), None
        frozen = None if training else ((x - np.reshape(_array(running_mean), shape))
                                        / np.sqrt(np.reshape(_array(running_var), shape) + eps))
    else:
        frozen = (x - reshape(running_mean, shape)) / sqrt(reshape(running_var, shape) + eps)
    if training is False:
        return affine(frozen, weight, bias, shape, name)
    axes = (0,) + tuple(range(2, len(x.shape)))  # every axis but the channel axis 1
    mean = reduce_mean(x, axes, keepdims=True)
    var = reduce_mean(square(x - mean), axes, keepdims=True)  # biased: the batch's own variance
    from_batch = (x - mean) / sqrt(var + eps)
    x_hat = from_batch if training is True else where(training, from_batch, frozen)
    if momentum is not None and isinstance(running_mean, Variable) and isinstance(running_var, Variable):
        _update_running_statistics(x, running_mean, running_var, mean, var, momentum)
    return affine(x_hat, weight, bias, shape, name)


def _array(value):
    """A Variable's, eager Tensor's or array's value as a numpy array."""
    return value.value if isinstance(value, Variable) else np.asarray(getattr(value, "numpy", lambda: value)())


def _update_running_statistics(x, running_mean, running_var, mean, var, m):
    """Move the running statistics towards the batch's by momentum `m`. With one value per channel (a last batch of
    1 in BatchNorm1d) running_var keeps its value instead of becoming NaN (torch raises an error)."""
    if is_eager(x):
        count = x.size // x.shape[1]
        running_mean.value = (1 - m) * running_mean.value + m * mean.numpy().reshape(-1)
        if count > 1:
            running_var.value = (1 - m) * running_var.value + m * var.numpy().reshape(-1) * (count / (count - 1))
        return
    count = reduce_sum(ones_like(x), (0,) + tuple(range(2, len(x.shape))))  # values per channel
    flat_mean, flat_var = reshape(mean, (-1,)), reshape(var, (-1,)) * count / maximum(count - 1.0, 1.0)
    x.graph.update_ops.append(group(
        assign(running_mean, (1 - m) * running_mean + m * flat_mean),
        assign(running_var, where(greater(count, 1.0), (1 - m) * running_var + m * flat_var, running_var))))


class _Normalization(Layer):
    """A normalization layer: its eps, and (when affine) a scale γ (ones) and a shift β (zeros, unless not bias)."""

    def __init__(self, shape, eps, affine, bias=True, name=None, dtype="float32"):
        self.eps = checks(type(self).__name__, name).number("eps", eps, 0.0)
        affine, bias = flags(self, name, affine=affine, bias=bias)
        super().__init__(name, dtype)
        self.weight = self.add_variable("weight", shape, "ones") if affine else None
        self.bias = self.add_variable("bias", shape, "zeros") if affine and bias else None


class _BatchNorm(_Normalization):
    """γ (x - μ) / √(σ² + ε) + β over all axes but the channels (batch_norm); training: the graph's flag or train()."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, name=None, dtype="float32"):
        num_features, = sizes(self, name, num_features=num_features)
        super().__init__((num_features,), eps, affine, name=name, dtype=dtype)
        self.momentum = momentum
        self.running_mean = self.add_variable("running_mean", (num_features,), "zeros", trainable=False)
        self.running_var = self.add_variable("running_var", (num_features,), "ones", trainable=False)

    def forward(self, x):
        self.check_rank(x)
        training = self.training if is_eager(x) else training_flag(self.graph)
        return batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training, self.momentum,
                          self.eps)


BatchNorm1d, BatchNorm2d, BatchNorm3d = ranked(_BatchNorm, "BatchNorm{}d", "Batch normalization", ranks=(2, 4, 5))


class LayerNorm(_Normalization):
    """Normalizes the trailing axes `normalized_shape`, then · weight + bias of that shape, as torch.nn.LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, name=None, dtype="float32"):
        shape = normalized_shape if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)
        self.normalized_shape = tuple(sizes(self, name, **{f"normalized_shape[{i}]": d for i, d in enumerate(shape)}))
        super().__init__(self.normalized_shape, eps, elementwise_affine, bias, name, dtype)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class GroupNorm(_Normalization):
    """Normalizes `num_groups` groups of channels of each sample, then a per-channel γ, β, as torch.nn.GroupNorm."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, name=None, dtype="float32"):
        self.num_groups, num_channels = sizes(self, name, num_groups=num_groups, num_channels=num_channels)
        if num_channels % self.num_groups:
            checks("GroupNorm", name).fail("num_groups", num_groups, f"does not divide num_channels={num_channels}",
                                           "pass a divisor of the number of channels")
        super().__init__((num_channels,), eps, affine, name=name, dtype=dtype)

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class _InstanceNorm(_Normalization):
    """Normalizes each (sample, channel) over its spatial axes, then (affine) γ, β, as torch.nn.InstanceNormNd."""

    def __init__(self, num_features, eps=1e-5, affine=False, name=None, dtype="float32"):
        num_features, = sizes(self, name, num_features=num_features)
        super().__init__((num_features,), eps, affine, name=name, dtype=dtype)

    def forward(self, x):
        self.check_rank(x)
        return instance_norm(x, self.weight, self.bias, self.eps)


InstanceNorm1d, InstanceNorm2d, InstanceNorm3d = ranked(_InstanceNorm, "InstanceNorm{}d", "Instance normalization")
