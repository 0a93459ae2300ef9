"""Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL2, ReduceLogSumExp,
ReduceSumSquare; ArgMax and ArgMin.

Since opset 13 (ReduceSum) and 18 (the others) the axes are an input, which must be known when the
graph is built; before, they are an attribute. ONNX keeps the input's element type.
"""
import numpy as np

from ... import ops
from .. import dtypes
from ..errors import OnnxExportError
from .registry import exports, imports


def reduction_axes(ctx):
    """The axes to reduce: a tuple, None for all axes, or "none" for noop_with_empty_axes with no axes."""
    noop = ctx.attr("noop_with_empty_axes", 0)
    if ctx.has_input(1):
        axes = ctx.static(1, "axes")
    else:
        axes = ctx.attr("axes", None)
    if axes is None or len(axes) == 0:
        return "none" if noop else None
    return tuple(int(a) for a in axes)


def _reduce(fn):
    def rule(ctx, node):
        keepdims = bool(ctx.attr("keepdims", 1))
        axes = reduction_axes(ctx)
        x = ctx.input(0)
        if axes == "none":
            return ops.identity(x, name=ctx.name)
        if axes is None and keepdims and x.shape is None:
            raise ctx.unsupported("keepdims=1 over all axes of an input of unknown rank")
        result = fn(x, axes, keepdims=keepdims, name=ctx.name)
        return ops.cast(result, x.dtype)  # numpy sums small ints as int64 and averages ints as floats
    return rule


def _sum_square(x, axes, keepdims, name):
    return ops.reduce_sum(ops.square(x), axes, keepdims=keepdims, name=name)


imports("ReduceSum")(_reduce(ops.reduce_sum))
imports("ReduceMean")(_reduce(ops.reduce_mean))
imports("ReduceMax")(_reduce(ops.reduce_max))
imports("ReduceMin")(_reduce(ops.reduce_min))
imports("ReduceProd")(_reduce(ops.reduce_prod))
imports("ReduceL2")(_reduce(ops.norm))
imports("ReduceLogSumExp")(_reduce(ops.reduce_logsumexp))
imports("ReduceSumSquare")(_reduce(_sum_square))
imports("ReduceL1")(_reduce(lambda x, axes, keepdims, name: ops.reduce_sum(ops.abs(x), axes, keepdims=keepdims,
                                                                            name=name)))
imports("ReduceLogSum")(_reduce(lambda x, axes, keepdims, name: ops.log(ops.reduce_sum(x, axes, keepdims=keepdims),
                                                                        name=name)))


def _arg(fn):
    def rule(ctx, node):
        return fn(ctx.input(0), axis=ctx.attr("axis", 0), keepdims=bool(ctx.attr("keepdims", 1)),
                  select_last_index=bool(ctx.attr("select_last_index", 0)), name=ctx.name)
    return rule


imports("ArgMax")(_arg(ops.reductions.ArgMax))
imports("ArgMin")(_arg(ops.reductions.ArgMin))


# ---------------------------------------------------------------- export
def _export_reduce(onnx_type, axes_as_input):
    def export(ex, node):
        x = ex.name_of(node.inputs[0])
        keepdims = int(node.keepdims)
        if node.axes is None and node.axis is not None:
            raise OnnxExportError(f"{node.op_type} '{node.name}' reduces axis {node.axis} of an input of unknown "
                                  "rank; give the input a known rank")
        if node.axis is None:
            return ex.emit(onnx_type, [x], onnx_type, keepdims=keepdims)
        axes = [int(a) for a in node.axes]
        if not axes:  # nothing reduced; ONNX reads empty axes as all of them. A Cast gives tinyflow's dtype
            return ex.emit("Cast", [x], "Cast", to=dtypes.onnx_type(node.dtype))
        if axes_as_input:  # opset 13+ for ReduceSum
            return ex.emit(onnx_type, [x, ex.constant(np.array(axes, np.int64), "axes")], onnx_type,
                           keepdims=keepdims)
        return ex.emit(onnx_type, [x], onnx_type, axes=axes, keepdims=keepdims)
    return export


def _export_arg(onnx_type):
    def export(ex, node):
        """ArgMax / ArgMin; over the flattened input (axis None) as a reshape to 1-D first."""
        x, keepdims = ex.name_of(node.inputs[0]), int(node.keepdims)
        attrs = {"select_last_index": int(node.select_last_index)} if node.select_last_index else {}
        if node.axis is not None:
            return ex.emit(onnx_type, [x], onnx_type, axis=int(node.axis), keepdims=keepdims, **attrs)
        flat = ex.emit("Reshape", [x, ex.constant(np.array([-1], np.int64), "shape")], "Reshape")
        index = ex.emit(onnx_type, [flat], onnx_type, axis=0, keepdims=0, **attrs)
        shape = np.ones(len(node.shape), np.int64) if keepdims else np.zeros(0, np.int64)
        return ex.emit("Reshape", [index, ex.constant(shape, "shape")], "Reshape")
    return export


exports("ArgMax")(_export_arg("ArgMax"))
exports("ArgMin")(_export_arg("ArgMin"))
exports("ReduceMin")(_export_reduce("ReduceMin", False))
exports("ReduceProd")(_export_reduce("ReduceProd", False))
exports("ReduceLogSumExp")(_export_reduce("ReduceLogSumExp", False))
exports("ReduceSum")(_export_reduce("ReduceSum", True))
exports("ReduceMean")(_export_reduce("ReduceMean", False))
exports("ReduceMax")(_export_reduce("ReduceMax", False))
