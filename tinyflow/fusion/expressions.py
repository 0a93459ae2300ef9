"""The elementwise ops fusion knows: one C / OpenCL expression per op, numpy semantics kept.

Each entry maps an op type to `expr(args, op, fn, lit)`: `args` are the C names
of the op's input values, `op` the (copied) node for attributes such as alpha,
`fn(name)` spells a math function for the element type (expf or exp), `lit(x)`
a literal of the element type. Choices that keep numpy's results:
maximum/minimum and relu propagate NaN as np.maximum does; sigmoid is the
two-sided 1/(1+e^-x) of `stable_sigmoid` (tf_math.h in C, a helper in OpenCL);
softplus is logaddexp(0, x).
"""


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
