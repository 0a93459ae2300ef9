"""Neural-network ops: matmul, softmax, convolution, pooling, dropout, resize, normalizations. Convolution and
pooling are N-d, with groups, dilations, explicit or automatic pads and ceil_mode, as tinyflow's are."""
import numpy as np

from ... import ops
from ...nodes import Node, Variable
from ...ops.array_ops import ReshapeLike
from ...ops.conv import Conv, ConvTranspose
from ...ops.normalization import LayerNorm
from ...ops.pooling import AvgPool, MaxPool, MaxPoolIndices
from ...ops.random_ops import DropoutMask
from ...ops.resize import Resize
from ...ops.windows import resolve_padding
from ...errors import OnnxExportError
from ...passes.conv_epilogue import inference_batch_norm
from .rule_tables import OPSET, exports, imports, op_rule, same_op


@imports("MatMul")
def import_matmul(ctx, node):
    """numpy's matmul (as tfl.matmul): a 1-D operand is a row (left) or a column (right) the result drops again."""
    if ctx.input_shape(0) is None or ctx.input_shape(1) is None:
        raise ctx.unsupported("MatMul of inputs of unknown rank")
    return ops.matmul(ctx.input(0), ctx.input(1), name=ctx.name)


@imports("Softmax", "LogSoftmax")
def import_softmax(ctx, node):
    """(log) softmax along `axis`; before opset 13 the input is seen as 2-D: dims before axis x dims from it."""
    fn, x = ops.softmax if ctx.op_type == "Softmax" else ops.log_softmax, ctx.input(0)
    if ctx.opset >= 13:
        return fn(x, axis=ctx.attr("axis", -1), name=ctx.name)
    axis = ctx.attr("axis", 1)
    rank = len(ctx.input_shape(0, "an opset < 13 softmax of"))
    axis = axis + rank if axis < 0 else axis
    if axis == rank - 1:
        return fn(x, axis=-1, name=ctx.name)
    flat = ops.reshape(x, (-1, int(np.prod(x.shape[axis:]))) if None not in x.shape[axis:] else
                       (int(np.prod(x.shape[:axis])), -1))
    return ReshapeLike(fn(flat, axis=-1), x, name=ctx.name)


@imports("Gemm")
def import_gemm(ctx, node):
    """alpha · A' B' + beta · C, A' = Aᵀ if transA, B' = Bᵀ if transB (torch's Linear exports as this)."""
    a, b, c = ctx.input(0), ctx.input(1), ctx.input(2)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    ctx.attr("broadcast", 1)  # opsets < 7: C broadcasts when told; numpy broadcasting covers what it allowed
    a = ops.transpose(a) if ctx.attr("transA", 0) else a
    b = ops.transpose(b) if ctx.attr("transB", 0) else b
    y = ops.matmul(a, b, name=ctx.name if alpha == 1.0 and c is None else None)
    if alpha != 1.0:
        y = ops.multiply(y, np.asarray(alpha, a.dtype), name=ctx.name if c is None else None)
    if c is None:
        return y
    return ops.add(y, c if beta == 1.0 else ops.multiply(c, np.asarray(beta, a.dtype)), name=ctx.name)


