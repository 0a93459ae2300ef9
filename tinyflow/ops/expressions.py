"""The scalar expressions elementwise ops are written in: parsed once, differentiated, and spelled for C and OpenCL.

An expression is Python syntax over scalar names, such as `where(x > 0, x, alpha * x)`: the op's inputs (x), its numeric
attributes (alpha) and, in a gradient, `y` (the op's output) and `g` (the gradient arriving at it); its words are
FUNCTIONS, `+ - * / **`, unary `-` and the comparisons. numpy computes it as it is (ops/elementwise_ops.py),
`derivative` differentiates it, `spell` writes it as C or OpenCL, onnx/export.py as ONNX nodes. Only the standard
library is used here: the C build (ckernels/build_ckernels.py) reads this file too.
"""
import ast
import math
import struct

# word -> (number of arguments, C spelling for float, for double, OpenCL spelling); {0} {1} {2} are the
# arguments, always plain names or literals (spell() gives every operation its own temporary), so a
# spelling may repeat them. max and min keep a NaN, as np.maximum does; sign keeps NaN and gives +0 for ±0.
FUNCTIONS = {
    "exp": (1, "tf_expf({0})", "tf_exp({0})", "exp({0})"),
    "expm1": (1, "expm1f({0})", "expm1({0})", "expm1({0})"),
    "log": (1, "tf_logf({0})", "tf_log({0})", "log({0})"),
    "log1p": (1, "tf_log1pf({0})", "tf_log1p({0})", "log1p({0})"),
    "sqrt": (1, "sqrtf({0})", "sqrt({0})", "sqrt({0})"),
    "abs": (1, "fabsf({0})", "fabs({0})", "fabs({0})"),
    "sign": (1,) + ("({0} != {0} ? {0} : (T)(({0} > 0) - ({0} < 0)))",) * 3,
    "tanh": (1, "tf_tanhf({0})", "tf_tanh({0})", "tf_tanh({0})"),
    "sigmoid": (1, "tf_sigmoidf({0})", "tf_sigmoid({0})", "tf_sigmoid({0})"),
    "erf": (1, "tf_erff({0})", "tf_erf({0})", "erf({0})"),
    "sin": (1, "sinf({0})", "sin({0})", "sin({0})"),
    "cos": (1, "cosf({0})", "cos({0})", "cos({0})"),
    "floor": (1, "floorf({0})", "floor({0})", "floor({0})"),
    "ceil": (1, "ceilf({0})", "ceil({0})", "ceil({0})"),
    # spelled so that GCC vectorizes a chain of them (a clip): with (a != a || a > b) ? a : b it did not
    "max": (2,) + ("({0} <= {1} ? {1} : ({1} != {1} ? {1} : {0}))",) * 3,
    "min": (2,) + ("({0} >= {1} ? {1} : ({1} != {1} ? {1} : {0}))",) * 3,
    "where": (3,) + ("({0} != 0 ? {1} : {2})",) * 3,  # conditions are 0/1 values of T (OpenCL: no float ?:)
    "fmod": (2, "fmodf({0}, {1})", "fmod({0}, {1})", "fmod({0}, {1})"),
    # Python's % (np.mod): the remainder takes b's sign
    "pymod": (2, "tf_pymodf({0}, {1})", "tf_pymod({0}, {1})", "tf_pymod({0}, {1})"),
    "logical_and": (2,) + ("(T)({0} != 0 && {1} != 0)",) * 3,
    "logical_or": (2,) + ("(T)({0} != 0 || {1} != 0)",) * 3,
    "logical_xor": (2,) + ("(T)(({0} != 0) != ({1} != 0))",) * 3,
    "logical_not": (1,) + ("(T)({0} == 0)",) * 3,
}
OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
COMPARISONS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
# how the C and OpenCL spellings of the words above reach the kernels: tf_math.h has tf_expf ...; these come next
C_HELPERS = """
static inline float tf_pymodf(float a, float b) { float r = fmodf(a, b); return (r != 0 && (r < 0) != (b < 0)) ? r + b : r; }
static inline double tf_pymod(double a, double b) { double r = fmod(a, b); return (r != 0 && (r < 0) != (b < 0)) ? r + b : r; }
"""
OPENCL_HELPERS = """
T tf_pymod(T a, T b) { T r = fmod(a, b); return (r != 0 && (r < 0) != (b < 0)) ? r + b : r; }
T tf_sigmoid(T x) { T e = exp(-fabs(x)); return x >= 0 ? 1 / (1 + e) : e / (1 + e); }
T tf_tanh(T x) { return fabs(x) > (T)20 ? copysign((T)1, x) : tanh(x); }  /* the device's tanh stops short of 1 */
"""


