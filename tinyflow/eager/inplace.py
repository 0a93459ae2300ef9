"""In-place ops on Tensors: add_, sub_, mul_, div_, zero_, fill_, x[idx] = v (and +=, -=, *=, /=).

An in-place op is the ordinary op on a snapshot of the tensor (`old`); the tensor takes the result's value and
grad_fn, and its version stamp moves on: ops that saved it find a newer stamp at backward time and raise the version
error if their gradient needs that value (autograd.py), as in PyTorch. The value array is replaced, never written into.
"""
import operator

import numpy as np

from ..errors import TinyflowError
from ..nodes import OP_TYPES
from ..ops import cast
from ..ops.array_ops import normalize_key
from .grad_mode import GradMode
from .autograd import changed_in_place
from .runtime import change_phrase
from .tensor import Tensor, make


def apply_inplace(x, name, compute):
    """Replace x's value by compute(old) where `old` is x before the change; returns x."""
    if GradMode.enabled and x.requires_grad and x.grad_fn is None:
        raise TinyflowError(
            f"{name} would change a leaf tensor that requires grad in place, which would make its gradient "
            f"meaningless. Update parameters inside `with tfl.no_grad():` (e.g. w.sub_(lr * w.grad)), or "
            f"compute a new tensor (y = x + v).")
    old = make(x._data, x.requires_grad, x.grad_fn)
    old._version, old._owner = x._version, x._owner
    result = compute(old)
    if not isinstance(result, Tensor):
        result = make(np.asarray(result))
    if result.shape != x.shape:
        raise TinyflowError(f"{name} cannot change a tensor of shape {x.shape} into a result of shape "
                            f"{result.shape}: an in-place op keeps the tensor's shape (the other operand must "
                            "broadcast to it)")
    if result.dtype != x.dtype:
        result = cast(result, x.dtype)
    changed_in_place(x, result._data)
    fn = result.grad_fn
    if old.grad_fn is not None:  # the op that made x's old value: its saved output is stale now
        old.grad_fn._changed_by = change_phrase(fn)
    if fn is not None:
        x.grad_fn, x.requires_grad = fn, True
        fn._epoch = x._version
    return x


def _arithmetic(name, symbol, combine):
    """The in-place method `name`: self <symbol>= other."""
    def method(self, other):
        return apply_inplace(self, name, lambda old: combine(old, other))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"self {symbol}= other, in place; returns self."
    return method


# by the name Python's AST gives each operator: to_static turns `a += v` into the same op (jit/inplace_tracing.py)
ARITHMETIC = {"Add": ("add_", "+", operator.add), "Sub": ("sub_", "-", operator.sub),
              "Mult": ("mul_", "*", operator.mul), "Div": ("div_", "/", operator.truediv)}
add_, sub_, mul_, div_ = (_arithmetic(*entry) for entry in ARITHMETIC.values())


def zero_(self):
    """Set every entry to 0, in place (no gradient flows to the old value); returns self."""
    return apply_inplace(self, "zero_", lambda old: old * 0.0)


def fill_(self, value):
    """Set every entry to `value`, in place; returns self."""
    return apply_inplace(self, "fill_", lambda old: old * 0.0 + value)


def setitem(self, key, value):
    """x[key] = value, in place; the gradient reaches the kept entries of x and every entry of value."""
    if isinstance(key, Tensor):
        key = key.numpy()
    key = normalize_key(key)

    def compute(old):
        region_shape = old._data[key].shape
        mask = np.zeros(old.shape, dtype=old.dtype)
        mask[key] = 1
        filled = value + make(np.zeros(region_shape, old.dtype))  # value broadcast to the region
        return old * (1 - mask) + OP_TYPES["GetItemGrad"](filled, old, key)
    return apply_inplace(self, "x[...] = v", compute)


for _method in (add_, sub_, mul_, div_, zero_, fill_):  # Tensor's in-place methods
    setattr(Tensor, _method.__name__, _method)
Tensor.__setitem__ = setitem
Tensor.__iadd__, Tensor.__isub__, Tensor.__imul__, Tensor.__itruediv__ = add_, sub_, mul_, div_
