"""Operator overloading, defined once for graph nodes and eager Tensors.

`install(cls)` gives a class `+ - * / ** @`, unary `- + abs`, indexing, `.T`,
the comparisons `< <= > >=` (boolean results) and a few method forms of ops
(`x.sum()`, `x.reshape(...)`). This module installs them on Node; the eager
package installs the very same functions on Tensor (the operators computing one op
class, `+ - * / ** @` and unary `-`, are the eager runtime's shortcut for that class,
see `connect_eager`). `==` and `!=` are left alone on purpose: nodes live in
lists and dicts, where `==` must stay identity.

numpy ufuncs called on a node (`np.exp(node)`) raise a TinyflowError naming the
tinyflow function to use, except the ones numpy calls for `array + node`, which
become the matching op.
"""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Node
from .elementwise_ops import Add, Divide, Multiply, Power, Subtract
from .matmul import MatMul
from .elementwise_ops import Negative
from . import (abs as _abs, add, argmax, divide, exp, get_item, greater, greater_equal, less, less_equal, log,
               log_softmax, matmul, multiply, negative, power, reduce_max, reduce_mean, reduce_sum, relu, reshape,
               sigmoid, softmax, sqrt, square, subtract, tanh, transpose)


def _binary(fn):
    """The operator `self <op> other` and its reflected form, for op function fn."""
    def forward(self, other):
        return fn(self, other)

    def reflected(self, other):
        return fn(other, self)
    return forward, reflected


_add, _radd = _binary(add)
_sub, _rsub = _binary(subtract)
_mul, _rmul = _binary(multiply)
_truediv, _rtruediv = _binary(divide)
_pow, _rpow = _binary(power)
_matmul, _rmatmul = _binary(matmul)


def _negative(self):
    return negative(self)


# the operators computing one op class: the eager runtime gives them its shortcut for Tensors (connect_eager)
_OP_OPERATORS = {"__add__": (Add, add), "__sub__": (Subtract, subtract), "__mul__": (Multiply, multiply),
                 "__truediv__": (Divide, divide), "__pow__": (Power, power), "__matmul__": (MatMul, matmul),
                 "__neg__": (Negative, negative)}


def connect_eager(tensor_class, operator):
    """Make the operators computing one op class the eager runtime's: `operator(cls, fn)` computes cls at
    once on Tensors and calls fn for anything else, so that `a + b` on Tensors is one Python call.
    Node and Tensor keep sharing each operator (tinyflow/eager/runtime.py calls this when it loads)."""
    for name, (cls, fn) in _OP_OPERATORS.items():
        OPERATORS[name] = method = operator(cls, fn)
        for owner in (Node, tensor_class):
            setattr(owner, name, method)


def _transpose_property(self):
    """The transpose (all axes reversed)."""
    return transpose(self)


def _method(fn, doc):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__, method.__doc__ = fn.__name__, doc
    return method


OPERATORS = {
    "__add__": _add, "__radd__": _radd, "__sub__": _sub, "__rsub__": _rsub,
    "__mul__": _mul, "__rmul__": _rmul, "__truediv__": _truediv, "__rtruediv__": _rtruediv,
    "__pow__": _pow, "__rpow__": _rpow, "__matmul__": _matmul, "__rmatmul__": _rmatmul,
    "__neg__": _negative,
    "__pos__": lambda self: self,
    "__abs__": lambda self: _abs(self),
    "__getitem__": lambda self, key: get_item(self, key),
    "__lt__": lambda self, other: less(self, other),
    "__le__": lambda self, other: less_equal(self, other),
    "__gt__": lambda self, other: greater(self, other),
    "__ge__": lambda self, other: greater_equal(self, other),
    "T": property(_transpose_property),
}

# method forms: x.sum(axis) is tfl.reduce_sum(x, axis), and so on
METHODS = {
    "sum": _method(reduce_sum, "tfl.reduce_sum(self, axis=None, keepdims=False)."),
    "mean": _method(reduce_mean, "tfl.reduce_mean(self, axis=None, keepdims=False)."),
    "max": _method(reduce_max, "tfl.reduce_max(self, axis=None, keepdims=False)."),
    "argmax": _method(argmax, "tfl.argmax(self, axis=None, keepdims=False)."),
    "reshape": _method(lambda x, *shape: reshape(
        x, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape),
        "tfl.reshape(self, shape); x.reshape(2, 3) and x.reshape((2, 3)) both work."),
    "transpose": _method(transpose, "tfl.transpose(self, axes=None)."),
    "exp": _method(exp, "tfl.exp(self)."),
    "log": _method(log, "tfl.log(self)."),
    "sqrt": _method(sqrt, "tfl.sqrt(self)."),
    "square": _method(square, "tfl.square(self)."),
    "abs": _method(_abs, "tfl.abs(self)."),
    "relu": _method(relu, "tfl.relu(self)."),
    "sigmoid": _method(sigmoid, "tfl.sigmoid(self)."),
    "tanh": _method(tanh, "tfl.tanh(self)."),
    "softmax": _method(softmax, "tfl.softmax(self, axis=-1)."),
    "log_softmax": _method(log_softmax, "tfl.log_softmax(self, axis=-1)."),
    "matmul": _method(matmul, "tfl.matmul(self, other)."),
}

# the ufuncs numpy calls for `array <op> node`: they become the op (the node's reflected operator)
_OPERATOR_UFUNCS = {
    np.add: add, np.subtract: subtract, np.multiply: multiply,
    np.true_divide: divide, np.power: power, np.matmul: matmul,
    np.less: less, np.less_equal: less_equal, np.greater: greater,
    np.greater_equal: greater_equal,
}
_TFL_NAMES = {"absolute": "abs", "true_divide": "divide", "fmax": "maximum", "fmin": "minimum"}


def tfl_name_for(ufunc):
    """The tinyflow function doing what a numpy ufunc does, e.g. "tfl.exp", or None."""
    from .. import ops
    name = _TFL_NAMES.get(ufunc.__name__, ufunc.__name__)
    return f"tfl.{name}" if callable(getattr(ops, name, None)) and not name.startswith("_") else None


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
