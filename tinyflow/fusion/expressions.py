"""The elementwise ops fusion knows: one C / OpenCL expression per op, numpy semantics kept.

Each entry maps an op type to `expr(args, op, fn, lit)`: `args` are the C names
of the op's input values, `op` the (copied) node for attributes such as alpha,
`fn(name)` spells a math function for the element type (expf or exp), `lit(x)`
a literal of the element type. Choices that keep numpy's results:
maximum/minimum and relu propagate NaN as np.maximum does; sigmoid is the
two-sided 1/(1+e^-x) of `stable_sigmoid` (tf_math.h in C, a helper in OpenCL);
softplus is logaddexp(0, x); mod adds b to a nonzero fmod whose sign differs from
b's, as np.mod; clip is min(max(x, low), high) with NaN kept, as np.clip.
"""
import math


def _python_mod(a, op, fn, lit):
    """np.mod (the sign of b) from C's fmod (the sign of a)."""
    r = f"{fn('fmod')}({a[0]}, {a[1]})"
    return f"(({r} != {lit(0)} && ({r} < {lit(0)}) != ({a[1]} < {lit(0)})) ? {r} + {a[1]} : {r})"


def _clip(a, op, fn, lit):
    low = f"(({a[0]} != {a[0]} || {a[0]} > {a[1]}) ? {a[0]} : {a[1]})"
    return f"(({low} != {low} || {low} < {a[2]}) ? {low} : {a[2]})"


def _gelu(a, op, fn, lit):
    x = a[0]
    if op.approximate == "tanh":
        inner = f"{lit(math.sqrt(2 / math.pi))} * ({x} + {lit(0.044715)} * {x} * {x} * {x})"
        return f"({lit(0.5)} * {x} * ({lit(1)} + {fn('tanh')}({inner})))"
    return f"({lit(0.5)} * {x} * ({lit(1)} + {fn('erf')}({x} * {lit(1 / math.sqrt(2))})))"


def _binary(symbol):
    return lambda a, op, fn, lit: f"({a[0]} {symbol} {a[1]})"


EXPRESSIONS = {
    "Add": _binary("+"),
    "Subtract": _binary("-"),
    "Multiply": _binary("*"),
    "Divide": _binary("/"),
    "Power": lambda a, op, fn, lit: f"{fn('pow')}({a[0]}, {a[1]})",
    "Maximum": lambda a, op, fn, lit: f"(({a[0]} != {a[0]} || {a[0]} > {a[1]}) ? {a[0]} : {a[1]})",
    "Minimum": lambda a, op, fn, lit: f"(({a[0]} != {a[0]} || {a[0]} < {a[1]}) ? {a[0]} : {a[1]})",
    "Negative": lambda a, op, fn, lit: f"(-{a[0]})",
    "Square": lambda a, op, fn, lit: f"({a[0]} * {a[0]})",
    "Sqrt": lambda a, op, fn, lit: f"{fn('sqrt')}({a[0]})",
    "Exp": lambda a, op, fn, lit: f"{fn('exp')}({a[0]})",
    "Log": lambda a, op, fn, lit: f"{fn('log')}({a[0]})",
    "Abs": lambda a, op, fn, lit: f"{fn('fabs')}({a[0]})",
    "Identity": lambda a, op, fn, lit: a[0],
    "Sigmoid": lambda a, op, fn, lit: f"{fn('sigmoid')}({a[0]})",
    "SigmoidGrad": lambda a, op, fn, lit: f"({a[1]} * {a[0]} * ({lit(1)} - {a[0]}))",
    "Tanh": lambda a, op, fn, lit: f"{fn('tanh')}({a[0]})",
    "TanhGrad": lambda a, op, fn, lit: f"({a[1]} * ({lit(1)} - {a[0]} * {a[0]}))",
    "Relu": lambda a, op, fn, lit: f"({a[0]} < {lit(0)} ? {lit(0)} : {a[0]})",
    "ReluGrad": lambda a, op, fn, lit: f"({a[0]} > {lit(0)} ? {a[1]} : {lit(0)})",
    "LeakyRelu": lambda a, op, fn, lit: f"({a[0]} > {lit(0)} ? {a[0]} : {lit(op.alpha)} * {a[0]})",
    "LeakyReluGrad": lambda a, op, fn, lit: f"({a[0]} > {lit(0)} ? {a[1]} : {lit(op.alpha)} * {a[1]})",
    "Softplus": lambda a, op, fn, lit: (f"({fn('fmax')}({a[0]}, {lit(0)}) + "
                                        f"{fn('log1p')}({fn('exp')}(-{fn('fabs')}({a[0]}))))"),
    "Reciprocal": lambda a, op, fn, lit: f"({lit(1)} / {a[0]})",
    "Floor": lambda a, op, fn, lit: f"{fn('floor')}({a[0]})",
    "Ceil": lambda a, op, fn, lit: f"{fn('ceil')}({a[0]})",
    "Sin": lambda a, op, fn, lit: f"{fn('sin')}({a[0]})",
    "Cos": lambda a, op, fn, lit: f"{fn('cos')}({a[0]})",
    "Erf": lambda a, op, fn, lit: f"{fn('erf')}({a[0]})",
    "Mod": lambda a, op, fn, lit: f"{fn('fmod')}({a[0]}, {a[1]})" if op.fmod else _python_mod(a, op, fn, lit),
    "Clip": _clip,
    "Elu": lambda a, op, fn, lit: f"({a[0]} > {lit(0)} ? {a[0]} : {lit(op.alpha)} * {fn('expm1')}({a[0]}))",
    "Gelu": _gelu,
    "Softsign": lambda a, op, fn, lit: f"({a[0]} / ({lit(1)} + {fn('fabs')}({a[0]})))",
    "PRelu": lambda a, op, fn, lit: f"({a[0]} > {lit(0)} ? {a[0]} : {a[0]} * {a[1]})",
}


def literal(value, single):
    """A C / OpenCL literal of a float, in float (`single`) or double precision."""
    import numpy as np
    value = float(np.float32(value)) if single else float(value)
    if value != value:
        return "NAN"
    if value in (float("inf"), float("-inf")):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(value) + ("f" if single else "")
    return f"({text})" if value < 0 else text
