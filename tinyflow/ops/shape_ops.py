"""Ops that change a shape but keep the values in order: squeeze, unsqueeze, flatten, broadcast_to / expand (also to a
shape computed at run time), tile; split, stack, flip and roll, built of others."""
import math

import numpy as np

from ..arguments import Arguments, is_int, rank_of
from ..nodes import Node, Operation, as_node, is_eager
from ..shapes import broadcast_shapes
from .array_ops import (Reshape, ReshapeLike, ToRuntimeShape, _node_list, axis_size, checks, concat, get_item,
                        identity)
from .broadcasting import ShapedLike, SumToShapeOf
from .registry import op_function, register_gradient


class Reshaping(Operation):
    """A reshape whose new shape follows from the input's (squeeze, unsqueeze, flatten).  Gradient: g reshaped back."""

    abstract = True

    def compute(self, x):
        return np.reshape(x, self.infer_shape(x.shape))


class Squeeze(Reshaping):
    """x without the size-1 axes `axis` (every size-1 axis when None)."""

    def __init__(self, x, axis=None, name=None):
        check = Arguments(self, name, x)
        shape = getattr(x, "shape", np.shape(x))
        if axis is None:
            if shape is None or None in shape:
                check.fail("axis", axis, "needs an input of known shape to find its size-1 axes",
                           "name the axes to remove, e.g. axis=1")
            axis = tuple(i for i, d in enumerate(shape) if d == 1)
        self.axis = check.axes("axis", axis, rank_of(x))
        for a in self.axis:
            if shape[a] not in (1, None):
                check.fail("axis", axis, f"names axis {a} of size {shape[a]}", "squeeze only axes of size 1")
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        return tuple(d for i, d in enumerate(x_shape) if i not in self.axis)


squeeze = op_function(Squeeze, "squeeze")


class Unsqueeze(Reshaping):
    """x with new size-1 axes at positions `axis` of the result."""

    def __init__(self, x, axis, name=None):
        rank = rank_of(x)
        count = 1 if is_int(axis) else len(axis) if isinstance(axis, (tuple, list)) else 0
        self.axis = Arguments(self, name, x).axes("axis", axis, None if rank is None else rank + count)
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        dims = iter(x_shape)
        return tuple(1 if i in self.axis else next(dims) for i in range(len(x_shape) + len(self.axis)))


unsqueeze = op_function(Unsqueeze, "unsqueeze")


class Flatten(Reshaping):
    """x with the axes start_axis..end_axis (inclusive) merged into one."""

    def __init__(self, x, start_axis=0, end_axis=-1, name=None):
        check = Arguments(self, name, x)
        rank = rank_of(x)
        if rank is None:
            check.fail("start_axis", start_axis, "needs an input of known rank", "give the input a shape")
        rank = max(rank, 1)  # a scalar flattens to one element
        self.start_axis = check.axis("start_axis", start_axis, rank)
        self.end_axis = check.axis("end_axis", end_axis, rank)
        if self.end_axis < self.start_axis:
            check.fail("end_axis", end_axis, f"comes before start_axis={start_axis}",
                       "pass an end axis at or after the start axis")
        super().__init__(x, name=name)

    def infer_shape(self, x_shape):
        shape = tuple(x_shape) or (1,)
        merged = shape[self.start_axis:self.end_axis + 1]
        size = None if None in merged else math.prod(merged)
        return shape[:self.start_axis] + (size,) + shape[self.end_axis + 1:]


flatten = op_function(Flatten, "flatten")
for _reshaping in (Squeeze, Unsqueeze, Flatten):
    register_gradient(_reshaping)(lambda op, grad: [ReshapeLike(grad, op.inputs[0])])


class BroadcastTo(Operation):
    """x broadcast against `shape` both ways (ONNX Expand: 1 keeps x's size).  Gradient: g summed back to x's shape."""

    def __init__(self, x, shape, name=None):
        check = Arguments(self, name, x)
        self.target = check.new_shape("shape", shape)
        if -1 in self.target:
            check.fail("shape", shape, "holds -1", "give every size (1 keeps the input's size)")
        super().__init__(x, name=name)

    def compute(self, x):
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, self.target))

    def infer_shape(self, x_shape):
        return broadcast_shapes(x_shape, self.target)


def expand(x, shape, name=None):
    """x repeated along size-1 axes to `shape` (ONNX Expand; a 1 or -1 in shape keeps x's size, as torch).  `shape` may
    be an int64 vector node computed at run time (then x broadcasts against it both ways)."""
    if isinstance(shape, Node) or is_eager(shape):
        return ExpandTo(x, shape, name=name)
    if isinstance(shape, (tuple, list, np.ndarray)):
        shape = tuple(1 if is_int(d) and d == -1 else d for d in shape)
    return BroadcastTo(x, shape, name=name)


def broadcast_to(x, shape, name=None):
    """x broadcast to exactly `shape` (np.broadcast_to)."""
    x = as_node(x)
    node = BroadcastTo(x, shape, name=name)
    if node.shape is not None and node.shape != tuple(shape) and all(d is not None for d in node.shape):
        Arguments(BroadcastTo, name, x).fail("shape", shape, f"is smaller than the input's {x.shape}",
                                             "pass a shape x broadcasts to, or use tfl.expand")
    return node


register_gradient(BroadcastTo)(lambda op, grad: [SumToShapeOf(grad, op.inputs[0])])

