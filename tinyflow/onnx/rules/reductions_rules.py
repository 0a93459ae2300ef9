"""Reductions and ArgMax / ArgMin. Since opset 13 (ReduceSum) and 18 (the others) the axes are an input, which must
be known when the graph is built; before, they are an attribute. ONNX keeps the input's element type."""
from ... import ops
from ...errors import OnnxExportError
from ..storage_types import onnx_type
from .rule_tables import exports, imports, int64s, op_rule

_REDUCTIONS = {  # ONNX op type -> fn(x, axes, keepdims=, name=)
    "ReduceSum": ops.reduce_sum, "ReduceMean": ops.reduce_mean, "ReduceMax": ops.reduce_max,
    "ReduceMin": ops.reduce_min, "ReduceProd": ops.reduce_prod, "ReduceL2": ops.norm,
    "ReduceLogSumExp": ops.reduce_logsumexp,
    "ReduceSumSquare": lambda x, axes, **kwargs: ops.reduce_sum(ops.square(x), axes, **kwargs),
    "ReduceL1": lambda x, axes, **kwargs: ops.reduce_sum(ops.abs(x), axes, **kwargs),
    "ReduceLogSum": lambda x, axes, keepdims, name: ops.log(ops.reduce_sum(x, axes, keepdims=keepdims), name=name)}


@imports(*_REDUCTIONS)
def import_reduce(ctx, node):
    """The reduction over the axes (an input or an attribute); no axes: all of them, or none with noop."""
    keepdims = bool(ctx.attr("keepdims", 1))
    noop, axes, x = ctx.attr("noop_with_empty_axes", 0), ctx.ints(1, "axes", "axes"), ctx.input(0)
    if not axes and noop:
        return ops.identity(x, name=ctx.name)
    if not axes and keepdims and x.shape is None:
        raise ctx.unsupported("keepdims=1 over all axes of an input of unknown rank")
    result = _REDUCTIONS[ctx.op_type](x, tuple(axes) if axes else None, keepdims=keepdims, name=ctx.name)
    return ops.cast(result, x.dtype)  # numpy sums small ints as int64 and averages ints as floats


for _fn in (ops.reductions.ArgMax, ops.reductions.ArgMin):
    imports(_fn.__name__)(op_rule(_fn, axis=("axis", 0), keepdims=("keepdims", True),
                                  select_last_index=("select_last_index", False)))


@exports("ReduceMin", "ReduceProd", "ReduceLogSumExp", "ReduceSum", "ReduceMean", "ReduceMax")
def export_reduce(ex, node):
    """The ONNX reduction of the same name; its axes are an input of ReduceSum (opset 13 on), else an attribute."""
    x, keepdims = ex.name_of(node.inputs[0]), int(node.keepdims)
    if node.axes is None and node.axis is not None:
        raise OnnxExportError(f"{node.op_type} '{node.name}' reduces axis {node.axis} of an input of unknown "
                              "rank; give the input a known rank")
    if node.axis is None:
        return ex.emit(node.op_type, [x], node.op_type, keepdims=keepdims)
    if not node.axes:  # nothing reduced; ONNX reads empty axes as all of them. A Cast gives tinyflow's dtype
        return ex.emit("Cast", [x], "Cast", to=onnx_type(node.dtype))
    if node.op_type == "ReduceSum":
        return ex.emit("ReduceSum", [x, int64s(ex, node.axes, "axes")], "ReduceSum", keepdims=keepdims)
    return ex.emit(node.op_type, [x], node.op_type, axes=[int(a) for a in node.axes], keepdims=keepdims)


@exports("ArgMax", "ArgMin")
def export_arg(ex, node):
    """ArgMax / ArgMin; over the flattened input (axis None) as a reshape to 1-D first."""
    x, keepdims, onnx_type_name = ex.name_of(node.inputs[0]), int(node.keepdims), node.op_type
    attrs = {"select_last_index": int(node.select_last_index)} if node.select_last_index else {}
    if node.axis is not None:
        return ex.emit(onnx_type_name, [x], onnx_type_name, axis=int(node.axis), keepdims=keepdims, **attrs)
    flat = ex.emit("Reshape", [x, int64s(ex, [-1], "shape")], "Reshape")
    index = ex.emit(onnx_type_name, [flat], onnx_type_name, axis=0, keepdims=0, **attrs)
    return ex.emit("Reshape", [index, int64s(ex, [1] * len(node.shape) if keepdims else [], "shape")], "Reshape")
