"""The op classes and `tfl.` functions made from the rows of ops/elementwise.py, and their gradients.

Each row becomes one `ElementwiseOp` class whose numpy kernel is the row's expression (`Relu.compute` is
`np.maximum(x, 0)`). Its gradient for each input is one operation ("g * b", "-g") built as that op, or a gradient op
made from the longer expression (SigmoidGrad(y, g): g * y * (1 - y)), an elementwise op like any other: it has a C
kernel, fuses, and its own gradient is its derivative, so every order of derivative exists.
"""
import ast
import functools
import inspect
import math
import os

import numpy as np

from ..arguments import Arguments
from ..dtypes import promote, promote_to_float
from ..errors import ArgumentError, ShapeError
from ..nodes import OP_TYPES, Operation, as_node
from . import expressions
from .elementwise import ELEMENTWISE
from .registry import not_differentiable, op_function, register_gradient


def stable_sigmoid(x):
    """1 / (1 + e^-x) without overflow for large |x|."""
    if x.dtype.kind in "biu":  # -|x| would wrap around for unsigned ints
        x = x.astype(promote_to_float(x.dtype))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


_erf_each = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf is exact to the last bit


def erf_values(x):
    """erf of every element of x, in x's float type."""
    return np.asarray(_erf_each(x), dtype=promote_to_float(np.asarray(x).dtype))


# how numpy spells the words of the expression language (ops/expressions.py)
NUMPY = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt, "abs": np.abs,
         "sign": np.sign, "tanh": np.tanh, "sigmoid": stable_sigmoid, "erf": erf_values, "sin": np.sin,
         "cos": np.cos, "floor": np.floor, "ceil": np.ceil, "max": np.maximum, "min": np.minimum,
         "where": np.where, "fmod": np.fmod, "pymod": np.mod, "logical_and": np.logical_and,
         "logical_or": np.logical_or, "logical_xor": np.logical_xor, "logical_not": np.logical_not}
# words whose value numpy may warn about in a branch `where` then discards (0 ** -1, log(0))
_WARNS = {"log", "log1p", "exp", "expm1", "sqrt"}


def _define(source, label, namespace):
    """Run generated source (a function definition) into namespace. Its file name lies inside the package, so
    creation sites and error messages skip it and name the user's line, as for hand-written ops."""
    exec(compile(source, os.path.join(os.path.dirname(__file__), f"<{label}>"), "exec"), namespace)  # noqa: S102
    return namespace


DTYPE_RULES = {"same": promote, "float": promote_to_float, "bool": lambda *d: np.dtype(bool)}


class ElementwiseOp(Operation):
    """An op computed value by value from inputs of one broadcast shape, made from one expression."""

    abstract = True
    elementwise = True
    input_names = ()      # the expression's inputs, in order
    attributes = {}       # numeric attributes and their defaults (alpha, ...)
    expression = None     # the tree of the expression (ops/expressions.py)
    onnx = None           # the ONNX operator of the same meaning, if there is one ("LeakyRelu", "Mod(fmod=1)")
    dtype_rule = promote
    kernel = None         # attribute-free ops: compute's expression alone, without the cast to the op's dtype

    def __init__(self, *inputs, name=None, **attributes):
        """Op(*inputs, *attributes, name=None): the inputs, then the attributes by position or by name."""
        inputs, extra = inputs[:len(self.input_names)], inputs[len(self.input_names):]
        check = Arguments(self, name, *inputs)
        if len(inputs) != len(self.input_names) or len(extra) > len(self.attributes):
            raise ArgumentError(f"{self.op_type} takes {len(self.input_names)} input(s) "
                                f"({', '.join(self.input_names)}) and the attributes {list(self.attributes)}, "
                                f"got {len(inputs) + len(extra)} arguments")
        attributes.update(zip(self.attributes, extra))
        for attribute, default in self.attributes.items():
            setattr(self, attribute, check.number(attribute, attributes.pop(attribute, default)))
        if attributes:
            raise ArgumentError(f"{self.op_type} has no attribute {sorted(attributes)}; it has "
                                f"{sorted(self.attributes) or 'none'}")
        super().__init__(*inputs, name=name)

    def infer_dtype(self, *dtypes):
        """The table's rule (tinyflow/dtypes.py), once numpy's kernel is known to take these dtypes."""
        key = (type(self), dtypes)
        if key not in _ACCEPTED:
            self.dtype = None  # the kernel's own result dtype, not cast
            try:
                with np.errstate(all="ignore"):
                    self.compute(*[np.ones(1, d) for d in dtypes])
            except TypeError as err:
                raise ShapeError(f"{self.op_type} does not take inputs of dtype {', '.join(map(str, dtypes))} "
                                 f"({err}); convert them first, e.g. tfl.cast(x, 'float32')") from None
            _ACCEPTED[key] = type(self).dtype_rule(*dtypes)
        return _ACCEPTED[key]


