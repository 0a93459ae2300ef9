"""Checks for the non-tensor arguments of ops and source nodes (axes, window sizes, dtypes...), run when built: an op's
`__init__` passes each through `Arguments(self, name, *inputs)`, which returns it in normal form or raises ArgumentError
naming the op, node, inputs, argument and value, and how to fix it; `infer_shape` then reads what `__init__` stored."""
import math
import numbers
import reprlib

import numpy as np

from .errors import ArgumentError

_SHORT = reprlib.Repr()
_SHORT.maxother = _SHORT.maxstring = 60
_SHORT.maxlist = _SHORT.maxtuple = 6


PADDING_MODES = ("valid", "same", "same_upper", "same_lower")


def rank_of(x):
    """The static rank of a node or value (None when unknown)."""
    shape = x.shape if hasattr(x, "shape") else np.shape(x)
    return None if shape is None else len(shape)


def _sequence(value):
    """A list or tuple as it is, a 1-D numpy array as a list; anything else as None."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return list(value)
    return value if isinstance(value, (tuple, list)) else None


def is_int(value):
    """True for Python and numpy integers, but not for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


class Arguments:
    """The argument checks of one op being built; errors name the op, its node name and its inputs."""

    def __init__(self, op, name=None, *inputs):
        who = f"{op.op_type} {name!r}" if name else op.op_type
        names = [f"'{x.name}' (shape {x.shape})" for x in inputs if hasattr(x, "name") and hasattr(x, "graph")]
        self.who = who + (f" on {', '.join(names)}" if names else "")

    def fail(self, argument, value, problem, fix):
        """Raise ArgumentError: `<op> '<name>' on '<input>': <argument>=<value> <problem>; <fix>`."""
        raise ArgumentError(f"{self.who}: {argument}={_SHORT.repr(value)} {problem}; {fix}")

    def integer(self, argument, value, minimum=None):
        """An int (not a bool or float), at least `minimum` if given."""
        if not is_int(value):
            self.fail(argument, value, "is not an integer", f"pass a Python int{_at_least(minimum)}")
        if minimum is not None and value < minimum:
            self.fail(argument, value, f"is below {minimum}", f"pass an int{_at_least(minimum)}")
        return int(value)

    def number(self, argument, value, low=-math.inf, high=math.inf, high_open=False):
        """A finite real number (not a bool) in [low, high] (or [low, high) when `high_open`)."""
        bracket = ")" if high_open else "]"
        fix = f"pass a finite number in [{low}, {high}{bracket}"
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            self.fail(argument, value, "is not a number", fix)
        value = float(value)
        if not math.isfinite(value) or value < low or value > high or (high_open and value == high):
            self.fail(argument, value, "is out of range", fix)
        return value

    def flag(self, argument, value):
        """A bool (Python or numpy)."""
        if not isinstance(value, (bool, np.bool_)):
            self.fail(argument, value, "is not a bool", "pass True or False")
        return bool(value)

    def axis(self, argument, value, rank):
        """One axis, negatives counted from the end; normalised to [0, rank) when the rank is known."""
        return self.integer(argument, value) if rank is None else self.axes(argument, value, rank, single=True)[0]

    def axes(self, argument, value, rank, single=False):
        """None (every axis), an int or a sequence of distinct ints: a sorted tuple in [0, rank)."""
        if value is None and not single:
            return None if rank is None else tuple(range(rank))
        items = (value,) if is_int(value) or single else _sequence(value)
        if items is None or not all(is_int(a) for a in items):
            self.fail(argument, value, "is not " + ("an int" if single else "None, an int or a tuple of ints"),
                      "pass axis indices as Python ints, e.g. 0 or (0, 1)")
        if rank is None:
            self.fail(argument, value, "needs an input of known rank (its shape is unknown)",
                      "give the input node a shape, or leave the axis out to use every axis")
        for a in items:
            if not -rank <= a < rank:
                self.fail(argument, value, f"is invalid: axis {a} is out of range for an input of rank {rank}",
                          f"use axes in [{-rank}, {rank - 1}]")
        normal = sorted(int(a) % rank for a in items)
        if len(set(normal)) != len(normal):
            self.fail(argument, value, "repeats an axis", "name each axis once")
        return tuple(normal)

    def permutation(self, argument, value, rank):
        """None (reverse the axes) or each axis of the input exactly once, in the new order."""
        if value is None:
            return None if rank is None else tuple(reversed(range(rank)))
        items = _sequence(value)
        if items is None or not all(is_int(a) for a in items):
            self.fail(argument, value, "is not a tuple of ints", "pass a permutation such as (1, 0)")
        if rank is None:
            self.fail(argument, value, "needs an input of known rank (its shape is unknown)",
                      "give the input node a shape, or pass axes=None to reverse them")
        if len(items) != rank or sorted(int(a) % rank if -rank <= a < rank else a for a in items) != \
                list(range(rank)):
            self.fail(argument, value, f"is not a permutation of the {rank} axes of the input",
                      f"name every axis in [{-rank}, {rank - 1}] exactly once, "
                      f"e.g. {tuple(reversed(range(rank)))}")
        return tuple(int(a) % rank for a in items)

    def ints(self, argument, value, count, minimum):
        """An int or a sequence of `count` ints (one per spatial axis), each at least `minimum`: a tuple."""
        items = (value,) * count if is_int(value) else _sequence(value)
        if not (items is not None and len(items) == count and all(is_int(v) for v in items)):
            self.fail(argument, value, f"is not an int or a sequence of {count} ints",
                      f"pass an int{_at_least(minimum)} or {count} of them, one per spatial axis")
        if min(items, default=minimum) < minimum:
            self.fail(argument, value, f"is below {minimum}", f"pass ints{_at_least(minimum)}")
        return tuple(int(v) for v in items)

    def padding(self, argument, value, count, modes=PADDING_MODES):
        """Zero padding of `count` spatial axes: an int, one int per axis, one (before, after) pair per axis, or
        a mode ('valid', 'same' = 'same_upper', 'same_lower'). Returns ((before, after), ...) or the mode."""
        if isinstance(value, str):
            mode = {"same": "same_upper"}.get(value.lower(), value.lower())
            if mode not in modes:
                self.fail(argument, value, "is not a padding mode", f"use one of {', '.join(modes)} or ints")
            return mode
        items = (value,) * count if is_int(value) else _sequence(value)
        if items is not None and len(items) == count:
            pairs = [(v, v) if is_int(v) else _sequence(v) for v in items]
            if all(p is not None and len(p) == 2 and all(is_int(v) for v in p) for p in pairs):
                if min(min(p) for p in pairs) < 0:
                    self.fail(argument, value, "is negative", "pad by 0 or more on each side")
                return tuple((int(a), int(b)) for a, b in pairs)
        self.fail(argument, value, "is not a padding",
                  f"pass an int, {count} ints (one per spatial axis), {count} (before, after) pairs, or one of "
                  f"{', '.join(repr(m) for m in modes)}")

    def new_shape(self, argument, value):
        """A reshape target: an int or a sequence of sizes >= 0, with at most one -1 (inferred)."""
        target = (value,) if is_int(value) else _sequence(value)
        if target is None or not all(is_int(d) for d in target):
            self.fail(argument, value, "is not a tuple of ints", "pass the new shape as ints, e.g. (2, -1)")
        if sum(d == -1 for d in target) > 1 or any(d < -1 for d in target):
            self.fail(argument, value, "is not a valid target",
                      "a reshape target may contain one -1 and otherwise non-negative sizes")
        return tuple(int(d) for d in target)

    def numeric_array(self, argument, value):
        """`value` as a numpy array of bools, ints or floats."""
        try:
            array = np.array(value)
        except (TypeError, ValueError, OverflowError) as err:
            self.fail(argument, value, f"cannot become an array ({err})",
                      "pass numbers, nested lists of equal lengths, or a numpy array")
        if array.dtype.kind not in "biuf":
            hint = "; did you mean the node itself rather than its name?" if isinstance(value, str) else ""
            self.fail(argument, value, f"has dtype {array.dtype}, not bools, ints or floats",
                      "pass numbers or numpy arrays of numbers (or a graph node)" + hint)
        return array

    def dtype(self, argument, value):
        """A bool, integer or float dtype (what every backend computes with)."""
        try:
            dtype = np.dtype(value)
        except (TypeError, ValueError):
            dtype = None
        if value is None or dtype is None or dtype.kind not in "biuf":
            self.fail(argument, value, "is not a bool, integer or float dtype",
                      "pass e.g. 'float32', 'float64', 'int64', 'bool' or np.float32")
        return dtype


def _at_least(minimum):
    return "" if minimum is None else f" >= {minimum}"
