"""Every elementwise op, each written once: its name, its function, its expression and its gradients.

From one row come the op class and its `tfl.` function with numpy as the kernel (ops/elementwise_ops.py), its gradient,
the C kernel (generated when the package is built, ckernels/build_ckernels.py), the OpenCL kernel, its part of a fused
kernel, and its ONNX form. Adding an op is adding a row here (plus its case in tests/op_cases.py and its README line).

A row: op(OpType, "function(inputs, attribute=default)", "expression", gradients, onnx=..., dtype=..., doc=...)
  expression  Python syntax over the inputs and attributes, with the words of ops/expressions.py
  gradients   one expression per input, in the inputs, the attributes, `y` (the output) and `g` (the gradient
              arriving at it); None: the derivative of the expression; False: not differentiable on purpose
  onnx        the ONNX operator with the same meaning and attribute names, if there is one
  dtype       "same": the inputs' promoted type; "float": at least float32 (ints give float32, as in PyTorch); "bool"
A function name in parentheses, "(x, low, high)", makes no `tfl.` function (one is written by hand).
This file imports nothing: the C build reads it without importing tinyflow.
"""


def op(op_type, signature, expression, gradients=None, onnx=None, dtype="same", doc=""):
    """One row of the table."""
    return dict(op_type=op_type, signature=signature, expression=expression, gradients=gradients, onnx=onnx,
                dtype=dtype, doc=doc)


