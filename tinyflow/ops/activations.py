"""Activation functions, each with a dedicated backward op (`<Op>Grad`).

The backward ops are ordinary graph nodes, so backends can give them a fused
kernel (the C library's `<op>_back`) and they can be differentiated again.
"""
import numpy as np

from ..arguments import Arguments
from ..nodes import Operation
from .registry import register_gradient
from .unary_ops import UnaryOperation


def stable_sigmoid(x):
    """1 / (1 + e^-x) without overflow for large |x|."""
    if x.dtype.kind in "biu":  # -|x| would wrap around for unsigned ints: float first, as np.exp would
        x = x.astype(np.result_type(x.dtype, np.float16))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class BackwardOperation(Operation):
    """An op of (forward tensor, incoming gradient) whose output has the gradient's shape."""

    abstract = True

    def __init__(self, y, grad, name=None):
        super().__init__(y, grad, name=name)

    def infer_shape(self, y_shape, grad_shape):
        return grad_shape


class Sigmoid(UnaryOperation):
    """σ(x) = 1 / (1 + e^-x).  Gradient: g σ(x) (1 - σ(x))."""

    def compute(self, x):
        return stable_sigmoid(x)


def sigmoid(x, name=None):
    """The logistic function 1 / (1 + e^-x)."""
    return Sigmoid(x, name=name)


class SigmoidGrad(BackwardOperation):
    """g y (1 - y) for y = σ(x)."""

    def compute(self, y, grad):
        return grad * y * (1 - y)


@register_gradient(Sigmoid)
def _sigmoid_grad(op, grad):
    return [SigmoidGrad(op, grad)]


@register_gradient(SigmoidGrad)
def _sigmoid_grad_grad(op, grad):
    y, g = op.inputs
    return [grad * g * (1.0 - 2.0 * y), SigmoidGrad(y, grad)]


class Tanh(UnaryOperation):
    """tanh x.  Gradient: g (1 - tanh² x)."""

    def compute(self, x):
        return np.tanh(x)


def tanh(x, name=None):
    """Hyperbolic tangent."""
    return Tanh(x, name=name)


class TanhGrad(BackwardOperation):
    """g (1 - y²) for y = tanh x."""

    def compute(self, y, grad):
        return grad * (1 - y * y)


@register_gradient(Tanh)
def _tanh_grad(op, grad):
    return [TanhGrad(op, grad)]


@register_gradient(TanhGrad)
def _tanh_grad_grad(op, grad):
    y, g = op.inputs
    return [-2.0 * grad * g * y, TanhGrad(y, grad)]


class Relu(UnaryOperation):
    """max(x, 0).  Gradient: g where x > 0, else 0."""

    def compute(self, x):
        return np.maximum(x, 0)


def relu(x, name=None):
    """max(x, 0)."""
    return Relu(x, name=name)


class ReluGrad(BackwardOperation):
    """g where y > 0, else 0 (y is relu's output)."""

    def compute(self, y, grad):
        return np.where(y > 0, grad, 0)


@register_gradient(Relu)
def _relu_grad(op, grad):
    return [ReluGrad(op, grad)]


@register_gradient(ReluGrad)
def _relu_grad_grad(op, grad):
    return [None, ReluGrad(op.inputs[0], grad)]  # piecewise constant in y: no gradient there


class LeakyRelu(UnaryOperation):
    """x if x > 0 else alpha x.  Gradient: g, or alpha g where x <= 0."""

    def __init__(self, x, alpha=0.01, name=None):
        self.alpha = Arguments(self, name, x).number("alpha", alpha)
        super().__init__(x, name=name)

    def compute(self, x):
        return np.where(x > 0, x, self.alpha * x)


def leaky_relu(x, alpha=0.01, name=None):
    """x for x > 0, alpha x otherwise."""
    return LeakyRelu(x, alpha=alpha, name=name)


class LeakyReluGrad(BackwardOperation):
    """g where x > 0, else alpha g."""

    def __init__(self, x, grad, alpha=0.01, name=None):
        self.alpha = Arguments(self, name, x).number("alpha", alpha)
        super().__init__(x, grad, name=name)

    def compute(self, x, grad):
        return np.where(x > 0, grad, self.alpha * grad)


@register_gradient(LeakyRelu)
def _leaky_relu_grad(op, grad):
    return [LeakyReluGrad(op.inputs[0], grad, op.alpha)]


@register_gradient(LeakyReluGrad)
def _leaky_relu_grad_grad(op, grad):
    return [None, LeakyReluGrad(op.inputs[0], grad, op.alpha)]


class Softplus(UnaryOperation):
    """ln(1 + eˣ), computed without overflow.  Gradient: g σ(x)."""

    def compute(self, x):
        with np.errstate(invalid="ignore"):  # numpy warns for a NaN input; NaN out is the answer
            return np.logaddexp(0, x)


def softplus(x, name=None):
    """ln(1 + eˣ), a smooth relu."""
    return Softplus(x, name=name)


@register_gradient(Softplus)
def _softplus_grad(op, grad):
    return [grad * Sigmoid(op.inputs[0])]
