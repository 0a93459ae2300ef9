"""Reductions: ReduceSum, ReduceMean, ReduceMax.

Since opset 13 (ReduceSum) and 18 (the others) the axes are an input, which must be known when the
graph is built; before, they are an attribute. ONNX keeps the input's element type.
"""
import numpy as np

from ... import ops
from ..errors import OnnxExportError
from . import exports, imports


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


imports("ReduceSum")(_reduce(ops.reduce_sum))
imports("ReduceMean")(_reduce(ops.reduce_mean))
imports("ReduceMax")(_reduce(ops.reduce_max))


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
        if axes_as_input:  # opset 13+ for ReduceSum
            return ex.emit(onnx_type, [x, ex.constant(np.array(axes, np.int64), "axes")], onnx_type,
                           keepdims=keepdims)
        return ex.emit(onnx_type, [x], onnx_type, axes=axes, keepdims=keepdims)
    return export


exports("ReduceSum")(_export_reduce("ReduceSum", True))
exports("ReduceMean")(_export_reduce("ReduceMean", False))
exports("ReduceMax")(_export_reduce("ReduceMax", False))
