"""Ops that move data: Reshape, Transpose, Concat, Flatten."""
import math

import numpy as np

from ... import ops
from ...nodes import Constant
from ...ops.shape_ops import ReshapeTo
from . import exports, imports


@imports("Reshape")
def import_reshape(ctx, node):
    """x with a new shape; a 0 copies the input's dimension (unless allowzero), one -1 is inferred."""
    x = ctx.input(0)
    allow_zero = ctx.attr("allowzero", 0)
    shape = ctx.value(1) if ctx.has_input(1) else np.asarray(ctx.attr("shape"))
    if shape is None:  # computed at run time (from the batch size, say)
        return ReshapeTo(x, ctx.input(1), allowzero=bool(allow_zero), name=ctx.name)
    x_shape = x.shape
    target = []
    for i, d in enumerate(int(d) for d in shape):
        if d == 0 and not allow_zero:
            if x_shape is None or i >= len(x_shape):
                raise ctx.fail(f"its shape {shape.tolist()} copies dimension {i} of an input of shape {x_shape}")
            d = x_shape[i]
        target.append(d)
    if None in target:  # a copied dimension known only at run time: let -1 stand for it if it is the only one
        if target.count(None) > 1 or -1 in target:
            return ReshapeTo(x, Constant(np.asarray(shape, np.int64)), allowzero=bool(allow_zero), name=ctx.name)
        target[target.index(None)] = -1
    return ops.reshape(x, tuple(target), name=ctx.name)


@imports("Transpose")
def import_transpose(ctx, node):
    perm = ctx.attr("perm", None)
    return ops.transpose(ctx.input(0), None if perm is None else tuple(perm), name=ctx.name)


@imports("Concat")
def import_concat(ctx, node):
    xs = [x for x in ctx.inputs() if x is not None]
    return ops.concat(xs, ctx.attr("axis"), name=ctx.name)


@imports("Flatten")
def import_flatten(ctx, node):
    """A 2-D view: the dims before `axis` multiplied together, and the dims from it."""
    x = ctx.input(0)
    axis = ctx.attr("axis", 1)
    if x.shape is None:
        raise ctx.unsupported("flattening an input of unknown rank")
    axis = axis + len(x.shape) if axis < 0 else axis
    if not 0 <= axis <= len(x.shape):
        raise ctx.fail(f"axis {ctx.attr('axis', 1)} is out of range for an input of shape {x.shape}")
    sides = [x.shape[:axis], x.shape[axis:]]
    dims = [None if None in side else math.prod(side) for side in sides]
    if dims.count(None) == 2:
        raise ctx.unsupported(f"flattening shape {x.shape} at axis {axis}: both sides hold run-time dimensions")
    return ops.reshape(x, tuple(-1 if d is None else d for d in dims), name=ctx.name)


# ---------------------------------------------------------------- export
def _reshape(ex, node):
    shape = ex.constant(np.array(node.target, np.int64), "shape")
    return ex.emit("Reshape", [ex.name_of(node.inputs[0]), shape], "Reshape")


def _reshape_like(ex, node):
    shape = ex.emit("Shape", [ex.name_of(node.inputs[1])], "Shape")
    return ex.emit("Reshape", [ex.name_of(node.inputs[0]), shape], "Reshape")


def _transpose(ex, node):
    return ex.emit("Transpose", [ex.name_of(node.inputs[0])], "Transpose", perm=[int(a) for a in node.axes])


def _concat(ex, node):
    return ex.emit("Concat", [ex.name_of(i) for i in node.inputs], "Concat", axis=int(node.axis))


exports("Reshape")(_reshape)
exports("ReshapeLike")(_reshape_like)
exports("Transpose")(_transpose)
exports("Concat")(_concat)


@imports("Gather")
def import_gather(ctx, node):
    return ops.gather(ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0), name=ctx.name)