class ExpandTo(ToRuntimeShape):
    """x broadcast against the run-time shape in `dims` (ONNX Expand).  Gradient: g summed back to x's shape."""

    def compute(self, x, dims):
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(int(d) for d in dims)))

    def infer_shape(self, x_shape, dims_shape):
        return None if self.known is None else broadcast_shapes(x_shape, tuple(self.known), what="input and target")


register_gradient(ExpandTo)(lambda op, grad: [SumToShapeOf(grad, op.inputs[0]), None])


class Tile(Operation):
    """x repeated `reps[i]` times along axis i (np.tile: a longer reps adds axes).  Gradient: g's tiles summed."""

    def __init__(self, x, reps, name=None):
        check = Arguments(self, name, x)
        reps = (reps,) if is_int(reps) else tuple(reps) if isinstance(reps, (tuple, list, np.ndarray)) else reps
        if not isinstance(reps, tuple) or not all(is_int(r) and r >= 0 for r in reps):
            check.fail("reps", reps, "is not a tuple of non-negative ints", "pass e.g. (2, 1)")
        self.reps = tuple(int(r) for r in reps)
        super().__init__(x, name=name)

    def compute(self, x):
        return np.tile(x, self.reps)

    def infer_shape(self, x_shape):
        if x_shape is None:
            return None
        rank = max(len(x_shape), len(self.reps))
        shape = (1,) * (rank - len(x_shape)) + tuple(x_shape)
        reps = (1,) * (rank - len(self.reps)) + self.reps
        return tuple(None if d is None else d * r for d, r in zip(shape, reps))


tile = op_function(Tile, "tile", "x repeated reps[i] times along axis i (np.tile).")


class TileGrad(ShapedLike):
    """g (of tile's output shape) summed over the tiles, back to x's shape."""

    def __init__(self, grad, x, reps, name=None):
        self.reps = reps
        super().__init__(grad, x, name=name)

    def compute(self, grad, x):
        rank = grad.ndim
        reps = (1,) * (rank - len(self.reps)) + self.reps
        dims = (1,) * (rank - x.ndim) + x.shape
        tiles = grad.reshape([n for r, d in zip(reps, dims) for n in (r, d)])  # (r0, d0, r1, d1, ...)
        return tiles.sum(axis=tuple(range(0, 2 * rank, 2))).reshape(x.shape)


register_gradient(Tile)(lambda op, grad: [TileGrad(grad, op.inputs[0], op.reps)])
register_gradient(TileGrad)(lambda op, grad: [Tile(grad, op.reps), None])


def split(x, sizes_or_n, axis=0, name=None):
    """x cut along `axis` into n equal parts (an int) or parts of the given sizes (a list); a list of nodes."""
    x = as_node(x)
    check = checks("Split", name, x)
    axis = check.axis("axis", axis, rank_of(x))
    size = None if x.shape is None else x.shape[axis]
    if is_int(sizes_or_n):
        n = check.integer("sizes_or_n", sizes_or_n, minimum=1)
        if size is None or size % n:
            check.fail("sizes_or_n", sizes_or_n, f"does not divide axis {axis} of size {size} into equal parts",
                       "pass the list of part sizes instead")
        sizes = [size // n] * n
    else:
        sizes = list(sizes_or_n) if isinstance(sizes_or_n, (tuple, list, np.ndarray)) else None
        if sizes is None or not all(is_int(s) and s >= 0 for s in sizes):
            check.fail("sizes_or_n", sizes_or_n, "is not an int or a list of sizes", "pass e.g. 2 or [3, 1]")
        if size is not None and sum(sizes) != size:
            check.fail("sizes_or_n", sizes_or_n, f"adds up to {sum(sizes)}, not to the size {size} of axis {axis}",
                       "give sizes that add up to the axis")
    starts = np.cumsum([0] + [int(s) for s in sizes])
    lead = (slice(None),) * axis
    return [get_item(x, lead + (slice(int(a), int(b)),), name=None if name is None else f"{name}_{i}")
            for i, (a, b) in enumerate(zip(starts[:-1], starts[1:]))]


def stack(xs, axis=0, name=None):
    """The nodes of the list xs (of one shape) joined along a new axis."""
    xs = _node_list("Stack", name, xs)
    if not xs:
        checks("Stack", name).fail("xs", xs, "is empty", "pass a list of at least one node")
    return concat([Unsqueeze(x, axis) for x in xs], axis, name=name)


def flip(x, axis, name=None):
    """x with its entries in reverse order along `axis` (an int or a tuple of them), as torch.flip."""
    x = as_node(x)
    axes = checks("flip", name, x).axes("axis", axis, rank_of(x))
    return get_item(x, tuple(slice(None, None, -1 if a in axes else None) for a in range(len(x.shape))), name=name)


def roll(x, shift, axis=None, name=None):
    """x shifted cyclically by `shift` places along `axis` (ints or tuples; np.roll: none means the flattened x)."""
    x = as_node(x)
    check = checks("roll", name, x)
    if axis is None:
        return ReshapeLike(roll(Reshape(x, (-1,)), shift, 0), x, name=name)
    shifts, axes = ((s,) if is_int(s) else s for s in (shift, axis))
    if not (isinstance(shifts, (tuple, list)) and len(shifts) == len(axes) and all(map(is_int, shifts))):
        check.fail("shift", shift, f"does not pair with axis={axis}", "pass one int shift per axis")
    for s, a in zip(shifts, axes):
        a, size = axis_size(check, x, a)
        if size and s % size:
            cut = size - s % size
            x = concat([get_item(x, (slice(None),) * a + (part,)) for part in (slice(cut, None), slice(cut))], a)
    return x if name is None else identity(x, name=name)
