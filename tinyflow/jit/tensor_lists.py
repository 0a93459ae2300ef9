"""Lists appended to inside a tensor loop: the loop collects the value per iteration on a stack (TF's TensorArray).

    ys = []
    for x in xs:              # a loop over a tensor: its body runs once, as a graph
        h = cell(x, h)
        ys.append(h)          # the loop pushes h at every iteration (WhileLoop.record)
    out = tfl.concat(ys, 0)   # ys is a TensorList: its items before the loop, then one stacked tensor

After the loop `ys` is a TensorList. tfl.concat / tfl.stack / tfl.add_n of it, len(ys), ys[i]
and `for y in ys` work as on the list eager code builds; gradients flow through the stack
(StackToTensor's gradient is a stack of rows, which seeds the appended value at each iteration).
"""
import numpy as np

from ..control_flow.sequences import Length
from ..ops.indexing import gather
from ..control_flow.stacks import StackToTensor
from ..nodes import Node
from .errors import ConversionError


class TensorList:
    """A Python list a tensor loop appended to: `items` (as before the loop), then `stacked` (one row per iteration)."""

    def __init__(self, items, stacked):
        self.items, self.stacked = list(items), stacked

    def __repr__(self):
        return f"<TensorList: {len(self.items)} item(s), then {self.stacked!r}>"

    def as_tensor(self):
        """All the values, stacked on a new first axis."""
        from ..ops.array_ops import concat
        if not self.items:
            return self.stacked
        return concat([item[None] for item in self.items] + [self.stacked], 0)

    def __len__(self):
        raise ConversionError("the length of a list a tensor loop appended to is known at run time only: inside a "
                              "function tfl.jit.to_static converts, len(ys) gives it as a tensor")

    def length(self):
        """The number of values, a tensor."""
        return Length(self.stacked) + len(self.items)

    def __getitem__(self, index):
        if isinstance(index, int) and 0 <= index < len(self.items):
            return self.items[index]
        if isinstance(index, (int, np.integer, Node)):
            return gather(self.as_tensor(), index)
        raise ConversionError(f"a list a tensor loop appended to takes one integer index, got {index!r}; "
                              "use tfl.stack(ys) and index the tensor")

    def __iter__(self):
        raise ConversionError("iterating over a list a tensor loop appended to needs a loop over a tensor: "
                              "write `for y in tfl.stack(ys)` or `for y in ys` inside the converted function")

    def append(self, value):
        raise ConversionError("appending to a list after a tensor loop appended to it is not supported; append "
                              "everything inside the loop, or start a new list")


def stacked_list(loop_op, items, appended):
    """The TensorList of a list whose value `appended` (a node of the loop body) the loop collects."""
    stack = loop_op.output(loop_op.stack_index(loop_op.record(appended)), name="collected")
    return TensorList(items, StackToTensor(stack, appended.shape, appended.dtype, name="stacked"))


# -------------------------------------------------------- functions that take a list
def _concat(fn):
    def concat(xs, axis=0, name=None):
        if not isinstance(xs, TensorList):
            return fn(xs, axis, name=name)
        from ..ops.array_ops import reshape
        stacked = xs.stacked
        if axis != 0 or stacked.shape is None or len(stacked.shape) < 2 or None in stacked.shape[2:]:
            raise ConversionError("tfl.concat of a list a tensor loop appended to works along axis 0 of values "
                                  f"whose other dimensions are known (got values of shape {stacked.shape[1:]} and "
                                  f"axis {axis}); use tfl.stack(ys) and reshape it")
        merged = reshape(stacked, (-1,) + tuple(stacked.shape[2:]))
        return fn(list(xs.items) + [merged], 0, name=name) if xs.items else merged
    return concat


def _stack(fn):
    def stack(xs, axis=0, name=None):
        if not isinstance(xs, TensorList):
            return fn(xs, axis, name=name)
        from ..ops.array_ops import transpose
        full = xs.as_tensor()
        if axis == 0:
            return full
        rank = len(full.shape)
        axis = axis % rank
        return transpose(full, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, rank)))
    return stack


def _add_n(fn):
    def add_n(xs, name=None):
        if not isinstance(xs, TensorList):
            return fn(xs, name=name)
        from ..ops.reductions import reduce_sum
        total = reduce_sum(xs.stacked, axis=0)
        return fn(list(xs.items) + [total], name=name) if xs.items else total
    return add_n


def list_aware(fn):
    """tfl.concat / tfl.stack / tfl.add_n also taking a TensorList; None for any other function."""
    from ..ops import add_n, concat, stack
    table = {concat: _concat, add_n: _add_n, stack: _stack}
    try:
        make = table.get(fn)
    except TypeError:  # an unhashable callable
        return None
    return None if make is None or fn is None else make(fn)