_ACCEPTED = {}  # (op class, input dtypes) -> output dtype, once numpy's kernel computed on such inputs


def _numpy_kernel(cls):
    """The class's `compute`: the expression as numpy code, its result in the op's dtype."""
    source = expressions.text(cls.expression)
    guarded = any(isinstance(n, ast.Call) and n.func.id in _WARNS or isinstance(n, ast.BinOp) and isinstance(
        n.op, (ast.Pow, ast.Div)) for n in ast.walk(cls.expression)) and \
        any(isinstance(n, ast.Call) and n.func.id == "where" for n in ast.walk(cls.expression))
    attributes = "".join(f"    {a} = self.{a}\n" for a in cls.attributes)
    if cls.dtype_rule is promote_to_float:  # integers become the float type first (-abs of a uint8 wraps around)
        attributes += "".join(f"    if {x}.dtype.kind not in 'fc': {x} = {x}.astype(self.dtype or float32)\n"
                              for x in cls.input_names)
    body = f"out = {source}"
    if guarded:  # both branches of `where` are computed: a warning from the discarded one means nothing
        body = f"with errstate(all='ignore'):\n        {body}"
    code = (f"def compute(self, {', '.join(cls.input_names)}):\n{attributes}    {body}\n"
            "    return out if out.dtype is self.dtype else asarray(out, self.dtype)\n")
    if not cls.attributes and not guarded:  # the bare expression, for callers that know the dtype comes out right
        code += f"def kernel({', '.join(cls.input_names)}):\n    return {source}\n"
    namespace = _define(code, f"{cls.op_type}.compute: {source}",
                        dict(NUMPY, errstate=np.errstate, asarray=np.asarray, float32=np.float32))
    namespace["compute"].__doc__ = f"y = {source}, with numpy."
    cls.kernel = namespace.get("kernel") and (_ufunc_of(cls.expression, cls.input_names) or namespace["kernel"])
    return namespace["compute"]


_OPERATOR_UFUNCS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
                    ast.USub: np.negative}


def _ufunc_of(tree, input_names):
    """The ufunc that is the expression on its inputs in order (a + b: np.add), or None (eager mode calls it as is)."""
    if isinstance(tree, ast.BinOp):
        function, args = _OPERATOR_UFUNCS.get(type(tree.op)), [tree.left, tree.right]
    elif isinstance(tree, ast.UnaryOp):
        function, args = _OPERATOR_UFUNCS.get(type(tree.op)), [tree.operand]
    elif isinstance(tree, ast.Call) and not tree.keywords:
        function, args = NUMPY.get(tree.func.id), tree.args
    else:
        return None
    names = [arg.id if isinstance(arg, ast.Name) else None for arg in args]
    return function if isinstance(function, np.ufunc) and names == list(input_names) else None


def make_op(op_type, input_names, expression, attributes=(), dtype="same", gradients=None, doc=""):
    """The ElementwiseOp class of one expression, with its gradient registered as the table's row says."""
    tree = expressions.parse(expression)
    cls = type(op_type, (ElementwiseOp,), {
        "input_names": tuple(input_names), "attributes": dict(attributes), "expression": tree,
        "dtype_rule": staticmethod(DTYPE_RULES[dtype]), "__module__": __name__, "__qualname__": op_type,
        "__doc__": f"{doc or op_type}\n\n    y = {expressions.text(tree)}"})
    cls.compute = _numpy_kernel(cls)
    if gradients is False:
        not_differentiable(cls)
        return cls
    cls.gradients = expressions.gradients(tree, input_names, gradients)
    cls.__doc__ += "\n    " + "; ".join(f"gradient for {x}: {expressions.text(t)}" for x, t in
                                         zip(input_names, cls.gradients) if t is not None)

    def first_call(op, grad):  # the gradient ops of a gradient op are made when first needed, not all at once
        return register_gradient(cls)(_gradient_function(cls))(op, grad)
    register_gradient(cls)(first_call)
    return cls


TABLE_GRADIENTS = set()  # the gradient functions made from the table: on inputs of one shape, each has that shape
GRADIENT_OPS = {}  # (op class, input index) -> (gradient op class, the names its inputs are given)


