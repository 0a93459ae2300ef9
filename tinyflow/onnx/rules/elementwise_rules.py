"""Elementwise ops both ways: the table's ops (ops/elementwise.py) by their `onnx` entry or their expression, the
rules where ONNX and tinyflow differ, and ONNX activations composed of tinyflow ops (broadcasting as numpy's)."""
import ast
import functools

import numpy as np

from ... import ops
from ...ops.elementwise_ops import GRADIENTS as GRADIENT_OPS_BY_TYPE, OPS as ELEMENTWISE_OPS
from .rule_tables import OPSET, exports, imports, op_rule, same_op
from .nn_rules import batch_norm_parts


def _legacy_broadcast(ctx):
    """Opsets before 7 broadcast only when told, along an axis: refuse what tinyflow would read differently."""
    if ctx.attr("broadcast", 0) or ctx.attr("axis", None) is not None:
        raise ctx.unsupported("opset < 7 broadcasting with the 'broadcast'/'axis' attributes")


# ---------------------------------------------------------------- the table's ops, both ways (ops/elementwise.py)
def onnx_form(cls):
    """(ONNX op type, fixed attributes) of a table op's `onnx` entry ("Mod(fmod=1)"), or None."""
    if not cls.onnx:
        return None
    call = ast.parse(cls.onnx if "(" in cls.onnx else cls.onnx + "()", mode="eval").body
    return call.func.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _table_import(rows):
    """The import rule of an ONNX op type the table ops name; their fixed attributes (Mod's fmod) pick the op."""
    def rule(ctx, node):
        if len(rows[0][0].input_names) == 2:
            _legacy_broadcast(ctx)
        fixed = {k: ctx.attr(k, v) for k, v in rows[0][1].items()}
        for cls, values in rows:
            if values == fixed:
                return cls(*ctx.inputs(), **{a: ctx.attr(a, d) for a, d in cls.attributes.items()}, name=ctx.name)
        raise ctx.unsupported(", ".join(f"{k}={v!r}" for k, v in fixed.items()))
    return rule


def table_export(cls):
    """One ONNX op where the export's opset has the table's, else the expression as ONNX ops (Silu, Square)."""
    form = onnx_form(cls)

    def rule(ex, node):
        inputs = [ex.name_of(i) for i in node.inputs]
        if form and _in_opset(form[0]):
            return ex.emit(form[0], inputs, form[0], **form[1],
                           **{a: float(getattr(node, a)) for a in node.attributes})
        values = dict(zip(node.input_names, inputs))
        values.update({a: ex.constant(np.asarray(getattr(node, a), node.inputs[0].dtype), a) for a in node.attributes})
        return _spell_onnx(ex, node.expression, values, node.inputs[0].dtype)
    return rule


def _in_opset(onnx_type):
    from onnx import defs
    try:
        return defs.get_schema(onnx_type, OPSET).since_version <= OPSET
    except defs.SchemaError:
        return False


# expression words -> ONNX ops; log1p and expm1 are spelled as expressions, fmod and pymod by _mod
_WORDS = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "sign": "Sign", "tanh": "Tanh",
          "sigmoid": "Sigmoid", "erf": "Erf", "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil",
          "max": "Max", "min": "Min", "where": "Where", "logical_and": "And", "logical_or": "Or",
          "logical_xor": "Xor", "logical_not": "Not"}
_OPERATORS = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Div: "Div", ast.Pow: "Pow", ast.Gt: "Greater",
              ast.GtE: "GreaterOrEqual", ast.Lt: "Less", ast.LtE: "LessOrEqual", ast.Eq: "Equal"}
_SPELLED = {"log1p": "log(x + 1)", "expm1": "exp(x) - 1"}


def _spell_onnx(ex, tree, values, dtype):
    """The ONNX nodes computing an expression tree: one node per operation, constants as initializers."""
    def visit(t):
        if isinstance(t, ast.Name):
            return values[t.id]
        if isinstance(t, ast.Constant):
            return ex.constant(np.asarray(t.value, dtype), "c")
        if isinstance(t, ast.UnaryOp):
            return ex.emit("Neg", [visit(t.operand)], "Neg")
        if isinstance(t, ast.BinOp):
            return ex.emit(_OPERATORS[type(t.op)], [visit(t.left), visit(t.right)], "op")
        if isinstance(t, ast.Compare):
            a, b = visit(t.left), visit(t.comparators[0])
            if isinstance(t.ops[0], ast.NotEq):
                return ex.emit("Not", [ex.emit("Equal", [a, b], "Equal")], "NotEqual")
            return ex.emit(_OPERATORS[type(t.ops[0])], [a, b], "compare")
        word, args = t.func.id, [visit(a) for a in t.args]
        if word in _SPELLED:
            return _spell_onnx(ex, ast.parse(_SPELLED[word], mode="eval").body, {"x": args[0]}, dtype)
        if word in ("fmod", "pymod"):
            return _mod(ex, *args, word == "fmod", dtype)
        return ex.emit(_WORDS[word], args, word)
    return visit(tree)


_BY_ONNX_TYPE = {}  # ONNX op type -> [(table op, its fixed ONNX attributes)]
for _cls in [*ELEMENTWISE_OPS.values(), *GRADIENT_OPS_BY_TYPE.values()]:
    exports(_cls.op_type)(table_export(_cls))
    if _cls.onnx:
        _BY_ONNX_TYPE.setdefault(onnx_form(_cls)[0], []).append((_cls, onnx_form(_cls)[1]))
