"""Ops that change Variables (assign, assign_add, assign_sub) and group, which bundles ops into one.

They are `stateful`: the Session runs them after every pure op of the same run, so every read of a Variable in one run
sees its value from before the update (what an optimizer step needs)."""
import numpy as np

from ..arguments import Arguments
from ..errors import ShapeError
from ..nodes import Operation, Variable
from ..shapes import broadcast_shapes, shapes_compatible
from .registry import not_differentiable, op_function


class Assign(Operation):
    """var ← value; outputs the new value."""

    stateful = True
    dtype_of = 0
    update = None  # how the old value and the value make the new one (np.add, np.subtract); None: the value

    def __init__(self, var, value, name=None):
        if not isinstance(var, Variable):
            Arguments(self, name).fail("var", var, "is not a Variable",
                                       "pass the tfl.Variable to change as the first argument")
        super().__init__(var, value, name=name)

    def infer_shape(self, var_shape, value_shape):
        # the value may broadcast to the Variable's shape (v += 1), never widen it
        if not shapes_compatible(broadcast_shapes(var_shape, value_shape), var_shape):
            raise ShapeError(f"cannot assign a value of shape {value_shape} to a Variable of shape {var_shape}: "
                             "the value must have the Variable's shape or broadcast to it")
        return var_shape

    def compute(self, old, value):
        # read the Variable itself, not the `old` snapshot: two assign_adds in one run both count
        variable = self.inputs[0]
        variable.value = np.broadcast_to(value, variable.value.shape).copy() if self.update is None else \
            self.update(variable.value, value)
        return variable.value


assign = op_function(Assign, "assign", "An op that sets var to value when run.")


class AssignAdd(Assign):
    """var ← var + value; outputs the new value."""

    update = staticmethod(np.add)


assign_add = op_function(AssignAdd, "assign_add", "An op that adds value to var when run.")


class AssignSub(Assign):
    """var ← var - value; outputs the new value."""

    update = staticmethod(np.subtract)


assign_sub = op_function(AssignSub, "assign_sub", "An op that subtracts value from var when run.")


class Group(Operation):
    """Runs all its inputs; has no value (sess.run returns None for it). Train ops are groups."""

    def compute(self, *values):
        return None

    def infer_shape(self, *shapes):
        return ()

    def infer_dtype(self, *dtypes):
        return None


def group(*ops, name=None):
    """One op that runs all of `ops` (accepts several ops or one list of them)."""
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    return Group(*ops, name=name)


not_differentiable(Assign, AssignAdd, AssignSub, Group)
