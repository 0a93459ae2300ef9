"""Elementwise ops of two inputs with numpy broadcasting: arithmetic, maximum/minimum, comparisons, where.

Each op class is followed by its snake_case function and its registered gradient.
Gradients return tensors of the *output's* shape; the backprop engine sums them
back to each input's shape (broadcasting) in one central place.
"""
import numpy as np

from ..nodes import Operation
from .registry import not_differentiable, register_gradient
from .unary_ops import (Abs, Cast, Exp, Log, Negative, OnesLike, Sign, Sqrt, Square,  # noqa: F401 - see below
                        ZerosLike, abs, cast, dtype_of_compute, exp, log, negative, ones_like, sign, sqrt,
                        square, zeros_like)

# The unary ops live in unary_ops.py; they are also importable from here, where TF's math_ops has them.


class BinaryOperation(Operation):
    """An elementwise op of two inputs a, b; the output has their broadcast shape."""

    abstract = True
    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def infer_dtype(self, a, b):
        return dtype_of_compute(self, a, b)


# ---------------------------------------------------------------- arithmetic
class Add(BinaryOperation):
    """a + b.  Gradient: (g, g)."""

    def compute(self, a, b):
        return a + b


def add(a, b, name=None):
    """a + b elementwise, with broadcasting."""
    return Add(a, b, name=name)


@register_gradient(Add)
def _add_grad(op, grad):
    return [grad, grad]


class Subtract(BinaryOperation):
    """a - b.  Gradient: (g, -g)."""

    def compute(self, a, b):
        return a - b


def subtract(a, b, name=None):
    """a - b elementwise, with broadcasting."""
    return Subtract(a, b, name=name)


@register_gradient(Subtract)
def _subtract_grad(op, grad):
    return [grad, negative(grad)]


class Multiply(BinaryOperation):
    """a * b.  Gradient: (g * b, g * a)."""

    def compute(self, a, b):
        return a * b


def multiply(a, b, name=None):
    """a * b elementwise, with broadcasting."""
    return Multiply(a, b, name=name)


@register_gradient(Multiply)
def _multiply_grad(op, grad):
    a, b = op.inputs
    return [grad * b, grad * a]


class Divide(BinaryOperation):
    """a / b (true division).  Gradient: (g / b, -g * a / b²)."""

    def compute(self, a, b):
        return a / b


def divide(a, b, name=None):
    """a / b elementwise (true division), with broadcasting."""
    return Divide(a, b, name=name)


@register_gradient(Divide)
def _divide_grad(op, grad):
    a, b = op.inputs
    return [grad / b, negative(grad) * a / square(b)]


class Power(BinaryOperation):
    """a ** b.  Gradient: (g * b * a**(b-1), g * a**b * log a)."""

    def compute(self, a, b):
        return np.power(a, b)


def power(a, b, name=None):
    """a ** b elementwise, with broadcasting."""
    return Power(a, b, name=name)


@register_gradient(Power)
def _power_grad(op, grad):
    a, b = op.inputs
    return [grad * b * power(a, b - 1), grad * op * log(a)]


# ---------------------------------------------------------------- maximum, minimum
class Maximum(BinaryOperation):
    """max(a, b) elementwise.  Gradient goes to the larger input; ties split it in half (as PyTorch)."""

    def compute(self, a, b):
        return np.maximum(a, b)


def maximum(a, b, name=None):
    """Elementwise maximum, with broadcasting."""
    return Maximum(a, b, name=name)


def _select_grad(grad, a_wins, ties):
    """Route grad to a where a won, to b elsewhere, half to each on ties."""
    share_a = cast(a_wins, grad.dtype) + 0.5 * cast(ties, grad.dtype)
    return [grad * share_a, grad * (1.0 - share_a)]


@register_gradient(Maximum)
def _maximum_grad(op, grad):
    a, b = op.inputs
    return _select_grad(grad, Greater(a, b), Equal(a, b))


class Minimum(BinaryOperation):
    """min(a, b) elementwise.  Gradient goes to the smaller input; ties split it in half."""

    def compute(self, a, b):
        return np.minimum(a, b)


def minimum(a, b, name=None):
    """Elementwise minimum, with broadcasting."""
    return Minimum(a, b, name=name)


@register_gradient(Minimum)
def _minimum_grad(op, grad):
    a, b = op.inputs
    return _select_grad(grad, Less(a, b), Equal(a, b))


# ---------------------------------------------------------------- comparisons (no gradient)
class Comparison(BinaryOperation):
    """An elementwise comparison with a boolean result."""

    abstract = True


class Greater(Comparison):
    """a > b."""

    def compute(self, a, b):
        return np.greater(a, b)


def greater(a, b, name=None):
    """a > b elementwise (bool)."""
    return Greater(a, b, name=name)


class GreaterEqual(Comparison):
    """a >= b."""

    def compute(self, a, b):
        return np.greater_equal(a, b)


def greater_equal(a, b, name=None):
    """a >= b elementwise (bool)."""
    return GreaterEqual(a, b, name=name)


class Less(Comparison):
    """a < b."""

    def compute(self, a, b):
        return np.less(a, b)


def less(a, b, name=None):
    """a < b elementwise (bool)."""
    return Less(a, b, name=name)


class LessEqual(Comparison):
    """a <= b."""

    def compute(self, a, b):
        return np.less_equal(a, b)


def less_equal(a, b, name=None):
    """a <= b elementwise (bool)."""
    return LessEqual(a, b, name=name)


class Equal(Comparison):
    """a == b."""

    def compute(self, a, b):
        return np.equal(a, b)


def equal(a, b, name=None):
    """a == b elementwise (bool)."""
    return Equal(a, b, name=name)


not_differentiable(Greater, GreaterEqual, Less, LessEqual, Equal)


# ---------------------------------------------------------------- where
class Where(Operation):
    """condition ? a : b elementwise.  Gradient: (none, g where condition, g where not)."""

    def __init__(self, condition, a, b, name=None):
        super().__init__(condition, a, b, name=name)

    def compute(self, condition, a, b):
        return np.where(condition, a, b)

    def infer_dtype(self, condition, a, b):
        return np.result_type(a, b)


def where(condition, a, b, name=None):
    """Elementwise choice: a where condition is true, else b."""
    return Where(condition, a, b, name=name)


@register_gradient(Where)
def _where_grad(op, grad):
    condition = op.inputs[0]
    zeros = ZerosLike(grad)
    return [None, where(condition, grad, zeros), where(condition, zeros, grad)]
