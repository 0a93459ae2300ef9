"""Values that do not exist yet: a variable before its first assignment, a return value before the `return`.

`Undefined` is a Python value (using it is a ConversionError naming the line); `UndefinedValue` a graph node filling a
slot that a cond or loop carries though no path reads it (flags see to it), typed like the value beside it (`resolve`).
"""
import numpy as np

from ..nodes import Node, Operation
from ..ops.registry import not_differentiable
from ..errors import ConversionError


class Undefined:
    """A variable without a value: not yet assigned, or assigned in only one branch of an `if` on a tensor."""

    def __init__(self, name, site=None):
        self.name, self.site = name, site

    def __repr__(self):
        return f"<undefined variable '{self.name}'>"

    def _fail(self, *args, **kwargs):
        where = f"{self.site}: " if self.site else ""
        raise ConversionError(f"{where}variable '{self.name}' is assigned in only one branch of an `if` on a "
                              "tensor, so it has no value after the `if`; assign it in both branches or before the if")

    __array__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __call__ = _fail
    __getattr__ = __getitem__ = __matmul__ = __rmatmul__ = __neg__ = __bool__ = __iter__ = _fail


class UndefinedValue(Operation):
    """A placeholder value no path reads (see the module docstring): zeros of its type, once it has one."""

    def __init__(self, value_shape=None, value_dtype=None, name=None):
        self.value_shape = value_shape
        self.value_dtype = None if value_dtype is None else np.dtype(value_dtype)
        super().__init__(name=name)

    @property
    def typeless(self):
        """True until `resolve` gave it a type."""
        return self.dtype is None

    def resolve(self, shape, dtype):
        """Take the type of the value this one stands next to (only before anything reads it)."""
        self.value_shape, self.value_dtype = shape, dtype
        self.shape, self.dtype = shape, dtype

    def infer_shape(self):
        return self.value_shape

    def infer_dtype(self):
        return self.value_dtype

    def compute(self):
        if self.dtype is None:
            return None
        return np.zeros(tuple(0 if d is None else d for d in self.shape or ()), self.dtype)


not_differentiable(UndefinedValue)


def is_typeless(value):
    """An undefined graph value that has no type yet (an UndefinedValue, or a loop variable standing for one)."""
    return isinstance(value, Node) and getattr(value, "typeless", False)
