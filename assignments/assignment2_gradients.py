"""Assignment 2 — gradient functions, checked by finite differences.

A gradient function receives the op node and `grad`, the gradient of the loss with respect to
the op's output (a node of the output's shape), and returns one gradient node per input, built
from tinyflow ops. `tfl.testing.gradcheck` compares it with finite differences. First write
your own finite-difference checker in numpy (the CS231n classic), then the gradients.
Check yourself with `pytest tests -m assignment2`.
"""
import numpy as np

import tinyflow as tfl


def numeric_gradient(f, x, eps=1e-6):
    """d f(x) / dx for a scalar function `f` of a float64 array `x`, by central differences, element by element.

    Returns an array of x's shape; `x` must be left unchanged.
    """
    # BEGIN SOLUTION
    # HINT: for each index (np.ndindex(x.shape)), evaluate f at x + eps and x - eps in that element only,
    #   divide the difference by 2 eps; work on a copy of x
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + eps
        up = f(x)
        x[index] = saved - eps
        down = f(x)
        x[index] = saved
        grad[index] = (up - down) / (2 * eps)
    return grad
    # END SOLUTION


def relative_error(a, b):
    """max |a - b| / max(|a| + |b|, 1e-8), elementwise: the number CS231n asks to be below 1e-7."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a) + np.abs(b), 1e-8)))


class Swish(tfl.Operation):
    """x · σ(x), elementwise.  Gradient: g · (σ(x) + x σ(x) (1 - σ(x)))."""

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return x / (1 + np.exp(-x))

    def infer_shape(self, x_shape):
        return x_shape


@tfl.register_gradient(Swish)
def _swish_grad(op, grad):
    # BEGIN SOLUTION
    # HINT: x = op.inputs[0]; build s = tfl.sigmoid(x) and return a list with ONE node: grad * (s + x * s * (1
    #   - s))
    x = op.inputs[0]
    s = tfl.sigmoid(x)
    return [grad * (s + x * s * (1.0 - s))]
    # END SOLUTION


class WeightedSum(tfl.Operation):
    """out[n] = Σ_j x[n, j] · w[j]: x (N, M), w (M,) -> (N,).  Gradients: g[n] w[j] for x, Σ_n g[n] x[n, j] for w."""

    def __init__(self, x, w, name=None):
        super().__init__(x, w, name=name)

    def compute(self, x, w):
        return x @ w

    def infer_shape(self, x_shape, w_shape):
        return (x_shape[0],)


@tfl.register_gradient(WeightedSum)
def _weighted_sum_grad(op, grad):
    # BEGIN SOLUTION
    # HINT: two inputs, so return two nodes; reshape grad to (N, 1) with tfl.reshape(grad, (-1, 1)) so it
    #   broadcasts against x, and sum over the batch axis for w (tfl.reduce_sum(..., axis=0))
    x, w = op.inputs
    column = tfl.reshape(grad, (-1, 1))
    return [column * w, tfl.reduce_sum(column * x, axis=0)]
    # END SOLUTION


class LogSumExp(tfl.Operation):
    """log Σ_j exp(x[..., j]) over the last axis, computed stably.  Gradient: g[..., None] · softmax(x)."""

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        top = x.max(axis=-1, keepdims=True)
        return (top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True)))[..., 0]

    def infer_shape(self, x_shape):
        return x_shape[:-1]


@tfl.register_gradient(LogSumExp)
def _logsumexp_grad(op, grad):
    # BEGIN SOLUTION
    # HINT: the output lost the last axis, so give grad a trailing axis of size 1 (tfl.reshape with
    #   op.inputs[0]'s rank, or reduce_sum tricks) and multiply by tfl.softmax(op.inputs[0], axis=-1)
    x = op.inputs[0]
    expanded = tfl.reshape(grad, tuple(-1 if d is None else d for d in x.shape[:-1]) + (1,))
    return [expanded * tfl.softmax(x, axis=-1)]
    # END SOLUTION
