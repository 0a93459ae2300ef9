"""Operator overloading, defined once for graph nodes and eager Tensors.

`install(cls)` gives a class `+ - * / // % ** @`, unary `- + abs`, indexing, `.T`, the comparisons `< <= > >=`, method
forms of ops (`x.sum()`); this module installs them on Node, the eager package the very same functions on Tensor. Nodes
keep `==` and `!=` as identity on purpose: they live in lists, dicts and sets throughout the engine. numpy ufuncs on a
node (`np.exp(node)`) raise a TinyflowError naming the tfl function to use, except those of `array + node`.
"""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Node
from .elementwise_ops import Add, Divide, Multiply, Negative, Power, Subtract
from .matmul import MatMul
from . import (abs as _abs, add, argmax, divide, exp, floor_divide, get_item, greater, greater_equal, less,
               less_equal, log, log_softmax, matmul, mod, multiply, negative, power, reduce_max, reduce_mean,
               reduce_min, reduce_sum, relu, reshape, sigmoid, softmax, sqrt, square, subtract, tanh, transpose)

# the operators computing one op class: the eager runtime gives them its shortcut for Tensors (connect_eager)
_OP_OPERATORS = {"__add__": (Add, add), "__sub__": (Subtract, subtract), "__mul__": (Multiply, multiply),
                 "__truediv__": (Divide, divide), "__pow__": (Power, power), "__matmul__": (MatMul, matmul),
                 "__neg__": (Negative, negative)}


def connect_eager(tensor_class, operator):
    """Give Node and Tensor the eager runtime's `operator(cls, fn)` for the operators computing one op class: cls at
    once on Tensors (`a + b` is one Python call), fn for anything else (tinyflow/eager/runtime.py calls this)."""
    for name, (cls, fn) in _OP_OPERATORS.items():
        OPERATORS[name] = method = operator(cls, fn)
        for owner in (Node, tensor_class):
            setattr(owner, name, method)


def _reshape(x, *shape):
    """x with a new shape: x.reshape(2, 3) and x.reshape((2, 3)) both work (one entry may be -1)."""
    return reshape(x, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)


# the functions themselves: `a < b` calls less(a, b)
OPERATORS = dict(__neg__=negative, __pos__=lambda self: self, __abs__=_abs, __getitem__=get_item, __lt__=less,
                 __le__=less_equal, __gt__=greater, __ge__=greater_equal,
                 T=property(transpose, doc="The transpose (all axes reversed)."))
for _name, _fn in (("add", add), ("sub", subtract), ("mul", multiply), ("truediv", divide), ("pow", power),
                   ("matmul", matmul), ("mod", mod), ("floordiv", floor_divide)):
    OPERATORS[f"__{_name}__"] = _fn
    OPERATORS[f"__r{_name}__"] = lambda self, other, fn=_fn: fn(other, self)

# method forms: x.sum(axis) is tfl.reduce_sum(x, axis) (the function itself, its doc included), and so on
METHODS = dict((
    ("sum", reduce_sum), ("mean", reduce_mean), ("max", reduce_max), ("min", reduce_min), ("argmax", argmax),
    ("reshape", _reshape), ("transpose", transpose), ("exp", exp), ("log", log), ("sqrt", sqrt), ("square", square),
    ("abs", _abs), ("relu", relu), ("sigmoid", sigmoid), ("tanh", tanh), ("softmax", softmax),
    ("log_softmax", log_softmax), ("matmul", matmul)))

# the ufuncs numpy calls for `array <op> node`: they become the op (the node's reflected operator)
OPERATOR_UFUNCS = {
    np.add: add, np.subtract: subtract, np.multiply: multiply, np.true_divide: divide, np.power: power,
    np.matmul: matmul, np.remainder: mod, np.floor_divide: floor_divide, np.less: less, np.less_equal: less_equal,
    np.greater: greater, np.greater_equal: greater_equal,
}
_TFL_NAMES = {"absolute": "abs", "true_divide": "divide", "fmax": "maximum", "fmin": "minimum"}


def tfl_name_for(ufunc):
    """The tinyflow function doing what a numpy ufunc does, e.g. "tfl.exp", or None."""
    from .. import ops
    name = _TFL_NAMES.get(ufunc.__name__, ufunc.__name__)
    return f"tfl.{name}" if callable(getattr(ops, name, None)) and not name.startswith("_") else None


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    op = OPERATOR_UFUNCS.get(ufunc)
    if op is not None and method == "__call__" and len(inputs) == 2 and not kwargs:
        return op(*inputs)
    name = tfl_name_for(ufunc)
    use = f"use {name}(...) instead of np.{ufunc.__name__}(...)" if name else \
        f"tinyflow has no op for np.{ufunc.__name__}: build it from tfl ops (tfl.exp, tfl.log, ...)"
    raise TinyflowError(f"np.{ufunc.__name__} cannot compute on {self!r}: numpy works on values, and this is "
                        "a graph node whose value exists only when a Session runs it. To build the op in the "
                        f"graph, {use}.")


def install(cls, array_ufunc=_array_ufunc):
    """Give `cls` the operators, comparisons and method forms of ops, and the numpy-ufunc hook."""
    for name, fn in {**OPERATORS, **METHODS}.items():
        setattr(cls, name, fn)
    cls.__array_ufunc__ = array_ufunc


install(Node)
