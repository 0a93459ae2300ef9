"""Elementwise ops: arithmetic, math functions, activations, comparisons, logic, Where, Max/Min/Sum/Mean.

ONNX broadcasts like numpy since opset 7, as tinyflow does. ONNX keeps the first input's element
type where numpy would promote (Pow of float32 by int64, integer Div), so those rules cast back.
"""
import numpy as np

from ... import ops
from . import exports, imports, same_op
from .nn import batch_norm_parts


def _legacy_broadcast(ctx):
    """Opsets before 7 broadcast only when told, along an axis: refuse what tinyflow would read differently."""
    if ctx.attr("broadcast", 0) or ctx.attr("axis", None) is not None:
        raise ctx.unsupported("opset < 7 broadcasting with the 'broadcast'/'axis' attributes")


def _binary(fn):
    def rule(ctx, node):
        _legacy_broadcast(ctx)
        return fn(ctx.input(0), ctx.input(1), name=ctx.name)
    return rule


def _unary(fn):
    def rule(ctx, node):
        return fn(ctx.input(0), name=ctx.name)
    return rule


imports("Add")(_binary(ops.add))
imports("Sub")(_binary(ops.subtract))
imports("Mul")(_binary(ops.multiply))
imports("Equal")(_binary(ops.equal))
imports("Greater")(_binary(ops.greater))
imports("GreaterOrEqual")(_binary(ops.greater_equal))
imports("Less")(_binary(ops.less))
imports("LessOrEqual")(_binary(ops.less_equal))


@imports("Div")
def import_div(ctx, node):
    """a / b; integer inputs divide truncating toward zero, as in C (ONNX's rule)."""
    _legacy_broadcast(ctx)
    a, b = ctx.input(0), ctx.input(1)
    if a.dtype is not None and a.dtype.kind in "iu":
        return ops.cast(ops.divide(a, b), a.dtype, name=ctx.name)  # float64 quotient, truncated by the cast
    return ops.divide(a, b, name=ctx.name)


@imports("Pow")
def import_pow(ctx, node):
    """a ** b with the element type of a (the exponent may have another type)."""
    _legacy_broadcast(ctx)
    a, b = ctx.input(0), ctx.input(1)
    if a.dtype is not None and b.dtype is not None and a.dtype != b.dtype:
        return ops.cast(ops.power(a, b), a.dtype, name=ctx.name)
    return ops.power(a, b, name=ctx.name)


imports("Neg")(_unary(ops.negative))
imports("Abs")(_unary(ops.abs))
imports("Sqrt")(_unary(ops.sqrt))
imports("Exp")(_unary(ops.exp))
imports("Log")(_unary(ops.log))
imports("Sign")(_unary(ops.sign))
imports("Relu")(_unary(ops.relu))
imports("Sigmoid")(_unary(ops.sigmoid))
imports("Tanh")(_unary(ops.tanh))
imports("Softplus")(_unary(ops.softplus))
imports("Reciprocal")(_unary(ops.reciprocal))
imports("Floor")(_unary(ops.floor))
imports("Ceil")(_unary(ops.ceil))
imports("Sin")(_unary(ops.sin))
imports("Cos")(_unary(ops.cos))
imports("Erf")(_unary(ops.erf))
imports("Softsign")(_unary(ops.softsign))
imports("Not")(_unary(ops.logical_not))
imports("And")(_binary(ops.logical_and))
imports("Or")(_binary(ops.logical_or))
imports("Xor")(_binary(ops.logical_xor))
imports("PRelu")(_binary(ops.prelu))


@imports("Mod")
def import_mod(ctx, node):
    """The remainder with the divisor's sign (fmod=0, Python's %) or the dividend's (fmod=1, C's fmod)."""
    fmod = ctx.attr("fmod", 0)
    return (ops.fmod if fmod else ops.mod)(ctx.input(0), ctx.input(1), name=ctx.name)


@imports("Elu")
def import_elu(ctx, node):
    return ops.elu(ctx.input(0), alpha=ctx.attr("alpha", 1.0), name=ctx.name)


@imports("Selu")
def import_selu(ctx, node):
    return ops.selu(ctx.input(0), alpha=ctx.attr("alpha", 1.67326319217681884765625),
                    scale=ctx.attr("gamma", 1.05070102214813232421875), name=ctx.name)


@imports("HardSigmoid")
def import_hard_sigmoid(ctx, node):
    return ops.hard_sigmoid(ctx.input(0), alpha=ctx.attr("alpha", 0.2), beta=ctx.attr("beta", 0.5), name=ctx.name)