for _onnx_type, _rows in _BY_ONNX_TYPE.items():
    imports(_onnx_type)(_table_import(_rows))


# ---------------------------------------------------------------- where ONNX and numpy differ, or one op is several
@imports("Div", "Pow")
def import_div_pow(ctx, node):
    """a / b and a ** b in a's element type, as ONNX keeps it (tinyflow would promote); ints divide as C does."""
    _legacy_broadcast(ctx)
    a, b = ctx.input(0), ctx.input(1)
    if ctx.op_type == "Div":  # an integer quotient is computed as a float, truncated by the cast
        fn, recast = ops.divide, a.dtype is not None and a.dtype.kind in "iu"
    else:
        fn, recast = ops.power, a.dtype is not None and b.dtype is not None and a.dtype != b.dtype
    return ops.cast(fn(a, b), a.dtype, name=ctx.name) if recast else fn(a, b, name=ctx.name)


@imports("Clip")
def import_clip(ctx, node):
    """x limited to [min, max]; the bounds are attributes before opset 11, optional inputs since."""
    low, high = (ctx.attr("min", None), ctx.attr("max", None)) if ctx.opset < 11 else (ctx.input(1), ctx.input(2))
    return ops.clip(ctx.input(0), low, high, name=ctx.name)


def _variadic(combine):
    """The rule of an op of any number of inputs (broadcast): combine(inputs, name), one input being itself."""
    def rule(ctx, node):
        xs = ctx.inputs()
        return ops.identity(xs[0], name=ctx.name) if len(xs) == 1 else combine(xs, name=ctx.name)
    return rule


imports("Max")(_variadic(lambda xs, name: ops.maximum(functools.reduce(ops.maximum, xs[:-1]), xs[-1], name=name)))
imports("Min")(_variadic(lambda xs, name: ops.minimum(functools.reduce(ops.minimum, xs[:-1]), xs[-1], name=name)))
imports("Sum")(_variadic(ops.add_n))
imports("Mean")(_variadic(lambda xs, name: ops.divide(ops.add_n(xs), float(len(xs)), name=name)))
imports("Selu")(op_rule(ops.selu, alpha=("alpha", 1.67326319217681884765625),
                        scale=("gamma", 1.05070102214813232421875)))
imports("HardSigmoid")(op_rule(ops.hard_sigmoid, alpha=("alpha", 0.2), beta=("beta", 0.5)))
imports("HardSwish")(op_rule(ops.hard_swish))


# ---------------------------------------------------------------- exports beyond the table's
exports("Clip")(same_op("Clip"))
exports("AddN")(same_op("Sum"))
exports("Mod")(lambda ex, node: _mod(ex, *[ex.name_of(i) for i in node.inputs], False, node.dtype))


@exports("Multiply")
def _multiply(ex, node):
    for i, inp in enumerate(node.inputs):  # x * dropout-mask in evaluation mode is x
        training = inp.training_input if inp.op_type == "DropoutMask" else None
        if training is not None and ex.static_value(training) is not None and not bool(ex.static_value(training)):
            return ex.name_of(node.inputs[1 - i])
    return ex.emit("Mul", [ex.name_of(i) for i in node.inputs], "Mul")


@exports("Add")
def _add(ex, node):
    """Add, or a whole inference-mode batch norm (tfl.nn.BatchNorm*d) as one BatchNormalization."""
    parts = batch_norm_parts(ex, node)
    if parts is not None:
        x, weight, bias, mean, var, eps = parts
        return ex.emit("BatchNormalization", [ex.name_of(n) for n in (x, weight, bias, mean, var)],
                       "BatchNormalization", epsilon=eps)
    return ex.emit("Add", [ex.name_of(i) for i in node.inputs], "Add")


@exports("Where")
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


def _mod(ex, a, b, fmod, dtype):
    """Mod; np.mod of floats as fmod corrected where the signs differ (opset 17's fmod=0 is for integers only)."""
    if fmod or dtype.kind != "f":
        return ex.emit("Mod", [a, b], "Mod", fmod=int(fmod))
    rest = ex.emit("Mod", [a, b], "Mod", fmod=1)
    zero = ex.constant(np.zeros((), dtype), "zero")
    signs_differ = ex.emit("Xor", [ex.emit("Less", [rest, zero], "Less"), ex.emit("Less", [b, zero], "Less")], "Xor")
    fix = ex.emit("And", [ex.emit("Not", [ex.emit("Equal", [rest, zero], "Equal")], "Not"), signs_differ], "And")
    return ex.emit("Where", [fix, ex.emit("Add", [rest, b], "Add"), rest], "Mod")


# ---------------------------------------------------------------- activations outside the list, from tinyflow's ops
def _as(x, value):
    return np.asarray(value, x.dtype)


@imports("Celu")
def import_celu(ctx, node):
    """max(0, x) + min(0, α(e^(x/α) - 1))."""
    x, alpha = ctx.input(0), ctx.attr("alpha", 1.0)
    negative = _as(x, alpha) * (ops.exp(x / _as(x, alpha)) - _as(x, 1.0))
    return ops.add(ops.relu(x), ops.minimum(negative, _as(x, 0.0)), name=ctx.name)


@imports("Mish", "Swish")
def import_mish_swish(ctx, node):
    """x · tanh(softplus(x)) (Mish), x · sigmoid(αx) (Swish)."""
    x = ctx.input(0)
    gate = ops.tanh(ops.softplus(x)) if ctx.op_type == "Mish" else ops.sigmoid(x * _as(x, ctx.attr("alpha", 1.0)))
    return ops.multiply(x, gate, name=ctx.name)


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
