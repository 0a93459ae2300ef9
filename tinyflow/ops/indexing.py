"""Indexing with index tensors (graph values: token ids, the positions topk found; negatives count from the end):
gather, take_along_axis, topk; and one_hot, masked_fill and repeat_interleave built of other ops."""
import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Constant, Operation, as_node
from .array_ops import Reshape, axis_size, checks, get_item
from .elementwise_ops import cast, equal, where
from .broadcasting import ShapedLike
from .registry import not_differentiable, register_gradient


class IndexOperation(Operation):
    """An op reading x at integer `indices` along `axis`, in x's dtype."""

    abstract = True

    def __init__(self, x, indices, axis=0, name=None):
        self.axis = Arguments(self, name, x, indices).axis("axis", axis, rank_of(x))
        super().__init__(x, indices, name=name)

    def infer_dtype(self, x, indices):
        if indices is not None and indices.kind not in "iu":
            raise ShapeError(f"{self.op_type} takes integer indices, got {indices}; cast them: tfl.cast(i, 'int64')")
        return x


class ScatterOperation(ShapedLike):
    """The gradient of an IndexOperation: zeros of x's run-time shape with g added where it read."""

    abstract = True

    def __init__(self, grad, x, indices, axis, name=None):
        self.axis = axis
        super().__init__(grad, x, indices, name=name)

    def compute(self, grad, x, indices):
        out = np.zeros(x.shape, grad.dtype)
        np.add.at(out, self.positions(indices, x.shape), grad)  # a repeated index (a token used twice) adds up
        return out


class Gather(IndexOperation):
    """x[..., indices, ...] with the index tensor on `axis` (np.take): shape x[:axis] + indices + x[axis+1:]."""

    def compute(self, x, indices):
        return np.take(x, indices, axis=self.axis)

    def infer_shape(self, x_shape, indices_shape):
        if x_shape is None or indices_shape is None:
            return None
        return tuple(x_shape[:self.axis]) + tuple(indices_shape) + tuple(x_shape[self.axis + 1:])


def gather(x, indices, axis=0, name=None):
    """x[..., indices, ...] with the index tensor on `axis` (np.take); one constant index is plain indexing, a view
    whose gradient joins the other slices' in one op (an attention's q, k and v picked from one projection)."""
    index = indices.value if isinstance(indices, Constant) else indices
    scalar = isinstance(index, (int, np.integer)) or (isinstance(index, np.ndarray) and index.shape == ()
                                                      and index.dtype.kind in "iu")
    if scalar and not isinstance(index, bool):
        axis = Arguments(Gather, name, x).axis("axis", axis, rank_of(x))
        if axis >= 0:  # (a negative axis of an input of unknown rank stays an op)
            return get_item(x, (slice(None),) * axis + (int(index),), name=name)
    return Gather(x, indices, axis, name=name)


class GatherGrad(ScatterOperation):
    """Zeros of x's run-time shape with g added at the positions Gather read."""

    def positions(self, indices, shape):
        return (slice(None),) * self.axis + (indices,)


register_gradient(Gather)(lambda op, grad: [GatherGrad(grad, *op.inputs, op.axis), None])
register_gradient(GatherGrad)(lambda op, grad: [Gather(grad, op.inputs[2], op.axis), None, None])


class TakeAlongAxis(IndexOperation):
    """x picked elementwise along `axis` by an index tensor of x's rank (np.take_along_axis, ONNX GatherElements)."""

    def compute(self, x, indices):
        return np.take_along_axis(x, indices, axis=self.axis)

    def infer_shape(self, x_shape, indices_shape):
        if x_shape is not None and indices_shape is not None and len(x_shape) != len(indices_shape):
            raise ShapeError(f"take_along_axis needs indices of the input's rank {len(x_shape)}, "
                             f"got shape {indices_shape}")
        return indices_shape


def take_along_axis(x, indices, axis, name=None):
    """x[..., indices[..., i, ...], ...] elementwise along `axis` (np.take_along_axis, torch.gather)."""
    return TakeAlongAxis(x, indices, axis, name=name)


class TakeAlongAxisGrad(ScatterOperation):
    """Zeros of x's run-time shape with g added at the positions TakeAlongAxis read."""

    def positions(self, indices, shape):
        grid = list(np.ogrid[tuple(slice(n) for n in indices.shape)])
        grid[self.axis] = indices
        return tuple(grid)


