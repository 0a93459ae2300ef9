"""Elementwise arithmetic: binary ops with numpy broadcasting, unary math, comparisons.

Gradients here return tensors of the *output's* shape; the backprop engine sums
them back to each input's shape (broadcasting) in one central place.
"""
import numpy as np

from .registry import not_differentiable, register_gradient
from ..nodes import Operation


def _floating(dtype):
    """The dtype of a float-valued result (ints become float64, as numpy does)."""
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


# ---------------------------------------------------------------- binary ops
class Add(Operation):
    """a + b.  Gradient: (g, g)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return a + b


@register_gradient(Add)
def _add_grad(op, grad):
    return [grad, grad]


class Subtract(Operation):
    """a - b.  Gradient: (g, -g)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return a - b


@register_gradient(Subtract)
def _subtract_grad(op, grad):
    return [grad, negative(grad)]


class Multiply(Operation):
    """a * b.  Gradient: (g * b, g * a)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return a * b


@register_gradient(Multiply)
def _multiply_grad(op, grad):
    a, b = op.inputs
    return [grad * b, grad * a]


class Divide(Operation):
    """a / b.  Gradient: (g / b, -g * a / b²)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return a / b

    def infer_dtype(self, a, b):
        return _floating(np.result_type(a, b))


@register_gradient(Divide)
def _divide_grad(op, grad):
    a, b = op.inputs
    return [grad / b, negative(grad) * a / square(b)]


class Power(Operation):
    """a ** b.  Gradient: (g * b * a**(b-1), g * a**b * log a)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.power(a, b)


@register_gradient(Power)
def _power_grad(op, grad):
    a, b = op.inputs
    return [grad * b * power(a, b - 1), grad * op * log(a)]


class Maximum(Operation):
    """max(a, b) elementwise.  Gradient goes to the larger input; ties split it in half (as PyTorch)."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.maximum(a, b)


class Minimum(Operation):
    """min(a, b) elementwise.  Gradient goes to the smaller input; ties split it in half."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.minimum(a, b)


def _select_grad(grad, a_wins, ties):
    """Route grad to a where a won, to b elsewhere, half to each on ties."""
    share_a = cast(a_wins, grad.dtype) + 0.5 * cast(ties, grad.dtype)
    return [grad * share_a, grad * (1.0 - share_a)]


@register_gradient(Maximum)
def _maximum_grad(op, grad):
    a, b = op.inputs
    return _select_grad(grad, Greater(a, b), Equal(a, b))


@register_gradient(Minimum)
def _minimum_grad(op, grad):
    a, b = op.inputs
    return _select_grad(grad, Less(a, b), Equal(a, b))


# ---------------------------------------------------------------- unary ops
class UnaryOperation(Operation):
    """An elementwise op of one input: the output has the input's shape."""

    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    abstract = True

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        return x_shape


class FloatUnaryOperation(UnaryOperation):
    """A unary op whose result is floating point even for integer input."""

    abstract = True

    def infer_dtype(self, x):
        return _floating(x)


class Negative(UnaryOperation):
    """-x.  Gradient: -g."""

    def compute(self, x):
        return np.negative(x)


@register_gradient(Negative)
def _negative_grad(op, grad):
    return [negative(grad)]


class Square(UnaryOperation):
    """x².  Gradient: 2 x g."""

    def compute(self, x):
        return np.square(x)


@register_gradient(Square)
def _square_grad(op, grad):
    return [grad * (2.0 * op.inputs[0])]


class Sqrt(FloatUnaryOperation):
    """√x.  Gradient: g / (2 √x)."""

    def compute(self, x):
        return np.sqrt(x)


@register_gradient(Sqrt)
def _sqrt_grad(op, grad):
    return [grad / (2.0 * op)]


class Exp(FloatUnaryOperation):
    """eˣ.  Gradient: g eˣ."""

    def compute(self, x):
        return np.exp(x)


@register_gradient(Exp)
def _exp_grad(op, grad):
    return [grad * op]


class Log(FloatUnaryOperation):
    """ln x.  Gradient: g / x."""

    def compute(self, x):
        return np.log(x)


@register_gradient(Log)
def _log_grad(op, grad):
    return [grad / op.inputs[0]]


class Abs(UnaryOperation):
    """|x|.  Gradient: g sign(x) (0 at x = 0, as PyTorch)."""

    def compute(self, x):
        return np.abs(x)


@register_gradient(Abs)
def _abs_grad(op, grad):
    return [grad * Sign(op.inputs[0])]


class Sign(UnaryOperation):
    """sign(x): -1, 0 or 1.  Not differentiable (zero almost everywhere)."""

    def compute(self, x):
        return np.sign(x)


# ------------------------------------------------- comparisons, casts, where
class Comparison(Operation):
    """An elementwise comparison with a boolean result; it has no gradient."""

    abstract = True

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def infer_dtype(self, a, b):
        return np.dtype(bool)


