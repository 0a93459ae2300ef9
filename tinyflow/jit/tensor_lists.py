"""Lists and builtins in converted code: a tensor loop collects what a list gets appended on a stack (TF's TensorArray).

    ys = []
    for x in xs:              # a loop over a tensor: its body runs once, as a graph
        h = cell(x, h)
        ys.append(h)          # the loop pushes h at every iteration (WhileLoop.record)
    out = tfl.concat(ys, 0)   # ys: its items before the loop, then one Stacked item (the rows of all iterations)

The list stays the same object (every name holding it sees the values). tfl.concat / stack / add_n of it, len(ys), ys[i]
and `for y in ys` work as on the list eager code builds, gradients included (StackToTensor's gradient: a stack of rows).
enumerate / zip / range / len and x[i] take tensors too.
"""
import builtins

import numpy as np

from ..control_flow.sequences import Length, Sequence, enumerated, length as tensor_length, range as tensor_range, \
    rows, zipped
from ..control_flow import cond
from ..control_flow.stacks import StackToTensor
from ..nodes import Node
from ..ops.array_ops import add_n, concat, reshape, transpose
from ..ops.elementwise_ops import cast, equal
from ..ops.indexing import gather
from ..ops.reductions import reduce_sum
from ..ops.shape_ops import stack
from ..errors import ConversionError
from .values import Unusable


class Stacked(Unusable):
    """The values a tensor loop appended to a list, one row per iteration (an item of that list)."""

    misuse = ("this list holds the values a loop over a tensor appended, stacked (their number is known at run time "
              "only); use it through tfl.stack(ys), tfl.concat(ys, 0), tfl.add_n(ys), len(ys), ys[i] or `for y in "
              "ys` inside the converted function")

    def __init__(self, rows):
        self.rows = rows

    def __repr__(self):
        return f"<the rows a tensor loop appended: {self.rows!r}>"


class Guarded(Unusable):
    """A value appended after a `break` on a tensor, and whether the append ran (else the loop drops its last row)."""

    misuse = ("a list got a value appended after a `break` on a tensor, in a loop that is not a loop over a tensor; "
              "loop over a tensor (tfl.range(n)), or append before the break")

    def __init__(self, value, valid):
        self.value, self.valid = value, valid


def collected(values):
    """Whether a list holds values a tensor loop appended."""
    return isinstance(values, list) and any(isinstance(v, Stacked) for v in values)


def stack_collected(loop_op, values, appended):
    """Append to `values` the Stacked rows of `appended`, the (Guarded) node of the loop's body that it collects."""
    def per_iteration(node):
        stack_ = loop_op.output(loop_op.stack_index(loop_op.record(node)), name="collected")
        return StackToTensor(stack_, node.shape, node.dtype, name="stacked")
    if isinstance(appended, Guarded):
        every, valid = per_iteration(appended.value), cast(per_iteration(appended.valid), "int64")
        complete = equal(reduce_sum(valid), Length(valid))  # no break skipped the last iteration's append
        values.append(Stacked(cond(complete, lambda: every, lambda: every[:-1])))
    else:
        values.append(Stacked(per_iteration(appended)))


def as_tensor(values):
    """All the values of a collected list, stacked on a new first axis."""
    parts = [v.rows if isinstance(v, Stacked) else v[None] for v in values]
    return parts[0] if len(parts) == 1 else concat(parts, 0)


def _length(values):
    """len() of a collected list (a tensor), of a tensor, or of any Python value."""
    if collected(values):
        return sum((Length(v.rows) if isinstance(v, Stacked) else 1 for v in values), 0)
    return tensor_length(values) if isinstance(values, Node) else builtins.len(values)


