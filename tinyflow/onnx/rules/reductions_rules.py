"""Reductions (ReduceSum, ReduceMean, ReduceMax, ..., ReduceLogSum) and ArgMax / ArgMin.

Since opset 13 (ReduceSum) and 18 (the others) the axes are an input, which must be known when the
graph is built; before, they are an attribute. ONNX keeps the input's element type.
"""
import numpy as np

from ... import ops
from ...errors import OnnxExportError
from ..storage_types import onnx_type
from .rule_tables import exports, imports, op_rule


def _reduce(fn):
    def rule(ctx, node):
        keepdims = bool(ctx.attr("keepdims", 1))
        noop = ctx.attr("noop_with_empty_axes", 0)
        axes = ctx.static(1, "axes") if ctx.has_input(1) else ctx.attr("axes", None)
        x = ctx.input(0)
        if axes is None or len(axes) == 0:
            if noop:
                return ops.identity(x, name=ctx.name)
            if keepdims and x.shape is None:
                raise ctx.unsupported("keepdims=1 over all axes of an input of unknown rank")
            axes = None
        result = fn(x, None if axes is None else tuple(int(a) for a in axes), keepdims=keepdims, name=ctx.name)
        return ops.cast(result, x.dtype)  # numpy sums small ints as int64 and averages ints as floats
    return rule


for _onnx_type, _fn in {"ReduceSum": ops.reduce_sum, "ReduceMean": ops.reduce_mean, "ReduceMax": ops.reduce_max,
                        "ReduceMin": ops.reduce_min, "ReduceProd": ops.reduce_prod, "ReduceL2": ops.norm,
                        "ReduceLogSumExp": ops.reduce_logsumexp}.items():
    imports(_onnx_type)(_reduce(_fn))
imports("ReduceSumSquare")(_reduce(lambda x, axes, keepdims, name: ops.reduce_sum(ops.square(x), axes,
                                                                                   keepdims=keepdims, name=name)))
imports("ReduceL1")(_reduce(lambda x, axes, keepdims, name: ops.reduce_sum(ops.abs(x), axes, keepdims=keepdims,
                                                                            name=name)))
imports("ReduceLogSum")(_reduce(lambda x, axes, keepdims, name: ops.log(ops.reduce_sum(x, axes, keepdims=keepdims),
                                                                        name=name)))
for _fn in (ops.reductions.ArgMax, ops.reductions.ArgMin):
    imports(_fn.__name__)(op_rule(_fn, axis=("axis", 0), keepdims=("keepdims", True),
                                  select_last_index=("select_last_index", False)))


def _export_reduce(onnx_type_name):
    def export(ex, node):
        x = ex.name_of(node.inputs[0])
        keepdims = int(node.keepdims)
        if node.axes is None and node.axis is not None:
            raise OnnxExportError(f"{node.op_type} '{node.name}' reduces axis {node.axis} of an input of unknown "
                                  "rank; give the input a known rank")
        if node.axis is None:
            return ex.emit(onnx_type_name, [x], onnx_type_name, keepdims=keepdims)
        axes = [int(a) for a in node.axes]
        if not axes:  # nothing reduced; ONNX reads empty axes as all of them. A Cast gives tinyflow's dtype
            return ex.emit("Cast", [x], "Cast", to=onnx_type(node.dtype))
        if onnx_type_name == "ReduceSum":  # axes are an input of ReduceSum from opset 13 on
            return ex.emit(onnx_type_name, [x, ex.constant(np.array(axes, np.int64), "axes")], onnx_type_name,
                           keepdims=keepdims)
        return ex.emit(onnx_type_name, [x], onnx_type_name, axes=axes, keepdims=keepdims)
    return export


def _export_arg(ex, node):
    """ArgMax / ArgMin; over the flattened input (axis None) as a reshape to 1-D first."""
    x, keepdims, onnx_type_name = ex.name_of(node.inputs[0]), int(node.keepdims), node.op_type
    attrs = {"select_last_index": int(node.select_last_index)} if node.select_last_index else {}
    if node.axis is not None:
        return ex.emit(onnx_type_name, [x], onnx_type_name, axis=int(node.axis), keepdims=keepdims, **attrs)
    flat = ex.emit("Reshape", [x, ex.constant(np.array([-1], np.int64), "shape")], "Reshape")
    index = ex.emit(onnx_type_name, [flat], onnx_type_name, axis=0, keepdims=0, **attrs)
    shape = np.ones(len(node.shape), np.int64) if keepdims else np.zeros(0, np.int64)
    return ex.emit("Reshape", [index, ex.constant(shape, "shape")], "Reshape")


exports("ArgMax", "ArgMin")(_export_arg)
for _onnx_type in ("ReduceMin", "ReduceProd", "ReduceLogSumExp", "ReduceSum", "ReduceMean", "ReduceMax"):
    exports(_onnx_type)(_export_reduce(_onnx_type))