class ExpressionError(ValueError):
    """An expression uses syntax or words outside the language."""


def parse(text):
    """The tree of an expression (checked against the language)."""
    tree = ast.parse(text, mode="eval").body
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ExpressionError(f"{text!r}: unknown function {ast.unparse(node.func)}; "
                                      f"known: {sorted(FUNCTIONS)}")
            if len(node.args) != FUNCTIONS[node.func.id][0]:
                raise ExpressionError(f"{text!r}: {node.func.id} takes {FUNCTIONS[node.func.id][0]} arguments")
        elif isinstance(node, ast.Compare) and len(node.ops) != 1:
            raise ExpressionError(f"{text!r}: write a < b < c as logical_and(a < b, b < c)")
        elif not isinstance(node, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call,
                                   ast.Load, ast.USub, ast.Pow, *OPERATORS, *COMPARISONS)):
            raise ExpressionError(f"{text!r}: {type(node).__name__} is not part of the expression language")
    return tree


def text(tree):
    """The expression as Python source (how docstrings and pictures show it)."""
    return ast.unparse(tree)


def names(tree):
    """The free names of an expression, in order of first appearance."""
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in FUNCTIONS))


# ---------------------------------------------------------------- building trees, folding zeros and ones
def constant(value):
    return ast.Constant(float(value))


def _value(tree):
    return tree.value if isinstance(tree, ast.Constant) else None


def add(a, b):
    return b if _value(a) == 0 else a if _value(b) == 0 else ast.BinOp(a, ast.Add(), b)


def sub(a, b):
    return a if _value(b) == 0 else neg(b) if _value(a) == 0 else ast.BinOp(a, ast.Sub(), b)


def mul(a, b):
    if _value(a) == 0 or _value(b) == 0:
        return constant(0)
    for one, other in ((a, b), (b, a)):
        if _value(one) in (1, -1):
            return other if _value(one) == 1 else neg(other)
    return ast.BinOp(a, ast.Mult(), b)


def div(a, b):
    return constant(0) if _value(a) == 0 else a if _value(b) == 1 else ast.BinOp(a, ast.Div(), b)


def neg(a):
    if isinstance(a, ast.Constant):
        return constant(-a.value)
    return a.operand if isinstance(a, ast.UnaryOp) else ast.UnaryOp(ast.USub(), a)


def call(word, *args):
    return ast.Call(ast.Name(word, ast.Load()), list(args), [])


def where(condition, a, b):
    return constant(0) if _value(a) == 0 and _value(b) == 0 else call("where", condition, a, b)


def _share(a, b, wins):
    """1 where a wins, 1/2 where a and b tie, 0 elsewhere: how max and min split their gradient (as PyTorch)."""
    ties = where(ast.Compare(a, [ast.Eq()], [b]), constant(0.5), constant(0))
    return where(ast.Compare(a, [wins], [b]), constant(1), ties)