def convert_subscript(value, key, site):
    """`value[key]`; a tensor index (a loop's counter) picks that element along the first axis (gather)."""
    if collected(value):
        number = isinstance(key, (int, np.integer))
        if number and 0 <= key < len(value) and not any(isinstance(v, Stacked) for v in value[:key + 1]):
            return value[key]
        if not (number or isinstance(key, Node)):
            raise ConversionError(f"{site}: a list a tensor loop appended to takes one integer index, got {key!r}; "
                                  "use tfl.stack(ys) and index the tensor")
        return gather(as_tensor(value), _length(value) + int(key) if number and key < 0 else key)
    if isinstance(key, Node) and isinstance(value, Node):
        if key.shape is not None and len(key.shape) != 0:
            raise ConversionError(f"{site}: indexing a tensor with a tensor of shape {key.shape}; inside to_static a "
                                  "tensor index must be one integer (use tfl.gather for several)")
        return gather(value, key)
    if isinstance(key, Node) and isinstance(value, (list, tuple, str, np.ndarray)):
        raise ConversionError(f"{site}: indexing a {type(value).__name__} with a tensor (a tensor loop's counter is a "
                              "tensor); make it a tensor first, e.g. tfl.stack(values), or loop with a Python range")
    if isinstance(key, tuple) and isinstance(value, Node) and any(isinstance(k, Node) for k in key):
        raise ConversionError(f"{site}: a tensor index inside a tuple index (x[i, j] with i or j a tensor); write "
                              "x[i][j], one axis at a time")
    return value[key]


# -------------------------------------------------------- functions that take a tensor or a collected list
def tensor_sequence(iterable):
    """What a `for` over a tensor, a collected list or a tensor range steps through; None for a Python iterable."""
    if collected(iterable):
        iterable = as_tensor(iterable)
    return iterable if isinstance(iterable, Sequence) else rows(iterable) if isinstance(iterable, Node) else None


def _enumerate(iterable, start=0):
    sequence = tensor_sequence(iterable)
    return builtins.enumerate(iterable, start) if sequence is None else enumerated(sequence, start)


def _zip(*iterables):
    sequences = [tensor_sequence(i) for i in iterables]
    if all(s is None for s in sequences):
        return builtins.zip(*iterables)
    if any(s is None for s in sequences):
        raise ConversionError("zip() of a tensor and a Python iterable inside to_static: a loop over a tensor "
                              "cannot step through a Python list; make both tensors (tfl.Constant(list)) or index "
                              "the tensor inside a Python loop")
    return zipped(sequences)


def _concat(xs, axis=0, name=None):
    parts = []
    for v in xs:
        rows = v.rows if isinstance(v, Stacked) else None
        if rows is not None and (axis != 0 or rows.shape is None or len(rows.shape) < 2 or None in rows.shape[2:]):
            raise ConversionError("tfl.concat of a list a tensor loop appended to works along axis 0 of values "
                                  f"whose other dimensions are known (got values of shape {rows.shape[1:]} and "
                                  f"axis {axis}); use tfl.stack(ys) and reshape it")
        parts.append(v if rows is None else reshape(rows, (-1,) + tuple(rows.shape[2:])))
    return concat(parts, 0, name=name) if len(parts) > 1 else parts[0]


def _stack(xs, axis=0, name=None):
    full = as_tensor(xs)
    order = list(range(1, len(full.shape)))
    order.insert(axis % len(full.shape), 0)  # the iterations' axis moves to `axis`
    return transpose(full, tuple(order)) if axis else full


def _add_n(xs, name=None):
    parts = [reduce_sum(v.rows, axis=0) if isinstance(v, Stacked) else v for v in xs]
    return add_n(parts, name=name) if len(parts) > 1 else parts[0]


def _unless_collected(op, on_list):
    """`op`, but `on_list` when its first argument is a collected list."""
    return lambda xs, *args, **kwargs: (on_list if collected(xs) else op)(xs, *args, **kwargs)


_TENSOR_AWARE = {builtins.enumerate: _enumerate, builtins.zip: _zip, builtins.range: tensor_range,
                 builtins.len: _length, concat: _unless_collected(concat, _concat),
                 stack: _unless_collected(stack, _stack), add_n: _unless_collected(add_n, _add_n)}


def tensor_aware(fn):
    """enumerate / zip / range / len taking tensors, tfl.concat / stack / add_n taking collected lists; else None."""
    try:
        return _TENSOR_AWARE.get(fn)
    except TypeError:  # an unhashable callable
        return None