@imports("HardSwish")
def import_hard_swish(ctx, node):
    return ops.hard_swish(ctx.input(0), name=ctx.name)


@imports("Gelu")
def import_gelu(ctx, node):
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.fail(f"approximate={approximate!r} is not 'none' or 'tanh'")
    return ops.gelu(ctx.input(0), approximate=approximate, name=ctx.name)


@imports("Clip")
def import_clip(ctx, node):
    """x limited to [min, max]; the bounds are attributes before opset 11, optional inputs since."""
    if ctx.opset < 11:
        low, high = ctx.attr("min", None), ctx.attr("max", None)
    else:
        low, high = ctx.input(1), ctx.input(2)
    return ops.clip(ctx.input(0), low, high, name=ctx.name)


@imports("LeakyRelu")
def import_leaky_relu(ctx, node):
    return ops.leaky_relu(ctx.input(0), alpha=ctx.attr("alpha", 0.01), name=ctx.name)


@imports("Where")
def import_where(ctx, node):
    return ops.where(ctx.input(0), ctx.input(1), ctx.input(2), name=ctx.name)


def _variadic(fn):
    """Max / Min of any number of inputs, pairwise."""
    def rule(ctx, node):
        xs = ctx.inputs()
        if len(xs) == 1:
            return ops.identity(xs[0], name=ctx.name)
        result = xs[0]
        for i, x in enumerate(xs[1:], start=2):
            result = fn(result, x, name=ctx.name if i == len(xs) else None)
        return result
    return rule


imports("Max")(_variadic(ops.maximum))
imports("Min")(_variadic(ops.minimum))


@imports("Sum")
def import_sum(ctx, node):
    xs = ctx.inputs()
    return ops.identity(xs[0], name=ctx.name) if len(xs) == 1 else ops.add_n(xs, name=ctx.name)


@imports("Mean")
def import_mean(ctx, node):
    """The elementwise mean of any number of inputs (broadcast): their sum divided by their count."""
    xs = ctx.inputs()
    if len(xs) == 1:
        return ops.identity(xs[0], name=ctx.name)
    return ops.divide(ops.add_n(xs), float(len(xs)), name=ctx.name)


# ---------------------------------------------------------------- export
def _square(ex, node):
    x = ex.name_of(node.inputs[0])
    return ex.emit("Mul", [x, x], "Square")


def _multiply(ex, node):
    for i, inp in enumerate(node.inputs):  # x * dropout-mask in evaluation mode is x
        training = inp.training_input if inp.op_type == "DropoutMask" else None
        if training is not None and ex.static_value(training) is not None and not bool(ex.static_value(training)):
            return ex.name_of(node.inputs[1 - i])
    return ex.emit("Mul", [ex.name_of(i) for i in node.inputs], "Mul")


def _add(ex, node):
    """Add, or a whole inference-mode batch norm (tfl.nn.BatchNorm*d) as one BatchNormalization."""
    parts = batch_norm_parts(ex, node)
    if parts is not None:
        x, weight, bias, mean, var, eps = parts
        return ex.emit("BatchNormalization", [ex.name_of(n) for n in (x, weight, bias, mean, var)],
                       "BatchNormalization", epsilon=eps)
    return ex.emit("Add", [ex.name_of(i) for i in node.inputs], "Add")


def _where(ex, node):
    condition = ex.static_value(node.inputs[0])
    if condition is not None and np.ndim(condition) == 0:  # e.g. the training flag: fold the choice
        return ex.name_of(node.inputs[1] if bool(condition) else node.inputs[2])
    c, a, b = (ex.name_of(i) for i in node.inputs)
    if node.dtype == np.bool_:  # ONNX Where takes booleans, but onnxruntime has no kernel for them: logic instead
        chosen_a = ex.emit("And", [c, a], "And")
        chosen_b = ex.emit("And", [ex.emit("Not", [c], "Not"), b], "And")
        return ex.emit("Or", [chosen_a, chosen_b], "Where")
    return ex.emit("Where", [c, a, b], "Where")


def _leaky_relu(ex, node):
    return ex.emit("LeakyRelu", [ex.name_of(node.inputs[0])], "LeakyRelu", alpha=float(node.alpha))


def _mod(ex, node):
    """Mod; np.mod of floats (the divisor's sign) as fmod corrected where the signs differ (opset 17's Mod
    takes fmod=0 for integers only)."""
    a, b = (ex.name_of(i) for i in node.inputs)
    if node.fmod or node.dtype.kind != "f":
        return ex.emit("Mod", [a, b], "Mod", fmod=int(node.fmod))
    rest = ex.emit("Mod", [a, b], "Mod", fmod=1)
    zero = ex.constant(np.zeros((), node.dtype), "zero")
    signs_differ = ex.emit("Xor", [ex.emit("Less", [rest, zero], "Less"), ex.emit("Less", [b, zero], "Less")], "Xor")
    fix = ex.emit("And", [ex.emit("Not", [ex.emit("Equal", [rest, zero], "Equal")], "Not"), signs_differ], "And")
    return ex.emit("Where", [fix, ex.emit("Add", [rest, b], "Add"), rest], "Mod")