def _gradient_function(cls):
    """`gradient(op, g)` of cls written as Python source, one expression per input (Sigmoid's: [SigmoidGrad(y, g)])."""
    items, namespace = [], {"zeros_like": zeros_like}
    for index, tree in enumerate(cls.gradients):
        if tree is None:
            items.append("None")
        elif isinstance(tree, ast.Constant):  # a constant derivative: 0 for floor, ceil, sign
            items.append("zeros_like(g)")
        elif expressions.is_one_operation(tree):
            items.append(expressions.text(tree))
        else:
            grad_op, names = _gradient_op(cls, index, tree)
            namespace[grad_op.op_type] = grad_op
            arguments = [*names, *(f"{a}={a}" for a in grad_op.attributes)]
            items.append(f"{grad_op.op_type}({', '.join(arguments)})")
    returned = f"[{', '.join(items)}]"
    used = set(expressions.names(ast.parse(returned, mode="eval")))
    inputs = [n if n in used else "_" for n in cls.input_names]
    unpack = f"    {''.join(n + ', ' for n in inputs)}= op.inputs\n" if used - {"g"} else ""
    source = ("def gradient(op, g):\n" + unpack
              + ("    y = op\n" if "y" in used else "")
              + "".join(f"    {a} = op.{a}\n" for a in cls.attributes if a in used) + f"    return {returned}\n")
    function = _define(source, f"gradient of {cls.op_type}", namespace)["gradient"]
    TABLE_GRADIENTS.add(function)
    return function


def _gradient_op(cls, index, tree):
    """The op computing input `index`'s gradient expression of cls in one kernel (SigmoidGrad, DivideGrad1)."""
    if (cls, index) not in GRADIENT_OPS:
        name, inputs, expression, attributes, reads = expressions.gradient_op(
            cls.op_type, cls.input_names, cls.attributes, index, tree)
        grad_op = make_op(name, inputs, expression, attributes,
                          doc=f"The gradient of {cls.op_type} for its input {cls.input_names[index]}.")
        GRADIENT_OPS[cls, index] = grad_op, reads
    return GRADIENT_OPS[cls, index]


def gradient_ops():
    """The first-order gradient ops of every row (the C build generates their kernels too)."""
    for cls in OPS.values():
        for index, tree in enumerate(getattr(cls, "gradients", ())):
            if tree is not None and not expressions.is_one_operation(tree):
                _gradient_op(cls, index, tree)
    return {grad_op.op_type: grad_op for grad_op, _ in GRADIENT_OPS.values()}


