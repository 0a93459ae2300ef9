"""Elementwise ops of one input: negative, square, sqrt, exp, log, abs, sign, reciprocal, floor, ceil, sin, cos,
erf, cast, zeros_like, ones_like.

Each op class is followed by its snake_case function and its registered gradient.
"""
import math

import numpy as np

from ..arguments import Arguments
from ..errors import ShapeError
from ..nodes import Operation, as_node
from .registry import not_differentiable, register_gradient


def dtype_of_compute(op, *dtypes):
    """The dtype an elementwise op's numpy kernel returns for these input dtypes (numpy's own rule).

    Asking the kernel itself keeps the static dtype equal to the computed one for
    every input dtype (sqrt of int8 is float16, relu of bool is int64, ...), and an
    input dtype the kernel refuses (negative of bool) is a ShapeError while building.
    """
    try:
        with np.errstate(all="ignore"):
            return np.asarray(op.compute(*[np.ones(1, d) for d in dtypes])).dtype
    except TypeError as err:
        raise ShapeError(f"{op.op_type} does not take inputs of dtype {', '.join(map(str, dtypes))} ({err}); "
                         "convert them first, e.g. tfl.cast(x, 'float32')") from None


class UnaryOperation(Operation):
    """An elementwise op of one input: the output has the input's shape."""

    abstract = True
    elementwise = True  # gradients have the output's shape (see autodiff._fit_to_input)

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        return x_shape

    def infer_dtype(self, x):
        return dtype_of_compute(self, x)


class Negative(UnaryOperation):
    """-x.  Gradient: -g."""

    def compute(self, x):
        return np.negative(x)


def negative(x, name=None):
    """-x."""
    return Negative(x, name=name)


@register_gradient(Negative)
def _negative_grad(op, grad):
    return [negative(grad)]


class Square(UnaryOperation):
    """x².  Gradient: 2 x g."""

    def compute(self, x):
        return np.square(x)


def square(x, name=None):
    """x²."""
    return Square(x, name=name)


@register_gradient(Square)
def _square_grad(op, grad):
    return [grad * (2.0 * op.inputs[0])]


class Sqrt(UnaryOperation):
    """√x.  Gradient: g / (2 √x)."""

    def compute(self, x):
        return np.sqrt(x)


def sqrt(x, name=None):
    """√x."""
    return Sqrt(x, name=name)


@register_gradient(Sqrt)
def _sqrt_grad(op, grad):
    return [grad / (2.0 * op)]


class Exp(UnaryOperation):
    """eˣ.  Gradient: g eˣ."""

    def compute(self, x):
        return np.exp(x)


def exp(x, name=None):
    """eˣ."""
    return Exp(x, name=name)


@register_gradient(Exp)
def _exp_grad(op, grad):
    return [grad * op]


class Log(UnaryOperation):
    """ln x.  Gradient: g / x."""

    def compute(self, x):
        return np.log(x)


def log(x, name=None):
    """Natural logarithm."""
    return Log(x, name=name)


@register_gradient(Log)
def _log_grad(op, grad):
    return [grad / op.inputs[0]]


class Abs(UnaryOperation):
    """|x|.  Gradient: g sign(x) (0 at x = 0, as PyTorch)."""

    def compute(self, x):
        return np.abs(x)


def abs(x, name=None):  # noqa: A001 - the contract name, as numpy and TF spell it
    """|x|."""
    return Abs(x, name=name)


@register_gradient(Abs)
def _abs_grad(op, grad):
    return [grad * Sign(op.inputs[0])]


class Sign(UnaryOperation):
    """sign(x): -1, 0 or 1.  Not differentiable (zero almost everywhere)."""

    def compute(self, x):
        return np.sign(x)


def sign(x, name=None):
    """-1, 0 or 1 by the sign of x."""
    return Sign(x, name=name)


not_differentiable(Sign)


class Reciprocal(UnaryOperation):
    """1 / x.  Gradient: -g / x² = -g y²."""

    def compute(self, x):
        return np.reciprocal(x.astype(float_result(x.dtype), copy=False))