# d word(u) / du, given the call tree t = word(u) and its arguments
_CHAIN = {
    "exp": lambda t, u: t,
    "expm1": lambda t, u: call("exp", u),
    "log": lambda t, u: div(constant(1), u),
    "log1p": lambda t, u: div(constant(1), add(constant(1), u)),
    "sqrt": lambda t, u: div(constant(0.5), t),
    "abs": lambda t, u: call("sign", u),
    "tanh": lambda t, u: sub(constant(1), mul(t, t)),
    "sigmoid": lambda t, u: mul(t, sub(constant(1), t)),
    "erf": lambda t, u: mul(constant(2 / math.sqrt(math.pi)), call("exp", neg(mul(u, u)))),
    "sin": lambda t, u: call("cos", u),
    "cos": lambda t, u: neg(call("sin", u)),
}
_FLAT = ("sign", "floor", "ceil", "logical_and", "logical_or", "logical_xor", "logical_not")
# d (a op b), given the tree t = a op b, its operands and their derivatives da, db
_BINARY = {
    ast.Add: lambda t, a, b, da, db: add(da, db),
    ast.Sub: lambda t, a, b, da, db: sub(da, db),
    ast.Mult: lambda t, a, b, da, db: add(mul(da, b), mul(a, db)),
    ast.Div: lambda t, a, b, da, db: sub(div(da, b), div(mul(a, db), mul(b, b))),
    ast.Pow: lambda t, a, b, da, db: add(mul(mul(b, ast.BinOp(a, ast.Pow(), sub(b, constant(1)))), da),
                                         mul(mul(t, call("log", a)), db)),  # b a**(b-1) da + a**b log(a) db
}


def derivative(tree, name):
    """d tree / d name as a tree (constant 0 where the expression does not depend on name)."""
    if name not in names(tree):
        return constant(0)
    d = lambda t: derivative(t, name)  # noqa: E731
    if isinstance(tree, ast.Name):
        return constant(1)
    if isinstance(tree, ast.UnaryOp):
        return neg(d(tree.operand))
    if isinstance(tree, ast.BinOp):
        return _BINARY[type(tree.op)](tree, tree.left, tree.right, d(tree.left), d(tree.right))
    if isinstance(tree, ast.Compare):
        return constant(0)
    word, args = tree.func.id, tree.args
    if word in _FLAT:
        return constant(0)
    if word == "where":
        return where(args[0], d(args[1]), d(args[2]))
    if word in ("max", "min"):
        a, b = args
        wins = ast.Gt() if word == "max" else ast.Lt()
        return add(mul(_share(a, b, wins), d(a)), mul(_share(b, a, wins), d(b)))
    if word in ("fmod", "pymod"):  # a - b·n with n = trunc or floor(a / b): piecewise, n is constant
        a, b = args
        return sub(d(a), mul(div(sub(a, tree), b), d(b)))
    return mul(_CHAIN[word](tree, args[0]), d(args[0]))


def substitute(tree, replacements):
    """The tree with names replaced by trees (a gradient expression's `y` by the op's own expression)."""
    class Replace(ast.NodeTransformer):
        def visit_Name(self, node):
            return replacements.get(node.id, node)
    return Replace().visit(ast.parse(text(tree), mode="eval").body)


# ---------------------------------------------------------------- C and OpenCL
def literal(value, single):
    """A C / OpenCL literal of a float in float (`single`) or double precision."""
    value = float(value)
    if single:
        value = struct.unpack("f", struct.pack("f", value))[0]
    if value != value:
        return "NAN"
    if value in (math.inf, -math.inf):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    spelled = repr(value) + ("f" if single else "")
    return f"({spelled})" if spelled.startswith("-") else spelled  # (-0.0f): never `--0.0f` after a minus


def spell(tree, operand, single, opencl=False, prefix="t", ctype="T", overrides=None, calls=None):
    """(C statements computing the expression, one `const <ctype> <prefix>N = ...;` per operation, the result's name).

    `operand(name)` spells a free name; `single` picks float (else double), `opencl` OpenCL's spellings, `overrides`
    (word -> spelling) replace some; `calls`, a dict if given, collects the spelled arguments of each word's calls."""
    column = 3 if opencl else 1 if single else 2
    lines = []

    def emit(code):
        lines.append(f"const {ctype} {prefix}{len(lines)} = {code};")
        return f"{prefix}{len(lines) - 1}"

    def visit(node):
        if isinstance(node, ast.Name):
            return operand(node.id)
        if isinstance(node, ast.Constant):
            return literal(node.value, single)
        if isinstance(node, ast.UnaryOp):
            return emit(f"-{visit(node.operand)}")
        if isinstance(node, ast.Compare):
            return emit(f"(T)({visit(node.left)} {COMPARISONS[type(node.ops[0])]} {visit(node.comparators[0])})")
        if isinstance(node, ast.BinOp):
            a, b = visit(node.left), visit(node.right)
            if isinstance(node.op, ast.Pow):
                return emit(f"{'powf' if single and not opencl else 'pow'}({a}, {b})")
            return emit(f"{a} {OPERATORS[type(node.op)]} {b}")
        word, args = node.func.id, [visit(a) for a in node.args]
        if calls is not None:
            calls.setdefault(word, []).append(args)
        return emit(((overrides or {}).get(word) or FUNCTIONS[word][column]).format(*args))
    result = visit(tree)
    return lines, result


