"""Ops that move data (reshape, slice, gather, pad, ...); the sizes, axes, pads and bounds recent opsets give as
inputs tinyflow mostly needs when the graph is built (ctx.ints: constants, or folded from static shapes)."""
import numpy as np

from ... import ops
from ...nodes import Constant
from ...ops import runtime_shapes
from ...ops.runtime_shapes import RuntimeSlice
from ...ops.matmul import Einsum
from ...ops.array_ops import ReshapeTo
from ...errors import OnnxExportError
from .rule_tables import REQUIRED, exports, imports, int64s, op_rule, same_op


@imports("Reshape")
def import_reshape(ctx, node):
    """x with a new shape (0 copies a dimension unless allowzero); ReshapeTo for sizes known only at run time."""
    x = ctx.input(0)
    allow_zero = bool(ctx.attr("allowzero", 0))
    shape = ctx.value(1) if ctx.has_input(1) else np.asarray(ctx.attr("shape"))
    if shape is None:  # computed at run time (from the batch size, say)
        return ReshapeTo(x, ctx.input(1), allowzero=allow_zero, name=ctx.name)
    target = [int(d) for d in shape]
    for i in [i for i, d in enumerate(target) if d == 0 and not allow_zero]:
        if x.shape is not None and i >= len(x.shape):
            raise ctx.fail(f"its shape {shape.tolist()} copies dimension {i} of an input of shape {x.shape}")
        target[i] = None if x.shape is None else x.shape[i]
    if None in target:  # sizes known only at run time: -1 stands for one of them, else ReshapeTo
        if x.shape is None or target.count(None) > 1 or -1 in target:
            return ReshapeTo(x, Constant(np.asarray(shape, np.int64)), allowzero=allow_zero, name=ctx.name)
        target[target.index(None)] = -1
    return ops.reshape(x, tuple(target), name=ctx.name)


imports("Transpose")(op_rule(ops.transpose, axes=("perm", None)))
imports("Gather")(op_rule(ops.gather, axis=("axis", 0)))
imports("GatherElements")(op_rule(ops.take_along_axis, axis=("axis", 0)))
imports("Range")(op_rule(runtime_shapes.arange))  # an Arange op when a bound is known only at run time
imports("Einsum")(op_rule(Einsum, equation=("equation", REQUIRED)))
imports("Concat")(op_rule(lambda *xs, axis, name: ops.concat([x for x in xs if x is not None], axis, name=name),
                          axis=("axis", REQUIRED)))  # (an omitted input is skipped)
exports("RuntimeSlice")(same_op("Slice", ["axes", "steps"]))
exports("Reshape")(same_op("Reshape", ["target"]))
exports("BroadcastTo")(same_op("Expand", ["target"]))
exports("Unsqueeze")(same_op("Unsqueeze", ["axis"]))
exports("ReshapeTo")(same_op("Reshape", allowzero="allowzero"))
exports("Transpose")(same_op("Transpose", perm="axes"))
exports("Concat")(same_op("Concat", axis="axis"))
exports("Gather")(same_op("Gather", axis="axis"))
exports("TakeAlongAxis")(same_op("GatherElements", axis="axis"))
exports("Einsum")(same_op("Einsum", equation="spelled"))
exports("Arange")(same_op("Range"))
exports("ExpandTo")(same_op("Expand"))
imports("Tile")(lambda ctx, node: ops.tile(ctx.input(0), tuple(ctx.ints(1, "repeats")), name=ctx.name))


@imports("Flatten")
def import_flatten(ctx, node):
    """A 2-D view: the dims before `axis` multiplied together, and the dims from it."""
    x, rank = ctx.input(0), len(ctx.input_shape(0, "flattening"))
    axis = ctx.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise ctx.fail(f"axis {axis} is out of range for an input of rank {rank}")
    axis = axis + rank if axis < 0 else axis
    if axis in (0, rank):  # (1, all) or (all, 1)
        return ops.unsqueeze(ops.flatten(x), 0 if axis == 0 else 1, name=ctx.name)
    if axis == 1:  # (N, rest): one flatten
        return ops.flatten(x, 1, -1, name=ctx.name)
    return ops.flatten(ops.flatten(x, axis, -1), 0, axis - 1, name=ctx.name)