def reciprocal(x, name=None):
    """1 / x (a float for integer x, as numpy's true division)."""
    return Reciprocal(x, name=name)


@register_gradient(Reciprocal)
def _reciprocal_grad(op, grad):
    return [negative(grad) * square(op)]


class Floor(UnaryOperation):
    """The largest integer <= x.  Gradient: 0 (piecewise constant, as PyTorch)."""

    def compute(self, x):
        return np.floor(x)


def floor(x, name=None):
    """Round down to an integer value."""
    return Floor(x, name=name)


class Ceil(UnaryOperation):
    """The smallest integer >= x.  Gradient: 0 (piecewise constant, as PyTorch)."""

    def compute(self, x):
        return np.ceil(x)


def ceil(x, name=None):
    """Round up to an integer value."""
    return Ceil(x, name=name)


@register_gradient(Floor)
@register_gradient(Ceil)
def _rounding_grad(op, grad):
    return [zeros_like(grad)]


class Sin(UnaryOperation):
    """sin x.  Gradient: g cos x."""

    def compute(self, x):
        return np.sin(x)


def sin(x, name=None):
    """Sine (radians)."""
    return Sin(x, name=name)


@register_gradient(Sin)
def _sin_grad(op, grad):
    return [grad * Cos(op.inputs[0])]


class Cos(UnaryOperation):
    """cos x.  Gradient: -g sin x."""

    def compute(self, x):
        return np.cos(x)


def cos(x, name=None):
    """Cosine (radians)."""
    return Cos(x, name=name)


@register_gradient(Cos)
def _cos_grad(op, grad):
    return [negative(grad) * Sin(op.inputs[0])]


_erf_each = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf is exact to the last bit


def erf_values(x):
    """erf of every element of the array x (float16/32/64 as numpy's float functions choose)."""
    return np.asarray(_erf_each(x), dtype=float_result(x.dtype))


class Erf(UnaryOperation):
    """The error function erf x = 2/√π ∫₀ˣ e^(-t²) dt.  Gradient: g 2/√π e^(-x²)."""

    def compute(self, x):
        return erf_values(x)


def erf(x, name=None):
    """The error function (GELU's building block)."""
    return Erf(x, name=name)


@register_gradient(Erf)
def _erf_grad(op, grad):
    x = op.inputs[0]
    return [grad * (2.0 / math.sqrt(math.pi)) * exp(negative(square(x)))]


def float_result(dtype):
    """The dtype numpy's float functions (np.sin, ...) return for inputs of `dtype`: int8 -> float16, ..."""
    return np.result_type(dtype, np.float16)


class Cast(UnaryOperation):
    """x converted to `dtype`.  Gradient: g cast back (none for integer results)."""

    def __init__(self, x, dtype, name=None):
        self.target_dtype = Arguments(self, name, x).dtype("dtype", dtype)
        super().__init__(x, name=name)

    def compute(self, x):
        return x.astype(self.target_dtype, copy=False)

    def infer_dtype(self, x):
        return self.target_dtype


def cast(x, dtype, name=None):
    """x converted to dtype (returns x itself when it already has it)."""
    x = as_node(x)
    if x.dtype == Arguments(Cast, name, x).dtype("dtype", dtype):
        return x
    return Cast(x, dtype, name=name)


@register_gradient(Cast)
def _cast_grad(op, grad):
    source = op.inputs[0].dtype
    if not (np.issubdtype(source, np.floating) and np.issubdtype(op.dtype, np.floating)):
        return [None]
    return [cast(grad, source)]


class ZerosLike(UnaryOperation):
    """An array of zeros with x's run-time shape and dtype."""

    def compute(self, x):
        return np.zeros_like(x)


def zeros_like(x, name=None):
    """Zeros with x's run-time shape."""
    return ZerosLike(x, name=name)


class OnesLike(UnaryOperation):
    """An array of ones with x's run-time shape and dtype (seeds backprop)."""

    def compute(self, x):
        return np.ones_like(x)


def ones_like(x, name=None):
    """Ones with x's run-time shape."""
    return OnesLike(x, name=name)


not_differentiable(ZerosLike, OnesLike)