def window_attributes(ctx, kernel_shape, ceil_mode=False):
    """(stride, padding, dilation) from strides / pads / auto_pad / dilations; auto_pad as tinyflow's padding mode."""
    rank = len(kernel_shape)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    strides = tuple(ctx.attr("strides", [1] * rank))
    pads = ctx.attr("pads", [0] * 2 * rank)
    dilations = tuple(ctx.attr("dilations", [1] * rank))
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank:
        raise ctx.fail(f"strides {list(strides)}, dilations {list(dilations)} and pads {pads} do not fit a "
                       f"{rank}-D kernel {list(kernel_shape)}")
    if auto_pad in ("NOTSET", ""):
        padding = tuple(zip(pads[:rank], pads[rank:]))
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        padding = auto_pad.lower()
        if ceil_mode and padding != "valid":
            shape = ctx.input_shape(0, f"auto_pad={auto_pad} with ceil_mode on", known=slice(2, None))
            padding = resolve_padding(padding, shape[2:], kernel_shape, strides, dilations)
    else:
        raise ctx.fail(f"auto_pad={auto_pad!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    return strides, padding, dilations


@imports("Conv", "ConvTranspose")
def import_convolution(ctx, node):
    """N-d (transposed) convolution with groups, dilations, explicit or automatic pads, the bias added per channel."""
    x, w, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    ctx.input_shape(1, "a filter (input 1) being", known=slice(2, None))
    kernel = ctx.attr("kernel_shape", list(w.shape[2:]))
    if list(kernel) != list(w.shape[2:]):
        raise ctx.fail(f"kernel_shape {kernel} differs from the filter's shape {w.shape}")
    name = None if bias is not None else ctx.name
    y = (Conv(x, w, *window_attributes(ctx, kernel), ctx.attr("group", 1), name=name) if ctx.op_type == "Conv"
         else _conv_transpose(ctx, x, w, kernel, name))
    return y if bias is None else ops.add(y, ops.reshape(bias, (1, -1) + (1,) * len(kernel)), name=ctx.name)


def _conv_transpose(ctx, x, w, kernel, name):
    """The transposed convolution; output_shape (or auto_pad SAME_*) gives the pads, as ONNX computes them."""
    rank = len(kernel)
    stride, padding, dilation = window_attributes(ctx, kernel)
    extra = list(ctx.attr("output_padding", [0] * rank))
    output_shape = ctx.attr("output_shape", None)
    if output_shape is not None or padding in ("same_upper", "same_lower"):
        shape = ctx.input_shape(0, "output_shape or auto_pad SAME_* on", known=slice(2, None))
        wanted = list(output_shape)[-rank:] if output_shape is not None else [n * s for n, s in zip(shape[2:], stride)]
        pads = []
        for i, (n, k, s, d, want) in enumerate(zip(shape[2:], kernel, stride, dilation, wanted)):
            total = s * (n - 1) + extra[i] + (k - 1) * d + 1 - want
            extra[i] -= min(total, 0)  # an output larger than the strided windows reach is padded at the end
            total = max(total, 0)
            small, large = total // 2, total - total // 2
            pads.append((small, large) if padding == "same_upper" else (large, small))
        padding = tuple(pads)
    return ConvTranspose(x, w, stride, padding, tuple(extra), dilation, ctx.attr("group", 1), name=name)


@imports("MaxPool", "AveragePool")
def import_pool(ctx, node):
    """N-d pooling; MaxPool's Indices are flat indices into the whole tensor, AveragePool's count_include_pad."""
    x, kernel, ceil_mode = ctx.input(0), ctx.attr("kernel_shape"), bool(ctx.attr("ceil_mode", 0))
    stride, padding, dilation = window_attributes(ctx, kernel, ceil_mode)
    window = dict(kernel_size=tuple(kernel), stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    if ctx.op_type == "AveragePool":
        return AvgPool(x, **window, count_include_pad=bool(ctx.attr("count_include_pad", 0)), name=ctx.name)
    y = MaxPool(x, **window, name=ctx.name)
    storage_order = ctx.attr("storage_order", 0)  # read even when the Indices output is not
    return (y, MaxPoolIndices(x, **window, whole_tensor=True, storage_order=storage_order)) if ctx.output_used(1) else y


@exports("ScaledDotProductAttention")
def export_attention(ex, node):
    """softmax(q kᵀ · scale + mask) v as MatMul, Mul, Add or Where, Softmax, MatMul (re-fused on import)."""
    from onnx import numpy_helper

    def constant(value, hint):  # a Constant node, not an initializer: a trainable import keeps it a constant
        return ex.emit("Constant", [], hint, value=numpy_helper.from_array(np.array(value, node.dtype)))
    q, k, v, *mask = [ex.name_of(i) for i in node.inputs]
    rank = len(node.inputs[1].shape)
    keys = ex.emit("Transpose", [k], "keys", perm=[*range(rank - 2), rank - 1, rank - 2])
    scores = ex.emit("Mul", [ex.emit("MatMul", [q, keys], "scores"), constant(node.scale, "scale")], "scaled")
    if mask and node.inputs[3].dtype == bool:
        scores = ex.emit("Where", [mask[0], scores, constant(-np.inf, "masked")], "masked")
    elif mask:
        scores = ex.emit("Add", [scores, mask[0]], "masked")
    return ex.emit("MatMul", [ex.emit("Softmax", [scores], "weights", axis=-1), v], "attention")


exports("MatMul")(same_op("MatMul"))
exports("Softmax")(same_op("Softmax", axis="axis"))
exports("LogSoftmax")(same_op("LogSoftmax", axis="axis"))
imports("GlobalAveragePool")(op_rule(ops.global_avg_pool))
imports("GlobalMaxPool")(op_rule(ops.global_max_pool))
imports("InstanceNormalization")(op_rule(ops.instance_norm, eps=("epsilon", 1e-5)))


@imports("Dropout")
def import_dropout(ctx, node):
    """Identity unless training_mode is true; then a random keep-mask (drawn as ONNX's reference draws it)."""
    x = ctx.input(0)
    ctx.attr("is_test", 0)  # opsets < 7: inference is what tinyflow imports unless training_mode says otherwise
    rate = _value_or_node(ctx, 1, ctx.attr("ratio", 0.5))  # an attribute before opset 12, an input since
    training = _value_or_node(ctx, 2, False)
    seed = ctx.attr("seed", None)
    if isinstance(training, np.ndarray) and not bool(training.reshape(())) or (
            not isinstance(rate, Node) and float(rate) == 0.0):
        y = ops.identity(x, name=ctx.name)
        return (y, ops.cast(ops.ones_like(x), np.bool_)) if ctx.output_used(1) else y
    if isinstance(rate, np.ndarray):
        rate = float(rate.reshape(()))
    mask = DropoutMask(x, rate, None if isinstance(training, np.ndarray) else training, seed=seed)
    y = ops.multiply(x, mask, name=ctx.name)
    return (y, ops.logical_not(ops.equal(mask, np.zeros((), x.dtype)))) if ctx.output_used(1) else y


def _value_or_node(ctx, i, default):
    """Input i's value when known at import time, its node when computed at run time, `default` when omitted."""
    if not ctx.has_input(i):
        return np.array(default)
    value = ctx.value(i)
    return ctx.input(i) if value is None else value


_RESIZE_ATTRIBUTES = {"coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.75, "exclude_outside": False,
                      "antialias": False, "extrapolation_value": 0.0, "keep_aspect_ratio_policy": "stretch",
                      "nearest_mode": "round_prefer_floor"}


@imports("Resize", "Upsample")
def import_resize(ctx, node):
    """Nearest, linear or cubic resizing by scales or to sizes; opset 10's Resize and Upsample take (X, scales)."""
    x, rank = ctx.input(0), len(ctx.input_shape(0, "resizing"))
    mode = ctx.attr("mode", "nearest")
    mode = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    old = ctx.op_type == "Upsample" or ctx.opset < 11
    options = {k: bool(ctx.attr(k, v)) if isinstance(v, bool) else ctx.attr(k, v)  # ONNX's 0 / 1 flags as bools
               for k, v in _RESIZE_ATTRIBUTES.items()}
    if old:
        options.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    scales_input, sizes_input = (1, None) if old else (2, 3)
    roi = ctx.value(1) if not old and ctx.has_input(1) else None
    if roi is None and ctx.has_input(1) and options["coordinate_transformation_mode"] == "tf_crop_and_resize":
        roi = ctx.static(1, "roi")  # (old opsets have no roi, and their coordinate mode is asymmetric)
    axes = ctx.attr("axes", None)
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]

    def per_axis(values, fill):
        given = dict(zip(axes, values))
        return [given.get(a, fill) for a in range(rank)]
    scales = sizes = None
    if sizes_input is not None and ctx.has_input(sizes_input) and np.size(ctx.input_shape(sizes_input) or (1,)):
        if ctx.known_ints(sizes_input) is None and len(axes) == rank:  # the op reads sizes computed at run time
            sizes = ops.cast(ctx.input(sizes_input), np.int64)
        else:
            sizes = per_axis(ctx.ints(sizes_input, "sizes"), None)
    elif ctx.has_input(scales_input):
        scales = per_axis([float(v) for v in ctx.static(scales_input, "scales").reshape(-1)], 1.0)
    elif ctx.has_attr("scales"):  # Upsample before opset 9
        scales = per_axis(ctx.attr("scales"), 1.0)
    else:
        raise ctx.fail("it has neither scales nor sizes")
    roi = np.asarray(roi, np.float64).reshape(2, -1) if roi is not None and np.size(roi) else None
    if roi is not None:  # (starts..., ends...) on `axes`
        roi = tuple(zip(*roi) if roi.shape[1] != len(axes) or len(axes) == rank else
                    zip(per_axis(roi[0], 0.0), per_axis(roi[1], 1.0)))
    return Resize(x, sizes=sizes, scales=scales, mode=mode, roi=roi, name=ctx.name, **options)


@imports("LayerNormalization")
def import_layer_norm(ctx, node):
    """(x - mean) / sqrt(var + ε) over the axes from `axis` on, · Scale + B; optional Mean and InvStdDev outputs."""
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = len(ctx.input_shape(0, "layer normalization of"))
    axis = ctx.attr("axis", -1)
    if not -rank <= axis < rank:
        raise ctx.fail(f"axis {axis} is out of range for an input of rank {rank}")
    axis %= rank
    eps = ctx.attr("epsilon", 1e-5)
    ctx.attr("stash_type", 1)  # float32 statistics; tinyflow computes them in the input's own type
    y = ops.multiply(LayerNorm(x, axis=axis, eps=eps), scale, name=ctx.name if bias is None else None)
    if bias is not None:
        y = ops.add(y, bias, name=ctx.name)
    if not (ctx.output_used(1) or ctx.output_used(2)):
        return y
    axes = tuple(range(axis, rank))
    variance = ops.var(x, axes, correction=0, keepdims=True)
    return y, ops.reduce_mean(x, axes, keepdims=True), ops.reciprocal(ops.sqrt(variance + np.asarray(eps, x.dtype)))


@imports("GroupNormalization")
def import_group_norm(ctx, node):
    """num_groups groups of channels normalized, then a per-channel scale and bias (per group before opset 21)."""
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.input(2)
    groups = ctx.attr("num_groups")
    ctx.attr("stash_type", 1)  # float32 statistics; tinyflow computes them in the input's own type
    eps = ctx.attr("epsilon", 1e-5)
    if ctx.opset < 21:  # one scale and bias per group: repeated for the group's channels
        channels = None if x.shape is None or len(x.shape) < 2 else x.shape[1]
        if channels is None:
            raise ctx.unsupported("per-group scales on an input of unknown channel count")
        index = np.repeat(np.arange(groups), channels // groups)
        scale, bias = ops.gather(scale, index), ops.gather(bias, index)
    return ops.group_norm(x, groups, scale, bias, eps=eps, name=ctx.name)


@exports("Conv", "MaxPool", "AvgPool")
def _export_window(ex, node):
    """Conv, MaxPool, AveragePool: the window's strides, dilations and pads (auto_pad for the padding modes)."""
    window = dict(strides=list(node.stride), dilations=list(node.dilation))
    window.update({"auto_pad": node.padding.upper()} if isinstance(node.padding, str) else
                  {"pads": [p[0] for p in node.padding] + [p[1] for p in node.padding]})
    if node.op_type == "Conv":
        return ex.emit("Conv", [ex.name_of(i) for i in node.inputs], "Conv",
                       kernel_shape=list(node.inputs[1].shape[2:]), group=node.groups, **window)
    onnx_type = "AveragePool" if node.op_type == "AvgPool" else "MaxPool"
    if onnx_type == "AveragePool":  # AveragePool has dilations from opset 19 on
        if any(d != 1 for d in window.pop("dilations")):
            raise OnnxExportError(f"AvgPool '{node.name}' is dilated {node.dilation}; opset {OPSET}'s "
                                  "AveragePool has no dilations")
        window["count_include_pad"] = int(node.count_include_pad)
    return ex.emit(onnx_type, [ex.name_of(node.inputs[0])], onnx_type, kernel_shape=list(node.kernel),
                   ceil_mode=int(node.ceil_mode), **window)


@imports("BatchNormalization")
def import_batch_norm(ctx, node):
    """scale·(x - mean)/sqrt(var + ε) + B per channel, built as tfl.nn.BatchNorm2d builds it (so it exports back to
    one BatchNormalization) on the running statistics, or the batch's with training_mode."""
    training = bool(ctx.attr("training_mode", 0))
    if any(ctx.output_used(k) for k in (3, 4)) or (ctx.opset < 14 and any(ctx.output_used(k) for k in (1, 2))):
        raise ctx.unsupported("the saved-statistics outputs of opsets before 14")
    if not ctx.attr("spatial", 1):
        raise ctx.unsupported("spatial=0")
    momentum = ctx.attr("momentum", 0.9)
    ctx.attr("is_test", 0)  # opset < 7: inference unless training_mode says otherwise
    ctx.attr("consumed_inputs", None)  # opset 1 bookkeeping
    epsilon = ctx.attr("epsilon", 1e-5)
    x = ctx.input(0)
    if x.shape is None or len(x.shape) < 2:
        raise ctx.unsupported(f"an input of shape {x.shape} (needs a known rank of 2 or more)")
    per_channel = (1, -1) + (1,) * (len(x.shape) - 2)
    scale, bias = (ops.reshape(ctx.input(i), per_channel) for i in (1, 2))
    running_mean, running_var = (ctx.input(i, trainable=False) for i in (3, 4))
    if training:  # the batch's statistics normalize, and the running ones move toward them
        axes = (0,) + tuple(range(2, len(x.shape)))
        mean, var = ops.reduce_mean(x, axes, keepdims=True), ops.var(x, axes, correction=0, keepdims=True)
    else:
        mean, var = (ops.reshape(v, per_channel) for v in (running_mean, running_var))
    y = ops.add((x - mean) / ops.sqrt(var + np.asarray(epsilon, dtype=x.dtype)) * scale, bias, name=ctx.name)
    if not training:
        return y
    keep = np.asarray(momentum, x.dtype)  # the running statistics move toward the batch's
    return (y, *(running * keep + ops.reshape(batch, (-1,)) * (1 - keep)
                 for running, batch in ((running_mean, mean), (running_var, var))))


def batch_norm_parts(ex, node):
    """(x, γ, β, mean, var, ε) if `node` is γ·(x - mean)/sqrt(var + ε) + β on 1-D Variables (what tfl.nn's batch
    norms build for evaluation, and the import rule builds), else None."""
    parts = inference_batch_norm(node, ex.inputs)
    if parts is None or parts[2].op_type != "Sqrt" or parts[2].inputs[0].op_type != "Add":
        return None

    def variable(n):
        n = n.inputs[0] if n.op_type == "Reshape" else None
        return n if isinstance(n, Variable) and n.shape is not None and len(n.shape) == 1 else None
    x, mean, root, gamma, beta = parts
    var, eps = root.inputs[0].inputs
    eps, found = ex.static_value(eps), [variable(n) for n in (gamma, beta, mean, var)]
    if eps is None or np.size(eps) != 1 or None in found:
        return None
    return (x, *found, float(np.asarray(eps).reshape(())))
