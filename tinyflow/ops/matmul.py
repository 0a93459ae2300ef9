"""Matrix multiplication, batched over leading axes like numpy's `@`."""
import numpy as np

from ..arguments import rank_of
from ..errors import ShapeError
from ..nodes import Operation
from ..shapes import broadcast_shapes, dims_compatible
from .array_ops import Transpose, get_item, reshape
from .registry import register_gradient


class MatMul(Operation):
    """a @ b for a (..., n, k) and b (..., k, m); leading axes broadcast.  Gradient: (g @ bᵀ, aᵀ @ g)."""

    def __init__(self, a, b, name=None):
        super().__init__(a, b, name=name)

    def compute(self, a, b):
        return np.matmul(a, b)

    def infer_shape(self, a_shape, b_shape):
        for shape in (a_shape, b_shape):
            if shape is None or len(shape) < 2:
                raise ShapeError(f"needs operands of rank 2 or more, got shapes {a_shape} and {b_shape}; "
                                 "tfl.matmul takes vectors (as numpy's @), or reshape one to (1, n) or (n, 1)")
        if not dims_compatible(a_shape[-1], b_shape[-2]):
            raise ShapeError(f"matmul inner dimensions differ: {a_shape} @ {b_shape} "
                             f"({a_shape[-1]} != {b_shape[-2]}); the last axis of the left operand must "
                             "equal the second-to-last axis of the right one (transpose one of them?)")
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2], what="matmul batch axes")
        return batch + (a_shape[-2], b_shape[-1])


def matmul(a, b, name=None):
    """Matrix product a @ b, batched over broadcast leading axes; a 1-D operand is a vector (as numpy's @)."""
    a_rank, b_rank = rank_of(a), rank_of(b)
    if a_rank != 1 and b_rank != 1:
        return MatMul(a, b, name=name)
    product = MatMul(reshape(a, (1, -1)) if a_rank == 1 else a, reshape(b, (-1, 1)) if b_rank == 1 else b)
    if b_rank == 1:
        product = _drop_axis(product, -1, None if a_rank == 1 else name)
    return _drop_axis(product, -2 if b_rank != 1 else -1, name) if a_rank == 1 else product


def _drop_axis(y, axis, name):
    """y without its size-1 axis `axis`: a reshape when at most one size is unknown, else indexing."""
    shape = list(y.shape)
    del shape[axis]
    if shape.count(None) <= 1:
        return reshape(y, tuple(-1 if d is None else d for d in shape), name=name)
    return get_item(y, (Ellipsis, 0) + (slice(None),) * (-axis - 1), name=name)


def swap_last_axes(x):
    """x with its last two axes swapped."""
    rank = len(x.shape)
    return Transpose(x, tuple(range(rank - 2)) + (rank - 1, rank - 2))


register_gradient(MatMul)(lambda op, grad: [MatMul(grad, swap_last_axes(op.inputs[1])),
                                            MatMul(swap_last_axes(op.inputs[0]), grad)])