def _signature(cls):
    """(inputs..., attributes=defaults, name=None): the signature of cls's `tfl.` function."""
    parameter = functools.partial(inspect.Parameter, kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Signature([*map(parameter, cls.input_names), *(parameter(a, default=v) for a, v in
                                                                 (*cls.attributes.items(), ("name", None)))])


# ---------------------------------------------------------------- elementwise ops that are not one expression
def extreme(dtype, largest):
    """The largest value of `dtype` (the identity of min), or the lowest (of max; what max pooling pads with)."""
    if dtype.kind in "fb":
        return largest if dtype.kind == "b" else np.inf if largest else -np.inf
    return np.iinfo(dtype).max if largest else np.iinfo(dtype).min


class Cast(Operation):
    """x converted to `dtype`.  Gradient: g cast back (none for integer results)."""

    elementwise = True

    def __init__(self, x, dtype, name=None):
        self.target_dtype = Arguments(self, name, x).dtype("dtype", dtype)
        super().__init__(x, name=name)

    def compute(self, x):
        return x.astype(self.target_dtype, copy=False)

    def infer_dtype(self, x):
        return self.target_dtype


def cast(x, dtype, name=None):
    """x converted to dtype (returns x itself when it already has it)."""
    x = as_node(x)
    return x if x.dtype == Arguments(Cast, name, x).dtype("dtype", dtype) else Cast(x, dtype, name=name)


register_gradient(Cast)(lambda op, grad: [  # only between float types
    cast(grad, op.inputs[0].dtype) if op.inputs[0].dtype.kind == op.dtype.kind == "f" else None])


class ZerosLike(Operation):
    """An array of zeros with x's run-time shape and dtype."""

    elementwise = True

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return np.zeros_like(x)


class OnesLike(ZerosLike):
    """An array of ones with x's run-time shape and dtype (seeds backprop)."""

    def compute(self, x):
        return np.ones_like(x)


zeros_like = op_function(ZerosLike, "zeros_like", "Zeros with x's run-time shape.")
ones_like = op_function(OnesLike, "ones_like", "Ones with x's run-time shape.")
not_differentiable(ZerosLike, OnesLike)


def clip(x, min=None, max=None, name=None):  # noqa: A002 - numpy's and torch's argument names
    """x limited to [min, max] elementwise; a bound left None does not limit (torch.clamp, np.clip)."""
    x = as_node(x)
    bounds = [np.asarray(extreme(x.dtype, largest), x.dtype) if bound is None else bound
              for bound, largest in ((min, False), (max, True))]
    return OPS["Clip"](x, *(as_node(b, like=x) for b in bounds), name=name)


def gelu(x, approximate="none", name=None):
    """The Gaussian error linear unit x Φ(x); approximate="tanh" uses the tanh formula (as PyTorch and ONNX)."""
    if approximate not in ("none", "tanh"):
        Arguments(OPS["Gelu"], name, x).fail("approximate", approximate, "is not 'none' or 'tanh'",
                                             "pass approximate='none' (exact, with erf) or 'tanh'")
    return (OPS["GeluTanh"] if approximate == "tanh" else OPS["Gelu"])(x, name=name)


SELU_ALPHA = 1.6732632423543772848170429916717  # Klambauer et al. 2017, as PyTorch and ONNX
SELU_SCALE = 1.0507009873554804934193349852946


def selu(x, alpha=SELU_ALPHA, scale=SELU_SCALE, name=None):
    """The self-normalising elu: scale · elu(x, alpha), with the constants of Klambauer et al. by default."""
    return PUBLIC["multiply"](PUBLIC["elu"](x, alpha), scale, name=name)


def hard_sigmoid(x, alpha=1 / 6, beta=0.5, name=None):
    """max(0, min(1, alpha x + beta)); the defaults are PyTorch's (ONNX's alpha is 0.2)."""
    return clip(x * alpha + beta, 0.0, 1.0, name=name)


def hard_swish(x, name=None):
    """x · hard_sigmoid(x) = x · relu6(x + 3) / 6 (MobileNetV3's activation, as PyTorch)."""
    return PUBLIC["multiply"](x, hard_sigmoid(x), name=name)


def elementwise_op(op_type, signature, expression, gradients=None, onnx=None, dtype="same", doc=""):
    """A new elementwise op from one expression, as each row of ops/elementwise.py is; returns its function.

    `swish = tfl.elementwise_op("Swish", "swish(x, beta=1.0)", "x * sigmoid(beta * x)")` comes with a numpy kernel, its
    gradient, fused C and OpenCL kernels and the ONNX export. A signature "(x, low, high)" returns the op class."""
    try:  # the row must be in the expression language: else an ArgumentError naming what is not
        name, inputs, attributes = expressions.signature(signature)
        texts = [(expression, set())] + [(g, {"y", "g"}) for g in gradients or () if isinstance(g, str)]
        for text, more in texts:
            unknown = set(expressions.names(expressions.parse(text))) - {*inputs, *attributes, *more}
            if unknown:
                raise expressions.ExpressionError(f"{text!r} reads {sorted(unknown)}: no input is named so")
    except (SyntaxError, ValueError) as err:
        raise ArgumentError(f"elementwise_op {op_type!r}: {getattr(err, 'msg', err)}; write the signature as "
                            "'name(x, alpha=1.0)' and each expression in Python syntax over its inputs and attributes "
                            "(a gradient may also read y and g)") from None
    if dtype not in DTYPE_RULES:
        raise ArgumentError(f"elementwise_op {op_type!r}: dtype={dtype!r} is not one of {sorted(DTYPE_RULES)}")
    cls = make_op(op_type, inputs, expression, attributes, dtype, gradients, doc)
    cls.onnx = onnx
    return op_function(cls, name, doc or f"{op_type}: {expression}.", _signature(cls)) if name else cls


OPS, PUBLIC = {}, {}  # op type -> class of the table; function name -> tfl. function
for _row in ELEMENTWISE:
    _made = elementwise_op(**_row)
    OPS[_row["op_type"]] = OP_TYPES[_row["op_type"]]
    if _made is not OPS[_row["op_type"]]:
        PUBLIC[_made.__name__] = _made
GRADIENTS = gradient_ops()  # SigmoidGrad, ReluGrad, DivideGrad1, ...: op type -> class
PUBLIC.update(cast=cast, zeros_like=zeros_like, ones_like=ones_like, clip=clip, gelu=gelu, selu=selu,
              hard_sigmoid=hard_sigmoid, hard_swish=hard_swish)
globals().update(**OPS, **GRADIENTS, **PUBLIC)
__all__ = [*OPS, *GRADIENTS, *PUBLIC, "Cast", "ZerosLike", "OnesLike", "ElementwiseOp", "OPS", "PUBLIC"]
