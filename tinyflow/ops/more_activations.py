"""Activations beyond the classic ones (activations.py): elu, selu, gelu, softsign, prelu, hard_sigmoid, hard_swish.

Their gradients are built from ordinary ops (so they can be differentiated again,
and the elementwise ones fuse into one kernel); selu, hard_sigmoid and hard_swish
are compositions of other ops, as their definitions are.
"""
import math

import numpy as np

from ..arguments import Arguments
from .activations import Tanh
from .math_ops import BinaryOperation, Greater, clip, multiply, where
from .registry import register_gradient
from .unary_ops import Erf, UnaryOperation, ZerosLike, abs, erf_values, exp, float_result, square

SELU_ALPHA = 1.6732632423543772848170429916717  # Klambauer et al. 2017, as PyTorch and ONNX
SELU_SCALE = 1.0507009873554804934193349852946


class Elu(UnaryOperation):
    """x for x > 0, alpha (eˣ - 1) otherwise.  Gradient: g for x > 0, g (y + alpha) otherwise."""

    def __init__(self, x, alpha=1.0, name=None):
        self.alpha = Arguments(self, name, x).number("alpha", alpha)
        super().__init__(x, name=name)

    def compute(self, x):
        with np.errstate(over="ignore"):  # eˣ of large x overflows where x itself is the answer
            return np.where(x > 0, x, self.alpha * np.expm1(x)).astype(float_result(x.dtype), copy=False)


def elu(x, alpha=1.0, name=None):
    """The exponential linear unit: x for x > 0, alpha (eˣ - 1) otherwise."""
    return Elu(x, alpha, name=name)


@register_gradient(Elu)
def _elu_grad(op, grad):
    return [where(Greater(op.inputs[0], 0.0), grad, grad * (op + op.alpha))]


def selu(x, alpha=SELU_ALPHA, scale=SELU_SCALE, name=None):
    """The self-normalising elu: scale · elu(x, alpha), with the constants of Klambauer et al. by default."""
    return multiply(Elu(x, alpha), scale, name=name)


class Gelu(UnaryOperation):
    """x Φ(x), Φ the standard normal CDF: 0.5 x (1 + erf(x / √2)).

    `approximate="tanh"`: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), as PyTorch and ONNX.
    Gradient: g (Φ(x) + x φ(x)) with φ the normal density (the tanh form's own derivative for "tanh").
    """

    def __init__(self, x, approximate="none", name=None):
        if approximate not in ("none", "tanh"):
            Arguments(self, name, x).fail("approximate", approximate, "is not 'none' or 'tanh'",
                                          "pass approximate='none' (exact, with erf) or 'tanh'")
        self.approximate = approximate
        super().__init__(x, name=name)

    def compute(self, x):
        dtype = float_result(x.dtype)
        if self.approximate == "tanh":
            inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
            return (0.5 * x * (1 + np.tanh(inner))).astype(dtype, copy=False)
        return (0.5 * x * (1 + erf_values(x / math.sqrt(2)))).astype(dtype, copy=False)


def gelu(x, approximate="none", name=None):
    """The Gaussian error linear unit x Φ(x); approximate="tanh" uses the tanh formula (as PyTorch)."""
    return Gelu(x, approximate, name=name)


@register_gradient(Gelu)
def _gelu_grad(op, grad):
    x = op.inputs[0]
    if op.approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        t = Tanh(c * (x + 0.044715 * x * square(x)))
        slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - square(t)) * (c * (1.0 + 3 * 0.044715 * square(x)))
        return [grad * slope]
    cdf = 0.5 * (1.0 + Erf(x * (1 / math.sqrt(2))))
    density = exp(-0.5 * square(x)) * (1 / math.sqrt(2 * math.pi))
    return [grad * (cdf + x * density)]


class Softsign(UnaryOperation):
    """x / (1 + |x|).  Gradient: g / (1 + |x|)²."""

    def compute(self, x):
        return x / (1 + np.abs(x))


def softsign(x, name=None):
    """x / (1 + |x|), a smooth sign."""
    return Softsign(x, name=name)


@register_gradient(Softsign)
def _softsign_grad(op, grad):
    return [grad / square(1.0 + abs(op.inputs[0]))]


class PRelu(BinaryOperation):
    """x for x > 0, slope · x otherwise (a leaky relu with a learned slope, broadcast against x as numpy).

    Gradient: (g for x > 0 else g slope, 0 for x > 0 else g x).
    """

    def __init__(self, x, slope, name=None):
        super().__init__(x, slope, name=name)

    def compute(self, x, slope):
        return np.where(x > 0, x, x * slope)


def prelu(x, slope, name=None):
    """x for x > 0, slope · x otherwise; slope broadcasts as numpy (per channel of NCHW: shape (C, 1, 1))."""
    return PRelu(x, slope, name=name)


@register_gradient(PRelu)
def _prelu_grad(op, grad):
    x, slope = op.inputs
    positive = Greater(x, 0.0)
    return [where(positive, grad, grad * slope), where(positive, ZerosLike(grad), grad * x)]


def hard_sigmoid(x, alpha=1 / 6, beta=0.5, name=None):
    """max(0, min(1, alpha x + beta)); the defaults are PyTorch's (ONNX's alpha is 0.2)."""
    return clip(x * alpha + beta, 0.0, 1.0, name=name)


def hard_swish(x, name=None):
    """x · hard_sigmoid(x) = x · relu6(x + 3) / 6 (MobileNetV3's activation, as PyTorch)."""
    return multiply(x, hard_sigmoid(x), name=name)
