"""Neural-network ops: MatMul, Softmax, LogSoftmax, Conv, MaxPool, AveragePool, BatchNormalization.

Today's tinyflow convolution and pooling are 2-D (NCHW) with symmetric padding; the rules refuse,
by name, the attribute values they cannot honour (groups, dilations, ceil_mode, ...).
"""
import numpy as np

from ... import ops
from ...nodes import Variable
from ...ops.array_ops import ReshapeLike
from ..errors import OnnxExportError
from . import OPSET, exports, imports, same_op


# ---------------------------------------------------------------- MatMul
@imports("MatMul")
def import_matmul(ctx, node):
    """numpy's matmul: a 1-D operand is a row (left) or a column (right) that the result drops again."""
    a, b = ctx.input(0), ctx.input(1)
    if a.shape is None or b.shape is None:
        raise ctx.unsupported("MatMul of inputs of unknown rank")
    vector_a, vector_b = len(a.shape) == 1, len(b.shape) == 1
    if vector_a:
        a = ops.reshape(a, (1, -1))
    if vector_b:
        b = ops.reshape(b, (-1, 1))
    if not (vector_a or vector_b):
        return ops.matmul(a, b, name=ctx.name)
    product = ops.matmul(a, b)
    key = (Ellipsis,) + ((0,) if vector_a else ()) + ((slice(None),) if vector_a and not vector_b else ()) \
        + ((0,) if vector_b else ())
    return ops.get_item(product, key, name=ctx.name)


exports("MatMul")(same_op("MatMul"))


# ---------------------------------------------------------------- Softmax, LogSoftmax
def _softmax(fn):
    def rule(ctx, node):
        x = ctx.input(0)
        if ctx.opset >= 13:
            return fn(x, axis=ctx.attr("axis", -1), name=ctx.name)
        # before opset 13 the input is seen as 2-D: dims before axis x dims from it
        axis = ctx.attr("axis", 1)
        if x.shape is None:
            raise ctx.unsupported("an opset < 13 softmax of an input of unknown rank")
        axis = axis + len(x.shape) if axis < 0 else axis
        if axis == len(x.shape) - 1:
            return fn(x, axis=-1, name=ctx.name)
        flat = ops.reshape(x, (-1, int(np.prod(x.shape[axis:]))) if None not in x.shape[axis:] else
                           (int(np.prod(x.shape[:axis])), -1))
        return ReshapeLike(fn(flat, axis=-1), x, name=ctx.name)
    return rule


imports("Softmax")(_softmax(ops.softmax))
imports("LogSoftmax")(_softmax(ops.log_softmax))


def _export_softmax(onnx_type):
    return lambda ex, node: ex.emit(onnx_type, [ex.name_of(node.inputs[0])], onnx_type, axis=int(node.axis))


exports("Softmax")(_export_softmax("Softmax"))
exports("LogSoftmax")(_export_softmax("LogSoftmax"))


# ---------------------------------------------------------------- Conv and pooling (2-D)
def window_attributes(ctx, kernel_shape):
    """(stride, padding) pairs for tinyflow's 2-D windows from strides/pads/auto_pad/dilations."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    strides = ctx.attr("strides", [1] * len(kernel_shape))
    pads = ctx.attr("pads", [0] * 2 * len(kernel_shape))
    dilations = ctx.attr("dilations", [1] * len(kernel_shape))
    if len(kernel_shape) != 2:
        raise ctx.unsupported(f"a {len(kernel_shape)}-D window (tinyflow's {ctx.op_type} is 2-D)")
    if any(d != 1 for d in dilations):
        raise ctx.unsupported(f"dilations {dilations}")
    if auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    elif auto_pad != "NOTSET":
        raise ctx.unsupported(f"auto_pad={auto_pad}")
    if pads[:2] != pads[2:]:
        raise ctx.unsupported(f"asymmetric pads {pads}")
    return tuple(strides), tuple(pads[:2])


@imports("Conv")
def import_conv(ctx, node):
    x, w, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.attr("group", 1) != 1:
        raise ctx.unsupported(f"group={ctx.attr('group')}")
    if w.shape is None:
        raise ctx.unsupported("a filter of unknown shape")
    kernel = ctx.attr("kernel_shape", list(w.shape[2:]))
    stride, padding = window_attributes(ctx, kernel)
    y = ops.conv2d(x, w, stride=stride, padding=padding, name=None if bias is not None else ctx.name)
    if bias is None:
        return y
    return ops.add(y, ops.reshape(bias, (1, -1, 1, 1)), name=ctx.name)


def _pool(fn, onnx_type):
    def rule(ctx, node):
        kernel = ctx.attr("kernel_shape")
        stride, padding = window_attributes(ctx, kernel)
        if ctx.attr("ceil_mode", 0):
            raise ctx.unsupported("ceil_mode=1")
        if onnx_type == "MaxPool":
            if ctx.attr("storage_order", 0) or ctx.output_used(1):
                raise ctx.unsupported("the Indices output of MaxPool")
        elif not ctx.attr("count_include_pad", 0) and any(padding):
            raise ctx.unsupported("average pooling that leaves padding out of the count (count_include_pad=0) "
                                  "with non-zero pads")
        return fn(ctx.input(0), tuple(kernel), stride=stride, padding=padding, name=ctx.name)
    return rule


imports("MaxPool")(_pool(ops.max_pool2d, "MaxPool"))
imports("AveragePool")(_pool(ops.avg_pool2d, "AveragePool"))


def _onnx_pads(node):
    """The op's padding as ONNX attributes: auto_pad for the modes, else pads [begin..., end...]."""
    if isinstance(node.padding, str):
        return {"auto_pad": node.padding.upper()}
    return {"pads": [p[0] for p in node.padding] + [p[1] for p in node.padding]}


