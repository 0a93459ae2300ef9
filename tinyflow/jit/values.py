"""What converted code carries through branches and loops: nested values, conditions, return values, lists.

A variable may hold a tensor, a number, a nested tuple/list of those, or any other Python object (which a tensor branch
or loop must then leave unchanged). Values that do not exist yet: `Undefined`, a Python value (a variable before its
first assignment, a return value before the `return`), and `UndefinedValue`, a graph node filling a slot that a cond or
loop carries though no path reads it (flags see to it), typed like the value beside it (`resolve`).
"""
import re

import numpy as np

from ..control_flow.subgraph import typeless
from ..nodes import Node, Operation
from ..ops.elementwise_ops import cast
from ..ops.registry import not_differentiable
from ..errors import ConversionError

RETURN_VALUE = "_tfl_retval"  # the converted function's return value (escapes.py)
NUMBERS = (bool, int, float, np.number, np.bool_)


class Unusable:
    """A value converted code may carry but not compute with: using it raises a ConversionError saying why."""

    misuse = ""

    def _fail(self, *args, **kwargs):
        raise ConversionError(self.misuse)

    __array__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __call__ = _fail
    __getitem__ = __matmul__ = __rmatmul__ = __neg__ = __bool__ = __iter__ = __float__ = _fail


class Undefined(Unusable):
    """A variable without a value: not yet assigned, or assigned in only one branch of an `if` on a tensor."""

    def __init__(self, name, site=None):
        self.name, self.site = name, site

    def __repr__(self):
        return f"<undefined variable '{self.name}'>"

    @property
    def misuse(self):
        where = f"{self.site}: " if self.site else ""
        return (f"{where}variable '{self.name}' is assigned in only one branch of an `if` on a tensor, so it has no "
                "value after the `if`; assign it in both branches or before the if")

    __getattr__ = Unusable._fail


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


def flatten(value, dicts=False):
    """(leaves, structure) of a value, walking tuples and lists (and dicts, if asked); the structure is hashable."""
    if isinstance(value, (tuple, list)) or dicts and isinstance(value, dict):
        keys = tuple(value) if isinstance(value, dict) else None
        parts = [flatten(v, dicts) for v in (value.values() if keys is not None else value)]
        return [leaf for leaves, _ in parts for leaf in leaves], (type(value), tuple(s for _, s in parts), keys)
    return [value], None


def rebuild(structure, leaves, into=None):
    """The inverse of flatten (from an iterator of leaves), refilling the lists of `into` in place where it fits."""
    if structure is None:
        return next(leaves)
    kind, parts, keys = structure
    fits = isinstance(into, (list, tuple)) and len(into) == len(parts)
    values = [rebuild(s, leaves, into[i] if fits else None) for i, s in enumerate(parts)]
    if fits and isinstance(into, list):
        into[:] = values
        return into
    return kind(zip(keys, values)) if keys is not None else kind(values)


def describe(value):
    if isinstance(value, Node):
        return f"a tensor of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, Undefined):
        return "no value"
    return f"{type(value).__name__} {value!r}"


def same_value(a, b):
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and odd objects compare ambiguously: treat as different
        return False


def as_bool(test, site):
    """A tensor condition as one boolean value (cast if needed); a ConversionError for several values."""
    if test.dtype != np.bool_:
        test = cast(test, "bool")
    if test.shape is not None and any(d is not None and d != 1 for d in test.shape):
        raise ConversionError(f"{site}: the condition has shape {test.shape}; an `if`/`while` on a tensor needs "
                              "one value. Reduce it first: tfl.reduce_max(c) for 'any', tfl.reduce_min or "
                              "tfl.equal(tfl.reduce_sum(c), c.size) for 'all'")
    return test


def symbolic(site, what):
    """The error for asking a symbolic tensor for its value."""
    return ConversionError(
        f"{site}: {what} of a symbolic tensor inside to_static: while tracing, tensors have no values yet. "
        "Keep the computation in tensors (tfl.cond / tfl.where / an `if` directly on the tensor), or return the "
        "tensor and use its value after the call.")


def returned(value, site):
    """The value of a `return` statement, remembering where it was returned (for mismatch messages)."""
    for leaf in flatten(value)[0]:
        if isinstance(leaf, Node) and getattr(leaf, "return_site", None) is None:
            leaf.return_site = site
    return value


def return_value(value):
    """What the converted function returns: its return value (None if no `return` ran)."""
    return None if isinstance(value, Undefined) or typeless(value) else value


class Lists:
    """The lists among some variables' values, to catch one growing where code runs once, as a graph."""

    def __init__(self, names, values):
        self.lists = [(name, leaf, list(leaf)) for name, value in zip(names, values) for leaf in _lists_in(value)]

    def check(self, site, where):
        for name, array, items in self.lists:
            if len(array) != len(items):
                self.restore()
                raise grows(name, site, where)

    def restore(self):
        """Put back what the lists held (after a trace that failed or is done again)."""
        for _, array, items in self.lists:
            array[:] = items


def grows(name, site, where):
    return ConversionError(
        f"{site}: list '{name}' grows inside {where}, which is traced once, as a graph; a Python list cannot "
        "collect a value per iteration there. Loop with a Python `range` (the loop is unrolled), or keep only the "
        "last value in a variable")


def _lists_in(value):
    if isinstance(value, list):
        yield value
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _lists_in(item)


def shown(name):
    return "the return value" if name == RETURN_VALUE else name


def line_of(site):
    """The line number ending a site ("file.py:12", "cell 5, line 12")."""
    digits = re.search(r"(\d+)$", site)
    return int(digits.group(1)) if digits else 0
