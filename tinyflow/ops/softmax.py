"""softmax and log_softmax along an axis, computed stably (max subtracted first)."""
import numpy as np

from ..arguments import Arguments, rank_of
from ..nodes import Operation
from .array_ops import reshape
from .reductions import reduce_sum
from .registry import register_gradient
from .elementwise_ops import exp


def stable_log_softmax(x, axis):
    """x - logsumexp(x) along axis, finite even for logits of 1e4."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


class AxisOperation(Operation):
    """An op with one `axis` argument whose output has its first input's shape."""

    abstract = True
    shape_of = 0

    def __init__(self, *inputs, axis=-1, name=None):
        self.axis = Arguments(self, name, *inputs).axis("axis", axis, rank_of(inputs[0]))
        super().__init__(*inputs, name=name)


class Softmax(AxisOperation):
    """eˣ / Σ eˣ along axis.  Gradient: y (g - Σ g y)."""

    def compute(self, x):
        shifted = np.exp(x - np.max(x, axis=self.axis, keepdims=True))
        return shifted / np.sum(shifted, axis=self.axis, keepdims=True)


def _along_axis(cls, x, axis, name):
    """cls(x, axis=axis); a rank-0 x is one value along its axis 0 or -1 (as torch takes it)."""
    if rank_of(x) != 0:
        return cls(x, axis=axis, name=name)
    Arguments(cls, name, x).axis("axis", axis, 1)
    return reshape(cls(reshape(x, (1,)), axis=0), (), name=name)


def softmax(x, axis=-1, name=None):
    """Softmax along `axis`: non-negative entries summing to 1."""
    return _along_axis(Softmax, x, axis, name)


class SoftmaxGrad(AxisOperation):
    """y (g - Σ g y) along axis, for y = softmax(x)."""

    def compute(self, y, grad):
        return y * (grad - np.sum(grad * y, axis=self.axis, keepdims=True))


register_gradient(Softmax)(lambda op, grad: [SoftmaxGrad(op, grad, axis=op.axis)])


@register_gradient(SoftmaxGrad)
def _softmax_grad_grad(op, grad):
    # out = y g - y Σ(g y); differentiate that product rule by rule.
    y, g = op.inputs
    sum_gy = reduce_sum(g * y, op.axis, keepdims=True)
    d_y = grad * g - grad * sum_gy - g * reduce_sum(grad * y, op.axis, keepdims=True)
    return [d_y, SoftmaxGrad(y, grad, axis=op.axis)]


class LogSoftmax(AxisOperation):
    """x - log Σ eˣ along axis.  Gradient: g - eʸ Σ g."""

    def compute(self, x):
        return stable_log_softmax(x, self.axis)


def log_softmax(x, axis=-1, name=None):
    """log(softmax(x)) along `axis`, computed stably."""
    return _along_axis(LogSoftmax, x, axis, name)


class LogSoftmaxGrad(AxisOperation):
    """g - eʸ Σ g along axis, for y = log_softmax(x)."""

    def compute(self, y, grad):
        return grad - np.exp(y) * np.sum(grad, axis=self.axis, keepdims=True)


register_gradient(LogSoftmax)(lambda op, grad: [LogSoftmaxGrad(op, grad, axis=op.axis)])


@register_gradient(LogSoftmaxGrad)
def _log_softmax_grad_grad(op, grad):
    # out = g - eʸ Σg
    y, g = op.inputs
    e = exp(y)
    d_y = -(grad * e * reduce_sum(g, op.axis, keepdims=True))
    d_g = grad - reduce_sum(grad * e, op.axis, keepdims=True)
    return [d_y, d_g]
