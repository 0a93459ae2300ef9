"""Elementwise ops with numpy broadcasting: arithmetic, mod, maximum/minimum, clip, comparisons, where.

Each op class is followed by its snake_case function and its registered gradient.
Gradients return tensors of the *output's* shape; the backprop engine sums them
back to each input's shape (broadcasting) in one central place.
"""
import numpy as np

from ..arguments import Arguments
from ..nodes import Operation, as_node
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


class Mod(BinaryOperation):
    """The remainder of a / b: with b's sign (Python's %, np.mod), or with a's sign when `fmod` (C's fmod).

    Gradient: (g, -g (a - y) / b), since a - y is b times floor(a / b) (trunc(a / b) for fmod).
    """

    def __init__(self, a, b, fmod=False, name=None):
        self.fmod = Arguments(self, name, a, b).flag("fmod", fmod)
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.fmod(a, b) if self.fmod else np.mod(a, b)


def mod(a, b, name=None):
    """The remainder of a / b with the sign of b (Python's a % b, torch.remainder), with broadcasting."""
    return Mod(a, b, name=name)


def fmod(a, b, name=None):
    """The remainder of a / b with the sign of a (C's fmod, torch.fmod), with broadcasting."""
    return Mod(a, b, fmod=True, name=name)


@register_gradient(Mod)
def _mod_grad(op, grad):
    a, b = op.inputs
    return [grad, negative(grad) * (a - op) / b]


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


# ---------------------------------------------------------------- clip
class Clip(Operation):
    """x limited to [low, high] elementwise (every value high when low > high, as numpy and ONNX).

    Gradient: g to x where low <= x <= high, to low where x < low, to high where x > high.
    """

    def __init__(self, x, low, high, name=None):
        super().__init__(x, low, high, name=name)

    def compute(self, x, low, high):
        return np.clip(x, low, high)

    def infer_dtype(self, x, low, high):
        return dtype_of_compute(self, x, low, high)


def clip(x, min=None, max=None, name=None):  # noqa: A002 - numpy's and torch's argument names
    """x limited to [min, max] elementwise; a bound left None does not limit (torch.clamp, np.clip)."""
    x = as_node(x)
    bounds = []
    for bound, extreme in ((min, 0), (max, -1)):
        if bound is None:
            kind = x.dtype.kind
            bound = (np.array([-np.inf, np.inf], x.dtype)[extreme] if kind == "f" else
                     np.array([np.iinfo(x.dtype).min, np.iinfo(x.dtype).max], x.dtype)[extreme] if kind in "iu"
                     else np.array([False, True])[extreme])
        bounds.append(as_node(bound, like=x))
    return Clip(x, *bounds, name=name)


@register_gradient(Clip)
def _clip_grad(op, grad):
    x, low, high = op.inputs
    zeros = ZerosLike(grad)
    ordered = LessEqual(low, high)
    below = where(ordered, Less(x, low), False)      # low > high: every value is high, low gets nothing
    above = where(ordered, Greater(x, high), True)
    return [where(below, zeros, where(above, zeros, grad)), where(below, grad, zeros), where(above, grad, zeros)]
