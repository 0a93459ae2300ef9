"""Batch normalization on eager Tensors: batch statistics while `layer.training`, moving ones otherwise.

The same formulas as the graph version in batchnorm.py (PyTorch's conventions);
the moving statistics are updated at once, outside the recorded graph.
"""
import numpy as np

from ..ops.array_ops import reshape
from ..ops.math_ops import sqrt, square
from ..ops.reductions import reduce_mean


def batch_norm_eager(layer, x):
    """y = γ (x - μ) / √(σ² + ε) + β for an eager Tensor x, updating the layer's moving statistics."""
    if len(x.shape) != layer.rank:
        raise ValueError(f"{type(layer).__name__} expects inputs of rank {layer.rank}, got shape {x.shape}")
    axes = (0,) + tuple(range(2, layer.rank))
    shape = (1, -1) + (1,) * (layer.rank - 2)
    if layer.training:
        mean = reduce_mean(x, axes, keepdims=True)
        var = reduce_mean(square(x - mean), axes, keepdims=True)
        x_hat = (x - mean) / sqrt(var + layer.eps)
        count = x.size // x.shape[1]
        unbiased = var.numpy().reshape(-1) * (count / max(count - 1, 1))
        m = layer.momentum
        layer.running_mean.value = (1 - m) * layer.running_mean.value + m * mean.numpy().reshape(-1)
        layer.running_var.value = (1 - m) * layer.running_var.value + m * unbiased
    else:
        x_hat = (x - np.reshape(layer.running_mean.value, shape)) / np.sqrt(
            np.reshape(layer.running_var.value, shape) + layer.eps)
    if layer.weight is not None:
        x_hat = x_hat * reshape(layer.weight, shape) + reshape(layer.bias, shape)
    return x_hat