def _export_conv(ex, node):
    w = node.inputs[1]
    return ex.emit("Conv", [ex.name_of(node.inputs[0]), ex.name_of(w)], "Conv", kernel_shape=list(w.shape[2:]),
                   strides=list(node.stride), dilations=list(node.dilation), group=node.groups, **_onnx_pads(node))


def _export_pool(onnx_type):
    def export(ex, node):
        extra = {"count_include_pad": int(node.count_include_pad)} if onnx_type == "AveragePool" else {}
        if any(d != 1 for d in node.dilation):
            if onnx_type == "AveragePool":  # AveragePool has dilations from opset 19 on
                raise OnnxExportError(f"AvgPool '{node.name}' is dilated {node.dilation}; opset {OPSET}'s "
                                      "AveragePool has no dilations")
            extra["dilations"] = list(node.dilation)
        return ex.emit(onnx_type, [ex.name_of(node.inputs[0])], onnx_type, kernel_shape=list(node.kernel),
                       strides=list(node.stride), ceil_mode=int(node.ceil_mode), **_onnx_pads(node), **extra)
    return export


exports("Conv")(_export_conv)
exports("MaxPool")(_export_pool("MaxPool"))
exports("AvgPool")(_export_pool("AveragePool"))


# ---------------------------------------------------------------- BatchNormalization (inference)
@imports("BatchNormalization")
def import_batch_norm(ctx, node):
    """scale·(x - mean)/sqrt(var + ε) + B per channel (axis 1), on the moving statistics.

    Built as tfl.nn.BatchNorm2d builds it for evaluation, so it exports back to one BatchNormalization.
    The statistics become non-trainable Variables (torch keeps them as buffers, not parameters).
    """
    if ctx.attr("training_mode", 0) or any(ctx.output_used(k) for k in (1, 2, 3, 4)):
        raise ctx.unsupported("training mode (batch statistics and running-mean outputs)")
    if not ctx.attr("spatial", 1):
        raise ctx.unsupported("spatial=0")
    ctx.attr("momentum", 0.9)  # only used in training mode
    ctx.attr("is_test", 0)  # opset < 7: inference is all tinyflow imports anyway
    ctx.attr("consumed_inputs", None)  # opset 1 bookkeeping
    epsilon = ctx.attr("epsilon", 1e-5)
    x = ctx.input(0)
    if x.shape is None or len(x.shape) < 2:
        raise ctx.unsupported(f"an input of shape {x.shape} (needs a known rank of 2 or more)")
    per_channel = (1, -1) + (1,) * (len(x.shape) - 2)
    scale, bias = (ops.reshape(ctx.input(i), per_channel) for i in (1, 2))
    mean, var = (ops.reshape(ctx.input(i, trainable=False), per_channel) for i in (3, 4))
    eps = np.asarray(epsilon, dtype=x.dtype)
    normalized = (x - mean) / ops.sqrt(var + eps)
    return ops.add(normalized * scale, bias, name=ctx.name)


def batch_norm_parts(ex, node):
    """(x, γ, β, mean, var, ε) if `node` is γ·(x - mean)/sqrt(var + ε) + β on 1-D Variables, else None.

    That is what tfl.nn.BatchNorm1d/2d build for evaluation (the training flag folded to False),
    and what the BatchNormalization import rule builds.
    """
    def variable(n):
        n = n.inputs[0] if n.op_type == "Reshape" and n.target[:2] == (1, -1) else None
        return n if isinstance(n, Variable) and n.shape is not None and len(n.shape) == 1 else None
    scaled, shift = node.inputs
    if scaled.op_type != "Multiply" or variable(shift) is None or variable(scaled.inputs[1]) is None:
        return None
    normalized = scaled.inputs[0]
    if normalized.op_type == "Where":
        flag = ex.static_value(normalized.inputs[0])
        if flag is None or np.ndim(flag) != 0 or bool(flag):
            return None
        normalized = normalized.inputs[2]
    if normalized.op_type != "Divide":
        return None
    centered, root = normalized.inputs
    if centered.op_type != "Subtract" or root.op_type != "Sqrt" or root.inputs[0].op_type != "Add":
        return None
    var_plus_eps = root.inputs[0]
    eps = ex.static_value(var_plus_eps.inputs[1])
    mean, var = variable(centered.inputs[1]), variable(var_plus_eps.inputs[0])
    x = centered.inputs[0]
    if mean is None or var is None or eps is None or np.size(eps) != 1 or x.shape is None or len(x.shape) < 2:
        return None
    return x, variable(scaled.inputs[1]), variable(shift), mean, var, float(np.asarray(eps).reshape(()))