register_gradient(TakeAlongAxis)(lambda op, grad: [TakeAlongAxisGrad(grad, *op.inputs, op.axis), None])
register_gradient(TakeAlongAxisGrad)(lambda op, grad: [TakeAlongAxis(grad, op.inputs[2], op.axis), None, None])


class TopKIndices(Operation):
    """The positions of the k largest (or smallest) entries along `axis`, best first; ties: lower index first."""

    dtype_of = np.dtype(np.int64)

    def __init__(self, x, k, axis=-1, largest=True, name=None):
        check = Arguments(self, name, x)
        self.k = check.integer("k", k, minimum=0)
        self.axis = check.axis("axis", axis, rank_of(x))
        self.largest = check.flag("largest", largest)
        shape = getattr(x, "shape", None)
        if shape is not None and shape[self.axis] is not None and self.k > shape[self.axis]:
            check.fail("k", k, f"is larger than axis {self.axis} of size {shape[self.axis]}",
                       f"pass k <= {shape[self.axis]}")
        super().__init__(x, name=name)

    def compute(self, x):
        if self.k > x.shape[self.axis]:
            raise ValueError(f"k={self.k} is larger than axis {self.axis} of size {x.shape[self.axis]}")
        if self.largest:  # a stable sort of the reversed axis, reversed back: descending, ties by lower index
            order = np.flip(np.argsort(np.flip(x, self.axis), axis=self.axis, kind="stable"), self.axis)
            order = x.shape[self.axis] - 1 - order
        else:
            order = np.argsort(x, axis=self.axis, kind="stable")
        return np.take(order, np.arange(self.k), axis=self.axis).astype(np.int64, copy=False)

    def infer_shape(self, x_shape):
        return None if x_shape is None else tuple(self.k if i == self.axis else d for i, d in enumerate(x_shape))


not_differentiable(TopKIndices)


def topk(x, k, axis=-1, largest=True, sorted=True, name=None):  # noqa: A002 - torch.topk's argument name
    """(values, indices) of the k largest (smallest if not `largest`) entries along `axis`, best first, ties by lower
    index (ONNX TopK); only the values carry gradients. Always sorted (torch allows any order for sorted=False)."""
    Arguments(TopKIndices, name, x).flag("sorted", sorted)
    indices = TopKIndices(x, k, axis, largest, name=None if name is None else f"{name}_indices")
    return take_along_axis(x, indices, axis, name=name), indices


def one_hot(indices, depth, dtype="float32", name=None):
    """Rows of `depth` zeros with a 1 at each index (an index outside [0, depth) gives zeros, as tf.one_hot)."""
    check = checks("one_hot", name, indices)
    depth, dtype = check.integer("depth", depth, minimum=0), check.dtype("dtype", dtype)
    indices = as_node(indices)
    if indices.dtype.kind not in "iu":
        check.fail("indices", f"a tensor of dtype {indices.dtype}", "does not hold integers",
                   "pass class ids, e.g. tfl.cast(i, 'int64')")
    return cast(equal(get_item(indices, (Ellipsis, None)), np.arange(depth)), dtype, name=name)


def masked_fill(x, mask, value, name=None):
    """x with `value` where the boolean `mask` (broadcast to x) is true (torch.masked_fill)."""
    x = as_node(x)
    if np.dtype(getattr(mask, "dtype", None) or np.asarray(mask).dtype) != bool:
        checks("masked_fill", name, x).fail("mask", mask, "is not boolean", "pass a mask such as x > 0")
    return where(mask, as_node(value, like=x), x, name=name)


def repeat_interleave(x, repeats, axis=None, name=None):
    """Each entry of x along `axis` (None: of flat x) repeated `repeats` times (an int, or one per entry)."""
    x = as_node(x)
    check = checks("repeat_interleave", name, x)
    if axis is None:
        x, axis = Reshape(x, (-1,)), 0
    axis, size = axis_size(check, x, axis)
    counts = check.numeric_array("repeats", repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1 or counts.size not in (1, size) or (counts < 0).any():
        check.fail("repeats", repeats, f"is not a count >= 0 or {size} of them", "pass an int or one int per entry")
    return gather(x, np.repeat(np.arange(size), np.broadcast_to(counts.reshape(-1), (size,))), axis, name=name)