def _gelu(ex, node):
    """Gelu is opset 20: opset 17 gets its formula, 0.5 x (1 + erf(x / √2)) or the tanh form."""
    x = ex.name_of(node.inputs[0])

    def c(value):
        return ex.constant(np.asarray(value, node.dtype), "c")
    if node.approximate == "tanh":
        cube = ex.emit("Mul", [ex.emit("Mul", [x, x], "Mul"), x], "Mul")
        inner = ex.emit("Mul", [ex.emit("Add", [x, ex.emit("Mul", [cube, c(0.044715)], "Mul")], "Add"),
                                c(np.sqrt(2 / np.pi))], "Mul")
        curve = ex.emit("Tanh", [inner], "Tanh")
    else:
        curve = ex.emit("Erf", [ex.emit("Mul", [x, c(1 / np.sqrt(2))], "Mul")], "Erf")
    half = ex.emit("Mul", [x, c(0.5)], "Mul")
    return ex.emit("Mul", [half, ex.emit("Add", [curve, c(1.0)], "Add")], "Gelu")


def _elu(ex, node):
    return ex.emit("Elu", [ex.name_of(node.inputs[0])], "Elu", alpha=float(node.alpha))


exports("Mod")(_mod)
exports("Gelu")(_gelu)
exports("Elu")(_elu)
exports("Clip")(same_op("Clip"))
exports("Add")(_add)
exports("Multiply")(_multiply)
exports("Square")(_square)
exports("Where")(_where)
exports("LeakyRelu")(_leaky_relu)
for _tinyflow_type, _onnx_type in {
        "Subtract": "Sub", "Divide": "Div", "Power": "Pow", "Maximum": "Max", "Minimum": "Min",
        "Negative": "Neg", "Sqrt": "Sqrt", "Exp": "Exp", "Log": "Log", "Abs": "Abs", "Sign": "Sign",
        "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Relu": "Relu", "Softplus": "Softplus", "AddN": "Sum",
        "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "Less": "Less", "LessEqual": "LessOrEqual",
        "Equal": "Equal", "Reciprocal": "Reciprocal", "Floor": "Floor", "Ceil": "Ceil", "Sin": "Sin", "Cos": "Cos",
        "Erf": "Erf", "Softsign": "Softsign", "PRelu": "PRelu", "LogicalAnd": "And", "LogicalOr": "Or",
        "LogicalXor": "Xor", "LogicalNot": "Not"}.items():
    exports(_tinyflow_type)(same_op(_onnx_type))


# ---------------------------------------------------------------- activations outside the list, from tinyflow's ops
def _as(x, value):
    return np.asarray(value, x.dtype)


@imports("Celu")
def import_celu(ctx, node):
    """max(0, x) + min(0, α(e^(x/α) - 1))."""
    x, alpha = ctx.input(0), ctx.attr("alpha", 1.0)
    negative = _as(x, alpha) * (ops.exp(x / _as(x, alpha)) - _as(x, 1.0))
    return ops.add(ops.relu(x), ops.minimum(negative, _as(x, 0.0)), name=ctx.name)


@imports("Mish")
def import_mish(ctx, node):
    x = ctx.input(0)
    return ops.multiply(x, ops.tanh(ops.softplus(x)), name=ctx.name)


@imports("Swish")
def import_swish(ctx, node):
    x = ctx.input(0)
    return ops.multiply(x, ops.sigmoid(x * _as(x, ctx.attr("alpha", 1.0))), name=ctx.name)


@imports("ThresholdedRelu")
def import_thresholded_relu(ctx, node):
    x = ctx.input(0)
    return ops.where(x > _as(x, ctx.attr("alpha", 1.0)), x, _as(x, 0.0), name=ctx.name)


@imports("Shrink")
def import_shrink(ctx, node):
    """x + bias below -λ, x - bias above λ, 0 between."""
    x, bias, lambd = ctx.input(0), ctx.attr("bias", 0.0), ctx.attr("lambd", 0.5)
    above = ops.where(x > _as(x, lambd), x - _as(x, bias), _as(x, 0))
    return ops.where(x < _as(x, -lambd), x + _as(x, bias), above, name=ctx.name)