def is_arithmetic(tree):
    """Only + - * / and unary minus on names and numbers (what GCC's vector types compute)."""
    return all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.USub, *OPERATORS))
               for n in ast.walk(tree))


# ---------------------------------------------------------------- rows of the table, and their gradient ops
def signature(text):
    """(function name or None, [input names], {attribute: default}) of a row's "leaky_relu(x, alpha=0.01)"."""
    name, _, args = text.partition("(")
    call = ast.parse(f"f({args}", mode="eval").body
    return name or None, [a.id for a in call.args], {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def gradients(tree, input_names, given):
    """One gradient tree per input (None: none), in the inputs, `y` and `g`: the row's, or g times the derivative."""
    if given is None:
        return [mul(parse("g"), derivative(tree, x)) for x in input_names]
    return [None if g is False else parse(g) for g in given]


def is_one_operation(tree):
    """A name, a number, or one arithmetic operation on names and numbers ("g * b", "-g"): built as ops."""
    operands = [tree.operand] if isinstance(tree, ast.UnaryOp) else \
        [tree.left, tree.right] if isinstance(tree, ast.BinOp) else None
    return isinstance(tree, (ast.Name, ast.Constant)) or operands is not None and all(
        isinstance(a, (ast.Name, ast.Constant)) for a in operands)


def gradient_op(op_type, input_names, attributes, index, tree):
    """(op type, input names, expression, attributes, what each input is) of the op computing input `index`'s gradient
    expression, e.g. "SigmoidGrad", ["out", "grad"], "grad * out * (1 - out)", {}, ["y", "g"]: its inputs are the
    names the expression reads, `y` and `g` renamed (its own gradients read a `y` and a `g` of their own)."""
    used = names(tree)
    order = list(input_names) + ["y", "g"]
    reads = sorted((n for n in used if n in order), key=order.index)
    renamed = {n: n for n in reads}
    for old, new in (("y", "out"), ("g", "grad")):
        if old in renamed:
            while new in used:
                new += "_"
            renamed[old] = new
    expression = text(substitute(tree, {o: parse(n) for o, n in renamed.items()}))
    name = f"{op_type}Grad" + ("" if len(input_names) == 1 else str(index))
    return name, [renamed[n] for n in reads], expression, {a: v for a, v in attributes.items() if a in used}, reads


def takes_conditions(tree):
    """Whether some input is read only as a condition of `where` (a boolean: no float kernel computes the op)."""
    as_condition = {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call) and n.func.id == "where"
                    and isinstance(n.args[0], ast.Name)}
    elsewhere = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in FUNCTIONS]
    return any(elsewhere.count(name) == 1 for name in as_condition)


def fingerprint(op_type, inputs, expression, attributes):
    """What identifies a generated kernel: an op uses the C library's only if their fingerprints agree (same table)."""
    import hashlib
    spelled = f"{op_type}({', '.join(inputs)}; {', '.join(sorted(attributes))}) = {text(parse(expression))}"
    return hashlib.sha256(spelled.encode()).hexdigest()[:12]


def kernels(rows):
    """(op type, input names, expression, attributes) of every row and its gradient ops: the C build's kernels."""
    found = []
    for row in rows:
        _, inputs, attributes = signature(row["signature"])
        tree = parse(row["expression"])
        if takes_conditions(tree):
            continue
        found.append((row["op_type"], inputs, row["expression"], attributes))
        if row["gradients"] is not False:
            for index, g in enumerate(gradients(tree, inputs, row["gradients"])):
                if g is not None and not is_one_operation(g):
                    found.append(gradient_op(row["op_type"], inputs, attributes, index, g)[:4])
    return found
