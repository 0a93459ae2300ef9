"""Operator overloading, defined once for graph nodes and eager Tensors.

`install(cls)` gives a class `+ - * / ** @`, unary `- + abs`, indexing, `.T`,
the comparisons `< <= > >=` (boolean results) and a few method forms of ops
(`x.sum()`, `x.reshape(...)`). This module installs them on Node; the eager
package installs the very same functions on Tensor. `==` and `!=` are left
alone on purpose: nodes live in lists and dicts, where `==` must stay identity.

numpy ufuncs called on a node (`np.exp(node)`) raise a TinyflowError naming the
tinyflow function to use, except the ones numpy calls for `array + node`, which
become the matching op.
"""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Node
from . import activations, array_ops, math_ops, reductions
from .matmul import matmul as _matmul_fn
from .softmax import log_softmax as _log_softmax_fn, softmax as _softmax_fn


def _binary(fn):
    def forward(self, other):
        return fn(self, other)

    def reflected(self, other):
        return fn(other, self)
    return forward, reflected


_add, _radd = _binary(math_ops.add)
_sub, _rsub = _binary(math_ops.subtract)
_mul, _rmul = _binary(math_ops.multiply)
_truediv, _rtruediv = _binary(math_ops.divide)
_pow, _rpow = _binary(math_ops.power)
_matmul, _rmatmul = _binary(_matmul_fn)


def _transpose_property(self):
    """The transpose (all axes reversed)."""
    return array_ops.transpose(self)


def _method(fn, doc):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__, method.__doc__ = fn.__name__, doc
    return method


OPERATORS = {
    "__add__": _add, "__radd__": _radd, "__sub__": _sub, "__rsub__": _rsub,
    "__mul__": _mul, "__rmul__": _rmul, "__truediv__": _truediv, "__rtruediv__": _rtruediv,
    "__pow__": _pow, "__rpow__": _rpow, "__matmul__": _matmul, "__rmatmul__": _rmatmul,
    "__neg__": lambda self: math_ops.negative(self),
    "__pos__": lambda self: self,
    "__abs__": lambda self: math_ops.abs(self),
    "__getitem__": lambda self, key: array_ops.get_item(self, key),
    "__lt__": lambda self, other: math_ops.less(self, other),
    "__le__": lambda self, other: math_ops.less_equal(self, other),
    "__gt__": lambda self, other: math_ops.greater(self, other),
    "__ge__": lambda self, other: math_ops.greater_equal(self, other),
    "T": property(_transpose_property),
}

# method forms: x.sum(axis) is tfl.reduce_sum(x, axis), and so on
METHODS = {
    "sum": _method(reductions.reduce_sum, "tfl.reduce_sum(self, axis=None, keepdims=False)."),
    "mean": _method(reductions.reduce_mean, "tfl.reduce_mean(self, axis=None, keepdims=False)."),
    "max": _method(reductions.reduce_max, "tfl.reduce_max(self, axis=None, keepdims=False)."),
    "argmax": _method(reductions.argmax, "tfl.argmax(self, axis=-1)."),
    "reshape": _method(lambda x, *shape: array_ops.reshape(
        x, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape),
        "tfl.reshape(self, shape); x.reshape(2, 3) and x.reshape((2, 3)) both work."),
    "transpose": _method(array_ops.transpose, "tfl.transpose(self, axes=None)."),
    "exp": _method(math_ops.exp, "tfl.exp(self)."),
    "log": _method(math_ops.log, "tfl.log(self)."),
    "sqrt": _method(math_ops.sqrt, "tfl.sqrt(self)."),
    "square": _method(math_ops.square, "tfl.square(self)."),
    "abs": _method(math_ops.abs, "tfl.abs(self)."),
    "relu": _method(activations.relu, "tfl.relu(self)."),
    "sigmoid": _method(activations.sigmoid, "tfl.sigmoid(self)."),
    "tanh": _method(activations.tanh, "tfl.tanh(self)."),
    "softmax": _method(_softmax_fn, "tfl.softmax(self, axis=-1)."),
    "log_softmax": _method(_log_softmax_fn, "tfl.log_softmax(self, axis=-1)."),
    "matmul": _method(_matmul_fn, "tfl.matmul(self, other)."),
}

# the ufuncs numpy calls for `array <op> node`: they become the op (the node's reflected operator)
_OPERATOR_UFUNCS = {
    np.add: math_ops.add, np.subtract: math_ops.subtract, np.multiply: math_ops.multiply,
    np.true_divide: math_ops.divide, np.power: math_ops.power, np.matmul: _matmul_fn,
    np.less: math_ops.less, np.less_equal: math_ops.less_equal, np.greater: math_ops.greater,
    np.greater_equal: math_ops.greater_equal,
}
_TFL_NAMES = {"absolute": "abs", "true_divide": "divide", "fmax": "maximum", "fmin": "minimum"}


def tfl_name_for(ufunc):
    """The tinyflow function doing what a numpy ufunc does, e.g. "tfl.exp", or None."""
    import tinyflow
    name = _TFL_NAMES.get(ufunc.__name__, ufunc.__name__)
    return f"tfl.{name}" if name in getattr(tinyflow, "__all__", ()) else None


def ufunc_hint(ufunc, operand):
    """The message for a numpy ufunc applied to a symbolic value."""
    name = tfl_name_for(ufunc)
    use = f"use {name}(...) instead of np.{ufunc.__name__}(...)" if name else \
        f"tinyflow has no op for np.{ufunc.__name__}: build it from tfl ops (tfl.exp, tfl.log, ...)"
    return (f"np.{ufunc.__name__} cannot compute on {operand!r}: numpy works on values, and this is a "
            f"graph node whose value exists only when a Session runs it. To build the op in the graph, {use}.")


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    op = _OPERATOR_UFUNCS.get(ufunc)
    if op is not None and method == "__call__" and len(inputs) == 2 and not kwargs:
        return op(*inputs)
    raise TinyflowError(ufunc_hint(ufunc, self))


def install(cls, array_ufunc=_array_ufunc):
    """Give `cls` the operators, comparisons and method forms of ops, and the numpy-ufunc hook."""
    for name, fn in {**OPERATORS, **METHODS}.items():
        setattr(cls, name, fn)
    cls.__array_ufunc__ = array_ufunc


install(Node)
