"""Batch normalization: one graph for training (batch statistics) and evaluation (moving statistics)."""

from ..ops.array_ops import reshape
from ..ops.math_ops import greater, maximum, ones_like, sqrt, square, where
from ..ops.reductions import reduce_mean, reduce_sum
from ..ops.state_ops import assign, group
from .eager_batchnorm import batch_norm_eager
from .layer import Layer, is_eager, training_flag


class _BatchNorm(Layer):
    """y = γ (x - μ) / √(σ² + ε) + β over all axes but the channel axis 1.

    Training (the graph's training flag fed True): μ, σ² of the batch, and the
    moving statistics move towards them by `momentum` (PyTorch's convention,
    unbiased variance) through the graph's update ops. Evaluation: the moving
    statistics, kept in non-trainable Variables.
    """

    rank = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self.eps, self.momentum = eps, momentum
        self.weight = self.add_variable("weight", (num_features,), "ones") if affine else None
        self.bias = self.add_variable("bias", (num_features,), "zeros") if affine else None
        self.running_mean = self.add_variable("running_mean", (num_features,), "zeros", trainable=False)
        self.running_var = self.add_variable("running_var", (num_features,), "ones", trainable=False)

    def forward(self, x):
        if is_eager(x):
            return batch_norm_eager(self, x)
        if x.shape is None or len(x.shape) != self.rank:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self.rank}, got shape {x.shape}")
        axes = (0,) + tuple(range(2, self.rank))
        shape = (1, -1) + (1,) * (self.rank - 2)
        mean = reduce_mean(x, axes, keepdims=True)
        var = reduce_mean(square(x - mean), axes, keepdims=True)
        x_hat = where(training_flag(self.graph),
                      (x - mean) / sqrt(var + self.eps),
                      (x - reshape(self.running_mean, shape)) / sqrt(reshape(self.running_var, shape) + self.eps))
        y = x_hat
        if self.weight is not None:
            y = y * reshape(self.weight, shape) + reshape(self.bias, shape)
        count = reduce_sum(ones_like(x), axes)  # elements per channel, for the unbiased variance
        m = self.momentum
        flat_mean, flat_var = reshape(mean, (-1,)), reshape(var, (-1,)) * count / maximum(count - 1.0, 1.0)
        # One value per channel (a last batch of 1 in BatchNorm1d) says nothing about the variance:
        # running_var keeps its value then, instead of becoming NaN (torch raises an error instead).
        self.graph.update_ops.append(group(
            assign(self.running_mean, (1 - m) * self.running_mean + m * flat_mean),
            assign(self.running_var, where(greater(count, 1.0), (1 - m) * self.running_var + m * flat_var,
                                           self.running_var))))
        return y


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) inputs."""

    rank = 2


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs, per channel."""

    rank = 4


__all__ = ["BatchNorm1d", "BatchNorm2d"]
