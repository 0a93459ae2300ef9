"""Unbroadcasting: backprop's `SumToShapeOf` sums a gradient wider than its input back to the input's shape;
`BroadcastLike` is its adjoint."""
import numpy as np

from ..nodes import Operation
from ..shapes import is_fully_known
from .registry import register_gradient


def sum_to_shape(value, shape):
    """Sum `value` over the axes that broadcasting added or stretched, to get `shape`."""
    if value.shape == shape:
        return value
    lead = value.ndim - len(shape)
    summed = [True] * lead + [d == 1 and value.shape[lead + i] != 1 for i, d in enumerate(shape)]
    # neighbouring axes that are all summed or all kept merge into one, and the outer ones are summed first:
    # numpy adds whole rows at a time there, where summing a short inner axis row by row is slow (a conv bias
    # gradient, (64, 8, 8, 8) to (1, 8, 1, 1): 14.5 us in one reduce over (0, 2, 3), 4.6 us this way)
    sizes, kinds = [], []
    for size, kind in zip(value.shape, summed):
        if kinds and kinds[-1] == kind:
            sizes[-1] *= size
        else:
            sizes.append(size)
            kinds.append(kind)
    result, axis = value.reshape(sizes), 0
    for kind in kinds:
        if kind:
            result = np.add.reduce(result, axis=axis)
        else:
            axis += 1
    return np.asarray(result).reshape(shape)  # asarray: an array even for shape ()


class ShapedLike(Operation):
    """An op of (x, like, ...) with the run-time shape of `like` and the dtype of x (g taken back to an input)."""

    abstract = True
    shape_of, dtype_of = 1, 0


class LikeOperation(ShapedLike):
    """A ShapedLike op of (x, like) alone, which is x itself when the shapes agree."""

    abstract = True

    def __init__(self, x, like, name=None):
        super().__init__(x, like, name=name)

    def passes_through(self, x_shape, like_shape):
        return x_shape == like_shape and is_fully_known(x_shape)


class SumToShapeOf(LikeOperation):
    """g summed over broadcast axes down to the run-time shape of `like` (unbroadcasting)."""

    def compute(self, grad, like):
        return sum_to_shape(grad, like.shape)


class BroadcastLike(LikeOperation):
    """x broadcast to the run-time shape of `like`."""

    def compute(self, x, like):
        return np.broadcast_to(x, like.shape)


register_gradient(SumToShapeOf)(lambda op, grad: [BroadcastLike(grad, op.inputs[0]), None])
register_gradient(BroadcastLike)(lambda op, grad: [SumToShapeOf(grad, op.inputs[0]), None])