ELEMENTWISE = [
    # arithmetic, with numpy's broadcasting
    op("Add", "add(a, b)", "a + b", ["g", "g"], onnx="Add", doc="a + b elementwise, with broadcasting."),
    op("Subtract", "subtract(a, b)", "a - b", ["g", "-g"], onnx="Sub", doc="a - b elementwise, with broadcasting."),
    op("Multiply", "multiply(a, b)", "a * b", ["g * b", "g * a"], onnx="Mul",
       doc="a * b elementwise, with broadcasting."),
    op("Divide", "divide(a, b)", "a / b", ["g / b", "-g * y / b"], onnx="Div", dtype="float",
       doc="a / b elementwise (true division: integers give float32), with broadcasting."),
    op("Power", "power(a, b)", "a ** b",
       # PyTorch's edges: no gradient through an exponent 0 (x ** 0 at x = 0 is 0, not nan), none to b at a = 0
       ["where(b == 0, 0, g * b * a ** (b - 1))", "where(logical_and(a == 0, b >= 0), 0, g * y * log(a))"],
       onnx="Pow", doc="a ** b elementwise, with broadcasting."),
    op("Mod", "mod(a, b)", "pymod(a, b)", ["g", "-g * (a - y) / b"], onnx="Mod(fmod=0)",
       doc="The remainder of a / b with the sign of b (Python's a % b, torch.remainder)."),
    # Python's a // b and torch.floor_divide: a - pymod(a, b) is an exact multiple of b, rounded against 1 // 0.1 = 10
    op("FloorDivide", "floor_divide(a, b)", "where(b == 0, a / b, floor((a - pymod(a, b)) / b + 0.5))", ["0", "0"],
       doc="a / b rounded down (Python's a // b, torch.floor_divide); its gradient is 0."),
    op("Fmod", "fmod(a, b)", "fmod(a, b)", ["g", "-g * (a - y) / b"], onnx="Mod(fmod=1)",
       doc="The remainder of a / b with the sign of a (C's fmod, torch.fmod)."),
    op("Maximum", "maximum(a, b)", "max(a, b)", onnx="Max",
       doc="Elementwise maximum; the gradient goes to the larger input, half to each on ties (as PyTorch)."),
    op("Minimum", "minimum(a, b)", "min(a, b)", onnx="Min",
       doc="Elementwise minimum; the gradient goes to the smaller input, half to each on ties."),
    op("Clip", "(x, low, high)", "min(max(x, low), high)",  # low > high: every value is high, as numpy and ONNX
       ["where(logical_and(x >= low, x <= high), g, 0)", "where(logical_and(x < low, low <= high), g, 0)",
        "where(logical_or(x > high, low > high), g, 0)"]),
    op("Where", "where(condition, a, b)", "where(condition, a, b)", [False, "where(condition, g, 0)",
                                                                      "where(condition, 0, g)"],
       onnx="Where", doc="Elementwise choice: a where condition is true, else b."),
    # one input
    op("Negative", "negative(x)", "-x", ["-g"], onnx="Neg", doc="-x."),
    op("Square", "square(x)", "x * x", ["g * (2 * x)"], doc="x²."),
    op("Sqrt", "sqrt(x)", "sqrt(x)", ["g / (2 * y)"], onnx="Sqrt", dtype="float", doc="√x."),
    op("Exp", "exp(x)", "exp(x)", ["g * y"], onnx="Exp", dtype="float", doc="eˣ."),
    op("Log", "log(x)", "log(x)", ["g / x"], onnx="Log", dtype="float", doc="Natural logarithm."),
    op("Abs", "abs(x)", "abs(x)", ["g * sign(x)"], onnx="Abs", doc="|x| (its gradient is 0 at 0, as PyTorch)."),
    op("Sign", "sign(x)", "sign(x)", onnx="Sign", doc="-1, 0 or 1 by the sign of x (gradient 0)."),
    op("Reciprocal", "reciprocal(x)", "1 / x", ["-g * y * y"], onnx="Reciprocal", dtype="float", doc="1 / x."),
    op("Floor", "floor(x)", "floor(x)", onnx="Floor", doc="Round down to an integer value (gradient 0)."),
    op("Ceil", "ceil(x)", "ceil(x)", onnx="Ceil", doc="Round up to an integer value (gradient 0)."),
    op("Sin", "sin(x)", "sin(x)", onnx="Sin", dtype="float", doc="Sine (radians)."),
    op("Cos", "cos(x)", "cos(x)", onnx="Cos", dtype="float", doc="Cosine (radians)."),
    op("Erf", "erf(x)", "erf(x)", onnx="Erf", dtype="float", doc="The error function (GELU's building block)."),
    # activations
    op("Sigmoid", "sigmoid(x)", "sigmoid(x)", ["g * y * (1 - y)"], onnx="Sigmoid", dtype="float",
       doc="The logistic function 1 / (1 + e^-x)."),
    op("Tanh", "tanh(x)", "tanh(x)", ["g * (1 - y * y)"], onnx="Tanh", dtype="float", doc="Hyperbolic tangent."),
    op("Relu", "relu(x)", "max(x, 0)", ["where(y > 0, g, 0)"], onnx="Relu", doc="max(x, 0)."),
    op("LeakyRelu", "leaky_relu(x, alpha=0.01)", "where(x > 0, x, alpha * x)", ["where(x > 0, g, alpha * g)"],
       onnx="LeakyRelu", doc="x for x > 0, alpha x otherwise."),
    op("Softplus", "softplus(x)", "max(x, 0) + log1p(exp(-abs(x)))", ["g * sigmoid(x)"], onnx="Softplus",
       dtype="float", doc="ln(1 + eˣ), a smooth relu (computed without overflow)."),
    op("Elu", "elu(x, alpha=1.0)", "where(x > 0, x, alpha * expm1(min(x, 0)))", ["where(x > 0, g, g * (y + alpha))"],
       onnx="Elu", dtype="float", doc="The exponential linear unit: x for x > 0, alpha (eˣ - 1) otherwise."),
    op("Gelu", "(x)", "0.5 * x * (1 + erf(x * 0.7071067811865476))", onnx="Gelu(approximate='none')", dtype="float"),
    op("GeluTanh", "(x)", "0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
       onnx="Gelu(approximate='tanh')", dtype="float"),
    op("Softsign", "softsign(x)", "x / (1 + abs(x))", ["g / ((1 + abs(x)) * (1 + abs(x)))"], onnx="Softsign",
       dtype="float", doc="x / (1 + |x|), a smooth sign."),
    op("PRelu", "prelu(x, slope)", "where(x > 0, x, x * slope)", ["where(x > 0, g, g * slope)",
                                                                  "where(x > 0, 0, g * x)"],
       onnx="PRelu", doc="x for x > 0, slope · x otherwise; slope broadcasts (per channel of NCHW: (C, 1, 1))."),
    op("Silu", "silu(x)", "x * sigmoid(x)", ["g * sigmoid(x) * (1 + x * (1 - sigmoid(x)))"], dtype="float",
       doc="x · σ(x), the sigmoid-weighted linear unit (swish)."),
    op("Hardtanh", "hardtanh(x, min_val=-1.0, max_val=1.0)", "min(max(x, min_val), max_val)",
       ["where(logical_and(x > min_val, x < max_val), g, 0)"], doc="x limited to [min_val, max_val] (as PyTorch)."),
    # comparisons and logic: boolean results, no gradient
    op("Greater", "greater(a, b)", "a > b", False, onnx="Greater", dtype="bool", doc="a > b elementwise."),
    op("GreaterEqual", "greater_equal(a, b)", "a >= b", False, onnx="GreaterOrEqual", dtype="bool",
       doc="a >= b elementwise."),
    op("Less", "less(a, b)", "a < b", False, onnx="Less", dtype="bool", doc="a < b elementwise."),
    op("LessEqual", "less_equal(a, b)", "a <= b", False, onnx="LessOrEqual", dtype="bool", doc="a <= b elementwise."),
    op("Equal", "equal(a, b)", "a == b", False, onnx="Equal", dtype="bool", doc="a == b elementwise."),
    op("NotEqual", "not_equal(a, b)", "a != b", False, dtype="bool", doc="a != b elementwise."),
    op("LogicalAnd", "logical_and(a, b)", "logical_and(a, b)", False, onnx="And", dtype="bool",
       doc="a and b elementwise (non-zero is true)."),
    op("LogicalOr", "logical_or(a, b)", "logical_or(a, b)", False, onnx="Or", dtype="bool",
       doc="a or b elementwise (non-zero is true)."),
    op("LogicalXor", "logical_xor(a, b)", "logical_xor(a, b)", False, onnx="Xor", dtype="bool",
       doc="a xor b elementwise (exactly one is true)."),
    op("LogicalNot", "logical_not(x)", "logical_not(x)", False, onnx="Not", dtype="bool", doc="not x elementwise."),
]