class Greater(Comparison):
    """a > b."""

    def compute(self, a, b):
        return np.greater(a, b)


class GreaterEqual(Comparison):
    """a >= b."""

    def compute(self, a, b):
        return np.greater_equal(a, b)


class Less(Comparison):
    """a < b."""

    def compute(self, a, b):
        return np.less(a, b)


class LessEqual(Comparison):
    """a <= b."""

    def compute(self, a, b):
        return np.less_equal(a, b)


class Equal(Comparison):
    """a == b."""

    def compute(self, a, b):
        return np.equal(a, b)


not_differentiable(Sign, Greater, GreaterEqual, Less, LessEqual, Equal)


class Cast(UnaryOperation):
    """x converted to `dtype`.  Gradient: g cast back (none for integer results)."""

    def __init__(self, x, dtype, name=None):
        self.target_dtype = np.dtype(dtype)
        super().__init__(x, name=name)

    def compute(self, x):
        return x.astype(self.target_dtype, copy=False)

    def infer_dtype(self, x):
        return self.target_dtype


@register_gradient(Cast)
def _cast_grad(op, grad):
    source = op.inputs[0].dtype
    if not (np.issubdtype(source, np.floating) and np.issubdtype(op.dtype, np.floating)):
        return [None]
    return [cast(grad, source)]


class Where(Operation):
    """condition ? a : b elementwise.  Gradient: (none, g where condition, g where not)."""

    def __init__(self, condition, a, b, name=None):
        super().__init__(condition, a, b, name=name)

    def compute(self, condition, a, b):
        return np.where(condition, a, b)

    def infer_dtype(self, condition, a, b):
        return np.result_type(a, b)


@register_gradient(Where)
def _where_grad(op, grad):
    condition = op.inputs[0]
    zeros = ZerosLike(grad)
    return [None, where(condition, grad, zeros), where(condition, zeros, grad)]


class ZerosLike(UnaryOperation):
    """An array of zeros with x's run-time shape and dtype."""

    def compute(self, x):
        return np.zeros_like(x)


class OnesLike(UnaryOperation):
    """An array of ones with x's run-time shape and dtype (seeds backprop)."""

    def compute(self, x):
        return np.ones_like(x)


not_differentiable(ZerosLike, OnesLike)


# ------------------------------------------------------- public functions
def add(a, b, name=None):
    """a + b elementwise, with broadcasting."""
    return Add(a, b, name=name)


def subtract(a, b, name=None):
    """a - b elementwise, with broadcasting."""
    return Subtract(a, b, name=name)


def multiply(a, b, name=None):
    """a * b elementwise, with broadcasting."""
    return Multiply(a, b, name=name)


def divide(a, b, name=None):
    """a / b elementwise (true division), with broadcasting."""
    return Divide(a, b, name=name)


def power(a, b, name=None):
    """a ** b elementwise, with broadcasting."""
    return Power(a, b, name=name)


def maximum(a, b, name=None):
    """Elementwise maximum, with broadcasting."""
    return Maximum(a, b, name=name)


def minimum(a, b, name=None):
    """Elementwise minimum, with broadcasting."""
    return Minimum(a, b, name=name)


def negative(x, name=None):
    """-x."""
    return Negative(x, name=name)


def square(x, name=None):
    """x²."""
    return Square(x, name=name)


def sqrt(x, name=None):
    """√x."""
    return Sqrt(x, name=name)


def exp(x, name=None):
    """eˣ."""
    return Exp(x, name=name)


def log(x, name=None):
    """Natural logarithm."""
    return Log(x, name=name)


def abs(x, name=None):  # noqa: A001 - the contract name, as numpy and TF spell it
    """|x|."""
    return Abs(x, name=name)


def sign(x, name=None):
    """-1, 0 or 1 by the sign of x."""
    return Sign(x, name=name)


def greater(a, b, name=None):
    """a > b elementwise (bool)."""
    return Greater(a, b, name=name)


def greater_equal(a, b, name=None):
    """a >= b elementwise (bool)."""
    return GreaterEqual(a, b, name=name)


def less(a, b, name=None):
    """a < b elementwise (bool)."""
    return Less(a, b, name=name)


def less_equal(a, b, name=None):
    """a <= b elementwise (bool)."""
    return LessEqual(a, b, name=name)


def equal(a, b, name=None):
    """a == b elementwise (bool)."""
    return Equal(a, b, name=name)


def cast(x, dtype, name=None):
    """x converted to dtype (returns x itself when it already has it)."""
    from ..nodes import as_node
    x = as_node(x)
    if x.dtype == np.dtype(dtype):
        return x
    return Cast(x, dtype, name=name)


def where(condition, a, b, name=None):
    """Elementwise choice: a where condition is true, else b."""
    return Where(condition, a, b, name=name)


def zeros_like(x, name=None):
    """Zeros with x's run-time shape."""
    return ZerosLike(x, name=name)


def ones_like(x, name=None):
    """Ones with x's run-time shape."""
    return OnesLike(x, name=name)

