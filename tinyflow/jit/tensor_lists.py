"""Lists appended to inside a tensor loop: the loop collects the value per iteration on a stack (TF's TensorArray).

    ys = []
    for x in xs:              # a loop over a tensor: its body runs once, as a graph
        h = cell(x, h)
        ys.append(h)          # the loop pushes h at every iteration (WhileLoop.record)
    out = tfl.concat(ys, 0)   # ys: its items before the loop, then one Stacked item (the rows of all iterations)

The list stays the same object (every name, attribute or argument holding it sees the values):
after the loop it holds a `Stacked` item standing for the rows. tfl.concat / tfl.stack /
tfl.add_n of it, len(ys), ys[i] and `for y in ys` work as on the list eager code builds;
gradients flow through the stack (StackToTensor's gradient is a stack of rows, which seeds
the appended value at each iteration).
"""
import numpy as np

from ..control_flow.sequences import Length
from ..control_flow.stacks import StackToTensor
from ..ops.indexing import gather
from ..nodes import Node
from .errors import ConversionError


class Stacked:
    """The values a tensor loop appended to a list, one row per iteration (an item of that list)."""

    def __init__(self, rows):
        self.rows = rows

    def __repr__(self):
        return f"<the rows a tensor loop appended: {self.rows!r}>"

    def __array__(self, *args, **kwargs):
        raise ConversionError("this list holds the values a loop over a tensor appended, stacked (their number is "
                              "known at run time only); use it through tfl.stack(ys), tfl.concat(ys, 0), "
                              "tfl.add_n(ys), len(ys), ys[i] or `for y in ys` inside the converted function")

    __float__ = __bool__ = __iter__ = __add__ = __radd__ = __mul__ = __rmul__ = __array__


class Guarded:
    """A value appended after a `break` on a tensor (escapes.py): `valid` tells whether the append ran; the tensor
    loop that collects it drops the last iteration's row when it did not (a break ends the loop)."""

    def __init__(self, value, valid):
        self.value, self.valid = value, valid

    def __array__(self, *args, **kwargs):
        raise ConversionError("a list got a value appended after a `break` on a tensor, in a loop that is not a loop "
                              "over a tensor; loop over a tensor (tfl.range(n)), or append before the break")

    __float__ = __bool__ = __iter__ = __add__ = __radd__ = __mul__ = __rmul__ = __array__


def collected(values):
    """Whether a list holds values a tensor loop appended."""
    return isinstance(values, list) and any(isinstance(v, Stacked) for v in values)


def stack_collected(loop_op, values, appended):
    """Append to `values` (in place) the Stacked rows of `appended`, the node (or Guarded node) of the loop body
    a loop collects."""
    def rows(node):
        stack = loop_op.output(loop_op.stack_index(loop_op.record(node)), name="collected")
        return StackToTensor(stack, node.shape, node.dtype, name="stacked")
    if not isinstance(appended, Guarded):
        values.append(Stacked(rows(appended)))
        return
    from ..control_flow import cond
    from ..ops.elementwise_ops import cast, equal
    from ..ops.reductions import reduce_sum
    every, valid = rows(appended.value), cast(rows(appended.valid), "int64")
    complete = equal(reduce_sum(valid), Length(valid))  # no break skipped the last iteration's append
    values.append(Stacked(cond(complete, lambda: every, lambda: every[:-1])))


def as_tensor(values):
    """All the values of a collected list, stacked on a new first axis."""
    from ..ops.array_ops import concat
    parts = [v.rows if isinstance(v, Stacked) else v[None] for v in values]
    return parts[0] if len(parts) == 1 else concat(parts, 0)


def length(values):
    """The number of values of a collected list, a tensor."""
    total = 0
    for v in values:
        total = total + (Length(v.rows) if isinstance(v, Stacked) else 1)
    return total


def item(values, index):
    """values[index] of a collected list (one integer index)."""
    if isinstance(index, (int, np.integer)) and 0 <= index < len(values) and \
            not any(isinstance(v, Stacked) for v in values[:index + 1]):
        return values[index]
    if isinstance(index, (int, np.integer, Node)):
        if isinstance(index, (int, np.integer)) and index < 0:
            index = length(values) + int(index)
        return gather(as_tensor(values), index)
    raise ConversionError(f"a list a tensor loop appended to takes one integer index, got {index!r}; "
                          "use tfl.stack(ys) and index the tensor")


# -------------------------------------------------------- functions that take a list
def _concat(fn):
    def concat(xs, axis=0, name=None):
        if not collected(xs):
            return fn(xs, axis, name=name)
        from ..ops.array_ops import reshape
        parts = []
        for v in xs:
            rows = v.rows if isinstance(v, Stacked) else None
            if rows is not None and (axis != 0 or rows.shape is None or len(rows.shape) < 2
                                     or None in rows.shape[2:]):
                raise ConversionError("tfl.concat of a list a tensor loop appended to works along axis 0 of values "
                                      f"whose other dimensions are known (got values of shape {rows.shape[1:]} and "
                                      f"axis {axis}); use tfl.stack(ys) and reshape it")
            parts.append(v if rows is None else reshape(rows, (-1,) + tuple(rows.shape[2:])))
        return fn(parts, 0, name=name) if len(parts) > 1 else parts[0]
    return concat


def _stack(fn):
    def stack(xs, axis=0, name=None):
        if not collected(xs):
            return fn(xs, axis, name=name)
        from ..ops.array_ops import transpose
        full = as_tensor(xs)
        if axis == 0:
            return full
        rank = len(full.shape)
        axis = axis % rank
        return transpose(full, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, rank)))
    return stack


def _add_n(fn):
    def add_n(xs, name=None):
        if not collected(xs):
            return fn(xs, name=name)
        from ..ops.reductions import reduce_sum
        parts = [reduce_sum(v.rows, axis=0) if isinstance(v, Stacked) else v for v in xs]
        return fn(parts, name=name) if len(parts) > 1 else parts[0]
    return add_n


def list_aware(fn):
    """tfl.concat / tfl.stack / tfl.add_n also taking a collected list; None for any other function."""
    from ..ops.array_ops import add_n, concat
    from ..ops.shape_ops import stack
    try:
        make = {concat: _concat, add_n: _add_n, stack: _stack}.get(fn)
    except TypeError:  # an unhashable callable
        return None
    return None if make is None else make(fn)
