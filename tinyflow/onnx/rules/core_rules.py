"""Constants, identity, casts and shapes. Shape and Size of static shapes are known at import time, so the shape
arithmetic ONNX exporters write (Shape -> Gather -> Concat -> Reshape) folds away."""
import math

import numpy as np

from ... import ops
from ...ops import runtime_shapes
from ...shapes import is_fully_known
from ...errors import OnnxExportError
from ..storage_types import STORAGE_TYPES, RoundToType, numpy_dtype, onnx_type, onnx_type_name
from .rule_tables import exports, imports, op_rule, same_op

_CONSTANT_FORMS = {"value": None, "value_float": np.float32, "value_floats": np.float32,
                   "value_int": np.int64, "value_ints": np.int64}
imports("Identity")(op_rule(ops.identity))
exports("Identity", "StopGradient")(same_op("Identity"))
exports("Cast")(same_op("Cast", to=lambda node: onnx_type(node.target_dtype)))
exports("Shape")(same_op("Shape", start="start", end="end"))
exports("Size")(same_op("Size"))


@imports("Constant")
def import_constant(ctx, node):
    """A value known at import time (it becomes a tinyflow Constant where a node needs it)."""
    for form, dtype in _CONSTANT_FORMS.items():
        if ctx.has_attr(form):
            return np.asarray(ctx.attr(form), dtype=dtype)
    if node.attribute:  # sparse_value, value_string(s)
        raise ctx.unsupported(f"a Constant given as '{node.attribute[0].name}'")
    raise ctx.fail("it carries no value attribute")


@exports("UndefinedValue")
def export_undefined(ex, node):
    """A converted program's value that no path reads (a variable before its first assignment): its zeros."""
    if node.dtype is None:
        raise OnnxExportError(f"'{node.name}' stands for a variable that never gets a value; assign it on every path")
    return ex.constant(node.compute(), "undefined")


@imports("Cast", "CastLike")
def import_cast(ctx, node):
    """A cast to `to`, or to input 1's element type (a narrow one if input 1 holds a narrow type's values)."""
    to = ctx.attr("to") if ctx.op_type == "Cast" else ctx.elem_type(1)
    saturate, round_mode = ctx.attr("saturate", 1), ctx.attr("round_mode", "up")  # for float8 types only
    dtype = numpy_dtype(to, narrow=True)
    if dtype is None:
        raise ctx.unsupported(f"a cast to {onnx_type_name(to)}")
    if to not in STORAGE_TYPES:
        return ops.cast(ctx.input(0), dtype, name=ctx.name)
    return RoundToType(ops.cast(ctx.input(0), dtype), to, bool(saturate), round_mode, name=ctx.name)


@exports("RoundToType")
def export_round_to_type(ex, node):
    """A cast to the narrow type and back; opset 17 casts to bfloat16, the float8 / 4-bit / 2-bit types came later."""
    if node.elem_type != 16:
        raise OnnxExportError(f"RoundToType '{node.name}' rounds to {onnx_type_name(node.elem_type)}, which opset 17's "
                              "Cast lacks (only bfloat16 of the narrow types)")
    narrow = ex.emit("Cast", [ex.name_of(node.inputs[0])], "Cast", to=node.elem_type)
    return ex.emit("Cast", [narrow], "Cast", to=onnx_type(node.dtype))


@imports("Shape")
def import_shape(ctx, node):
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    shape = ctx.input_shape(0)
    if shape is not None and is_fully_known(shape[start:end]):
        return np.array(shape[start:end], dtype=np.int64)
    return runtime_shapes.shape(ctx.input(0), start, end, name=ctx.name)


@imports("Size")
def import_size(ctx, node):
    shape = ctx.input_shape(0)
    if is_fully_known(shape):
        return np.array(math.prod(shape), dtype=np.int64)
    return runtime_shapes.size(ctx.input(0), name=ctx.name)


@imports("ConstantOfShape")
def import_constant_of_shape(ctx, node):
    value = np.asarray(ctx.attr("value", np.zeros(1, np.float32)))
    if value.size != 1:
        raise ctx.fail(f"its value attribute holds {value.size} numbers; it must hold one")
    dims = ctx.value(0)
    if dims is not None and np.any(dims < 0):
        raise ctx.fail(f"its shape {dims.tolist()} has a negative dimension")
    return runtime_shapes.fill(ctx.input(0), value.reshape(()), value.dtype, name=ctx.name)  # folded when small


@exports("Fill", "ZerosLike", "OnesLike")
def export_fill(ex, node):
    """ConstantOfShape: of Fill's shape input, or of the Shape of the input ZerosLike / OnesLike copies."""
    from onnx import numpy_helper
    if node.op_type == "Fill":
        shape, value = ex.name_of(node.inputs[0]), np.asarray(node.value, node.fill_dtype)
    else:
        shape = ex.emit("Shape", [ex.name_of(node.inputs[0])], "Shape")
        value = np.asarray(node.op_type == "OnesLike", node.dtype)
    return ex.emit("ConstantOfShape", [shape], "Fill", value=numpy_helper.from_array(value.reshape(1), name="value"))