@imports("Squeeze", "Unsqueeze")
def import_squeeze(ctx, node):
    axes = ctx.ints(1, "axes", "axes")
    if axes is None and ctx.op_type == "Unsqueeze":
        raise ctx.fail("it has no axes")
    fn = ops.squeeze if ctx.op_type == "Squeeze" else ops.unsqueeze
    return fn(ctx.input(0), None if axes is None else tuple(axes), name=ctx.name)


@imports("Slice")
def import_slice(ctx, node):
    """x[start:end:step] on the given axes; bounds computed at run time (a Loop's counter) make a RuntimeSlice."""
    x = ctx.input(0)
    if ctx.opset >= 10 and any(ctx.has_input(i) and ctx.known_ints(i) is None for i in (1, 2)):
        starts, ends = (ops.cast(ctx.input(i), np.int64) for i in (1, 2))
        count = starts.shape[0] if starts.shape is not None and len(starts.shape) == 1 else None
        axes = ctx.ints(3, "axes", default=None if count is None else list(range(count)))
        if axes is None:
            raise ctx.unsupported("run-time bounds of unknown length without axes")
        steps = ctx.ints(4, "steps", default=[1] * len(axes))
        return RuntimeSlice(x, starts, ends, axes, steps, name=ctx.name)
    rank = len(ctx.input_shape(0, "slicing"))
    starts, ends = ctx.ints(1, "starts", "starts"), ctx.ints(2, "ends", "ends")
    axes = ctx.ints(3, "axes", "axes", default=list(range(len(starts))))
    steps = ctx.ints(4, "steps", default=[1] * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.fail(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    key = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if not -rank <= axis < rank or step == 0:
            raise ctx.fail(f"axis {axis} or step {step} is invalid for an input of rank {rank}")
        key[axis % rank] = slice(start, end, step)
    return ops.get_item(x, tuple(key), name=ctx.name)


@imports("Split")
def import_split(ctx, node):
    """Parts along `axis`: the sizes given, or num_outputs parts (the last one smaller when uneven)."""
    x, shape = ctx.input(0), ctx.input_shape(0, "splitting")
    axis = ctx.attr("axis", 0)
    sizes = ctx.ints(1, "split", "split")
    count = ctx.attr("num_outputs", ctx.num_outputs)
    if count != ctx.num_outputs:
        raise ctx.fail(f"its num_outputs is {count}, but it has {ctx.num_outputs} outputs")
    if sizes is None:
        size = shape[axis]
        if size is None:
            raise ctx.unsupported(f"splitting axis {axis} of run-time size into {count} parts")
        part = -(-size // count)
        sizes = [min(part, size - part * i) for i in range(count)]
    return tuple(ops.split(x, sizes, axis=axis, name=ctx.name))


@imports("Expand")
def import_expand(ctx, node):
    """x broadcast against a shape: known at import time (tfl.expand), or computed at run time (ExpandTo)."""
    shape = ctx.known_ints(1)
    return ops.expand(ctx.input(0), ctx.input(1) if shape is None else tuple(shape), name=ctx.name)


@imports("Pad")
def import_pad(ctx, node):
    """x padded (or cropped, for negative pads) in mode constant, reflect, edge or wrap."""
    x, rank = ctx.input(0), len(ctx.input_shape(0, "padding"))
    mode = ctx.attr("mode", "constant")
    pads = ctx.ints(1, "pads", "pads" if ctx.opset >= 2 else "paddings")  # attributes before opset 11
    value = ctx.static(2, "constant value").reshape(-1)[0] if ctx.has_input(2) else ctx.attr("value", 0.0)
    axes = ctx.ints(3, "axes", default=list(range(rank)))
    if len(pads) != 2 * len(axes):
        raise ctx.fail(f"pads {pads} do not hold a (begin, end) pair for each of the axes {axes}")
    widths = [(0, 0)] * rank
    for i, axis in enumerate(axes):
        widths[axis % rank] = (int(pads[i]), int(pads[len(axes) + i]))
    return ops.pad(x, tuple(widths), mode=mode, value=float(value), name=ctx.name)


@imports("TopK")
def import_topk(ctx, node):
    """(values, indices) of the k largest (or smallest) along `axis`, sorted; ties by lower index."""
    k = ctx.ints(1, "k", "k")[0]
    largest, ordered = bool(ctx.attr("largest", 1)), bool(ctx.attr("sorted", 1))
    return ops.topk(ctx.input(0), k, axis=ctx.attr("axis", -1), largest=largest, sorted=ordered, name=ctx.name)


@imports("Trilu")
def import_trilu(ctx, node):
    k = ctx.ints(1, "k", default=[0])[0]
    return (ops.triu if ctx.attr("upper", 1) else ops.tril)(ctx.input(0), k, name=ctx.name)


@exports("ReshapeLike")
def _reshape_like(ex, node):
    shape = ex.emit("Shape", [ex.name_of(node.inputs[1])], "Shape")
    return ex.emit("Reshape", [ex.name_of(node.inputs[0]), shape], "Reshape")


@exports("TopKIndices")
def _topk_indices(ex, node):
    """TopK's second output: topk's values are a GatherElements of these indices."""
    values, indices = ex.fresh("TopK_values"), ex.fresh("TopK_indices")
    ex.emit("TopK", [ex.name_of(node.inputs[0]), int64s(ex, [node.k], "k")], "TopK", [values, indices],
            axis=int(node.axis), largest=int(node.largest), sorted=1)
    return indices


@exports("Pad")
def _pad(ex, node):
    if node.mode == "wrap":
        raise OnnxExportError(f"Pad '{node.name}' in mode 'wrap' needs opset 19; tinyflow exports opset 17")
    pads = [b for b, _ in node.pad_width] + [a for _, a in node.pad_width]
    inputs = [ex.name_of(node.inputs[0]), int64s(ex, pads, "pads")]
    if node.mode == "constant":
        inputs.append(ex.constant(np.asarray(node.value, node.dtype), "value"))
    return ex.emit("Pad", inputs, "Pad", mode=node.mode)


@exports("Squeeze")
def _squeeze(ex, node):
    # nothing squeezed is an Identity: ONNX reads empty axes as every axis of size 1
    return same_op("Squeeze", ["axis"])(ex, node) if node.axis else same_op("Identity")(ex, node)


@exports("Flatten")
def _flatten(ex, node):
    """Reshape to the merged shape: constant (0 copies, -1 merges) when the later axes are known, else from Shape."""
    x = node.inputs[0]
    start, end, rank = node.start_axis, node.end_axis, len(x.shape)
    after = node.shape[start + 1:]
    if None not in after and 0 not in after:  # (a 0 there would copy the input's size at that position)
        target = [0 if d is None else d for d in node.shape[:start]] + [-1] + list(after)
        return ex.emit("Reshape", [ex.name_of(x), int64s(ex, target, "shape")], "Flatten")

    def dims(a, b):
        return ex.emit("Shape", [ex.name_of(x)], "Shape", start=a, end=b)
    merged = ex.emit("ReduceProd", [dims(start, end + 1)], "ReduceProd", keepdims=1)
    target = ex.emit("Concat", [dims(0, start), merged, dims(end + 1, rank)], "Concat", axis=0)
    return ex.emit("Reshape", [ex.name_of(x), target], "Flatten")


@exports("Tile")
def _tile(ex, node):
    """Tile; reps longer than the rank add leading axes first (np.tile), shorter ones repeat the last axes."""
    x, rank = ex.name_of(node.inputs[0]), len(node.inputs[0].shape)
    reps = (1,) * (rank - len(node.reps)) + tuple(node.reps)
    if len(reps) > rank:
        x = ex.emit("Unsqueeze", [x, int64s(ex, range(len(reps) - rank), "axes")], "Unsqueeze")
    return ex.emit("Tile", [x, int64s(ex, reps, "repeats")], "Tile")


@exports("Triangle")
def _triangle(ex, node):
    k = ex.constant(np.array(node.k, np.int64), "k")
    return ex.emit("Trilu", [ex.name_of(node.inputs[0]), k], "Trilu", upper=int(node.upper))


@exports("GetItem")
def _get_item(ex, node):
    """x[key] for keys of ints, slices, None, ... and one integer array: Slice, Gather, Unsqueeze."""
    key, big = list(node.key), np.iinfo(np.int64).max
    if any(k is Ellipsis for k in key):  # (`in` would compare arrays elementwise)
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        key[at:at + 1] = [slice(None)] * (len(node.inputs[0].shape) + 1 - sum(k is not None for k in key))
    arrays = [k for k in key if isinstance(k, np.ndarray)]
    ints = any(not isinstance(k, (slice, np.ndarray)) and k is not None for k in key)
    if len(arrays) > 1 or any(a.dtype.kind == "b" for a in arrays) or (arrays and ints):
        raise OnnxExportError(f"GetItem '{node.name}' indexes with several arrays, a boolean mask or an array next "
                              "to ints; ONNX export takes ints, slices, None and ..., or one integer array with "
                              "slices")
    slices, gathers, new_axes, axis, out_axis = [], [], [], 0, 0  # slices: (start, end, axis, step)
    for k in key:
        if k is None:
            new_axes.append(out_axis)
        elif isinstance(k, slice):
            step = 1 if k.step is None else k.step
            if k != slice(None):
                slices.append((k.start if k.start is not None else (0 if step > 0 else big),
                               k.stop if k.stop is not None else (big if step > 0 else -big - 1), axis, step))
        else:  # an int or an integer array: a Gather (a 0-d index drops the axis)
            gathers.append((axis, np.asarray(k, np.int64)))
        out_axis += 1 if k is None or isinstance(k, slice) else np.ndim(k)
        axis += k is not None
    name = ex.name_of(node.inputs[0])
    if slices:
        bounds = [int64s(ex, v, h) for v, h in zip(zip(*slices), ("starts", "ends", "axes", "steps"))]
        name = ex.emit("Slice", [name] + bounds, "Slice")
    for gathered_axis, index in reversed(gathers):  # the last axis first: the earlier ones keep their numbers
        name = ex.emit("Gather", [name, ex.constant(index, "indices")], "Gather", axis=gathered_axis)
    if new_axes:
        name = ex.emit("Unsqueeze", [name, int64s(ex, new_axes, "axes")], "Unsqueeze")
    return name if name != ex.name_of(node.inputs[0]) else ex.emit("Identity", [name], "GetItem")


@imports("DepthToSpace", "SpaceToDepth")
def import_depth_to_space(ctx, node):
    """Channels moved into b×b blocks of space, or those blocks back, in DCR (depth, column, row) or CRD order."""
    to_space = ctx.op_type == "DepthToSpace"
    what = "moving depth to space of" if to_space else "moving space to depth of"
    x, shape, b = ctx.input(0), ctx.input_shape(0, what), ctx.attr("blocksize")
    if len(shape) != 4 or None in shape[1:]:
        raise ctx.unsupported(f"{what} an input of shape {shape} (needs (N, C, H, W) with C, H, W known)")
    (c, h, w), dcr = shape[1:], ctx.attr("mode", "DCR") == "DCR"
    if to_space:
        blocks = ops.reshape(x, (-1, b, b, c // (b * b), h, w) if dcr else (-1, c // (b * b), b, b, h, w))
        order, shape = ((0, 3, 4, 1, 5, 2) if dcr else (0, 1, 4, 2, 5, 3)), (-1, c // (b * b), h * b, w * b)
    else:
        blocks = ops.reshape(x, (-1, c, h // b, b, w // b, b))
        order, shape = ((0, 3, 5, 1, 2, 4) if dcr else (0, 1, 3, 5, 2, 4)), (-1, c * b * b, h // b, w // b)
    return ops.reshape(ops.transpose(blocks, order), shape, name=ctx.name)
