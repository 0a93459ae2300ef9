"""AST conversion (as Paddle's dynamic-to-static): `if`/`while` become runtime dispatch.

    if x_sum > 0:                 def _true(y): y = x * 2; return (y,)
        y = x * 2          →      def _false(y): y = -x; return (y,)
    else:                         (y,) = _jit.convert_ifelse(x_sum > 0, _true, _false, (_jit.ld(lambda: y),), ...)
        y = -x

At run time `convert_ifelse` keeps Python semantics for a Python bool and builds
`tfl.cond` for a graph node; `convert_while` likewise builds `tfl.while_loop`.
Comparisons, `and`/`or`/`not`, `bool()`/`int()`/`float()` and `.numpy()` go through
helpers too, so a symbolic value never silently becomes a Python constant: what
cannot be converted raises a TinyflowError naming the user's file and line. Calls
to other user functions are converted on the fly (recursively), and every converted
function is cached per code object (the conversion cache).
"""
import ast
import builtins
import functools
import inspect
import os
import textwrap
import types

import numpy as np

from ..errors import TinyflowError
from ..nodes import Node, as_node

_CACHE = {}          # code object -> factory of the converted function (or None: leave it unconverted)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_HELPER = "_tfl_jit_"


class ConversionError(TinyflowError):
    """Code inside to_static that cannot become a graph; the message names the file, line and the fix."""


class _Undefined:
    """A variable without a value: not yet assigned, or assigned in only one branch of an `if` on a tensor."""

    def __init__(self, name, site=None):
        self.name, self.site = name, site

    def __repr__(self):
        return f"<undefined variable '{self.name}'>"

    def _fail(self, *args, **kwargs):
        where = f"{self.site}: " if self.site else ""
        raise ConversionError(f"{where}variable '{self.name}' is assigned in only one branch of an `if` on a "
                              "tensor, so it has no value after the `if`; assign it in both branches or before the if")

    __array__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __call__ = _fail
    __getattr__ = __getitem__ = __matmul__ = __rmatmul__ = __neg__ = __bool__ = __iter__ = _fail


def ld(name, getter):
    """The current value of a local variable, or an _Undefined marker if it has none yet."""
    try:
        return getter()
    except NameError:
        return _Undefined(name)


# ---------------------------------------------------------------- run-time dispatch
def convert_ifelse(test, true_fn, false_fn, values, names, site):
    """Run one branch (Python bool) or build tfl.cond (graph node); returns the branch's variables."""
    if not isinstance(test, Node):
        return true_fn(*values) if _python_truth(test, site) else false_fn(*values)
    from ..graph import get_default_graph
    from ..control_flow import Cond, Subgraph
    if not names:
        raise ConversionError(f"{site}: this `if` depends on a tensor but assigns no variable, so as a graph it "
                              "would do nothing. Assign the results you need in both branches (y = ... / y = ...).")
    results = {}

    def branch(fn, label):
        def build():
            results[label] = result = fn(*values)
            # every variable becomes an output; only those that are tensors get a Cond op below
            return [v if isinstance(v, Node) else as_node(v) if isinstance(v, (bool, int, float, np.number))
                    else as_node(0.0) for v in result]
        return build
    pred = _as_bool(test, site)
    graph = get_default_graph()
    with graph.name_scope("if"):
        true_branch = Subgraph.trace(branch(true_fn, "true"), scope="true")
        false_branch = Subgraph.trace(branch(false_fn, "false"), scope="false")
        merged, op = [], None
        for i, name in enumerate(names):
            a, b = results["true"][i], results["false"][i]
            if isinstance(a, _Undefined) or isinstance(b, _Undefined):
                merged.append(_Undefined(name, site))  # a branch-local temporary: an error only if used later
            elif isinstance(a, Node) or isinstance(b, Node):
                for v in (a, b):
                    if not isinstance(v, (Node, bool, int, float, np.number)):
                        raise ConversionError(f"{site}: variable '{name}' is a tensor in one branch of an `if` on a "
                                              f"tensor and a {type(v).__name__} in the other; make both tensors")
                op = op or Cond(pred, true_branch, false_branch, name="Cond")
                merged.append(op.output(i))
            elif a is b or _same_value(a, b):
                merged.append(a)
            else:
                raise ConversionError(f"{site}: variable '{name}' gets different Python values in the two branches "
                                      f"of an `if` on a tensor ({a!r} / {b!r}); make it a tensor (tfl.Constant) or "
                                      "compute it outside the `if`")
    return tuple(merged)


def convert_while(test_fn, body_fn, values, names, site):
    """A Python loop while the test is a Python bool; tfl.while_loop from the first time it is a graph node."""
    values = tuple(values)
    while True:
        test = test_fn(*values)
        if isinstance(test, Node):
            break
        if not _python_truth(test, site):
            return values
        values = tuple(body_fn(*values))
    from ..control_flow import while_loop
    for name, value in zip(names, values):
        if isinstance(value, _Undefined):
            raise ConversionError(f"{site}: variable '{name}' is first assigned inside a `while` on a tensor; "
                                  "give it a value before the loop")
        if not isinstance(value, Node) and not isinstance(value, (int, float, bool, np.number)):
            raise ConversionError(f"{site}: variable '{name}' ({type(value).__name__}) changes in a `while` on a "
                                  "tensor; only tensors and numbers can be loop variables")
    start = [as_node(v) if not isinstance(v, Node) else v for v in values]

    def test(*loop):
        return _as_bool(test_fn(*loop), site)

    def body(*loop):
        return [v if isinstance(v, Node) else as_node(v, like=loop[i]) for i, v in enumerate(body_fn(*loop))]
    return tuple(while_loop(test, body, start))


def _same_value(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and odd objects compare ambiguously: treat as different
        return False


def _as_bool(test, site):
    if test.dtype != np.bool_:
        from ..ops.math_ops import cast
        test = cast(test, "bool")
    if test.shape is not None and any(d is not None and d != 1 for d in test.shape):
        raise ConversionError(f"{site}: the condition has shape {test.shape}; an `if`/`while` on a tensor needs "
                              "one value. Reduce it first: tfl.reduce_max(c) for 'any', tfl.reduce_min or "
                              "tfl.equal(tfl.reduce_sum(c), c.size) for 'all'")
    return test


def _python_truth(value, site):
    if isinstance(value, Node):
        raise _symbolic(site, "bool()")
    return bool(value)


def _symbolic(site, what):
    return ConversionError(
        f"{site}: {what} of a symbolic tensor inside to_static: while tracing, tensors have no values yet. "
        "Keep the computation in tensors (tfl.cond / tfl.where / an `if` directly on the tensor), or return the "
        "tensor and use its value after the call.")


def convert_call(fn, site):
    """Called functions: builtins that need a value raise; user functions are converted too."""
    if fn is builtins.bool or fn is builtins.int or fn is builtins.float:
        return functools.partial(_checked_builtin, fn, site)
    if isinstance(fn, types.FunctionType) and not fn.__code__.co_filename.startswith(_PACKAGE_DIR):
        return convert_function(fn)
    from ..nn.layer import Layer
    if isinstance(fn, Layer) and type(fn).forward.__code__.co_filename.startswith(_PACKAGE_DIR) is False:
        return functools.partial(_call_layer, fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and \
            not fn.__func__.__code__.co_filename.startswith(_PACKAGE_DIR):
        return types.MethodType(convert_function(fn.__func__), fn.__self__)
    return fn


def _call_layer(layer, *args, **kwargs):
    """A user-defined sub-layer, with its forward converted too."""
    with layer.graph.name_scope(layer.scope + "/"):
        return convert_function(type(layer).forward)(layer, *args, **kwargs)


def _checked_builtin(fn, site, *args):
    if args and isinstance(args[0], Node):
        raise _symbolic(site, f"{fn.__name__}()")
    return fn(*args)


def convert_attribute_call(obj, attr, site):
    """`x.numpy()` and `x.item()` of a graph node raise; any other attribute is looked up normally."""
    if isinstance(obj, Node) and attr in ("numpy", "item", "tolist"):
        raise _symbolic(site, f".{attr}()")
    return getattr(obj, attr)


def convert_compare(left, op, right):
    """A comparison: tinyflow ops if either side is a graph node, else Python's."""
    if isinstance(left, Node) or isinstance(right, Node):
        from ..ops import math_ops
        fn = {ast.Gt: math_ops.greater, ast.GtE: math_ops.greater_equal, ast.Lt: math_ops.less,
              ast.LtE: math_ops.less_equal, ast.Eq: math_ops.equal}.get(op)
        if fn is not None:
            return fn(left, right)
        if op is ast.NotEq:
            return math_ops.equal(math_ops.equal(left, right), False)
    return _PY_COMPARE[op](left, right)


def convert_and(left, right_fn):
    """`a and b`: Python's short-circuit for Python values; elementwise logical and for graph nodes."""
    if not isinstance(left, Node):
        return left and right_fn()
    from ..ops.math_ops import where
    right = right_fn()
    return where(_as_bool(left, ""), _bool_node(right, left), False)


def convert_or(left, right_fn):
    """`a or b`: Python's for Python values; elementwise logical or for graph nodes."""
    if not isinstance(left, Node):
        return left or right_fn()
    from ..ops.math_ops import where
    right = right_fn()
    return where(_as_bool(left, ""), True, _bool_node(right, left))


def convert_not(value):
    """`not a`: Python's for Python values; logical not for graph nodes."""
    if not isinstance(value, Node):
        return not value
    from ..ops.math_ops import equal
    return equal(_as_bool(value, ""), False)


def _bool_node(value, like):
    if isinstance(value, Node):
        return _as_bool(value, "")
    return as_node(np.asarray(bool(value)))


_PY_COMPARE = {ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
               ast.LtE: lambda a, b: a <= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


# ---------------------------------------------------------------- the AST rewrite
def _assigned_names(statements):
    """Local names a block assigns (not inside nested functions, lambdas or comprehensions)."""
    names = []

    class Finder(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in names and not node.id.startswith(_HELPER):
                names.append(node.id)

        def visit_FunctionDef(self, node):
            if not node.name.startswith(_HELPER) and node.name not in names:
                names.append(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_Lambda(self, node):
            pass

        def visit_ListComp(self, node):
            pass

        visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp
    for statement in statements:
        Finder().visit(statement)
    return names


def _escapes(statements):
    """The first return / break / continue / yield leaving this block (ignoring nested functions and loops)."""
    found = []

    class Finder(ast.NodeVisitor):
        def __init__(self):
            self.loops = 0

        def visit_Return(self, node):
            found.append(("return", node))

        def visit_Yield(self, node):
            found.append(("yield", node))

        def visit_Break(self, node):
            if self.loops == 0:
                found.append(("break", node))

        visit_Continue = visit_Break

        def visit_For(self, node):
            self.loops += 1
            self.generic_visit(node)
            self.loops -= 1

        visit_While = visit_For

        def visit_FunctionDef(self, node):
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef
    for statement in statements:
        Finder().visit(statement)
    if found and isinstance(found[0][1], (ast.Break, ast.Continue)):
        return ("break" if isinstance(found[0][1], ast.Break) else "continue", found[0][1])
    return found[0] if found else None


def _args(names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[],
                         kw_defaults=[], kwarg=None, defaults=[])


def _no_args():
    return _args([])


def _function_def(name, args, body):
    extra = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
    return ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None, **extra)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename, self.count = filename, 0

    def site(self, node):
        return ast.Constant(f"{self.filename}:{node.lineno}")

    def helper(self, name):
        return ast.Attribute(ast.Name(_HELPER, ast.Load()), name, ast.Load())

    def call(self, name, *args):
        return ast.Call(self.helper(name), list(args), [])

    def value_of(self, name):
        getter = ast.Lambda(_no_args(), ast.Name(name, ast.Load()))
        return self.call("ld", ast.Constant(name), getter)

    def function(self, name, params, body, returns):
        args = _args(params)
        body = list(body) + [ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in returns], ast.Load()))]
        return _function_def(name, args, body)

    # -- if / while -----------------------------------------------------------------
    def visit_If(self, node):
        self.generic_visit(node)
        escape = _escapes(node.body + node.orelse)
        if escape is not None:  # keep Python's `if`, but refuse a tensor condition with a clear message
            node.test = self.call("python_condition", node.test, ast.Constant(escape[0]), self.site(node))
            return node
        self.count += 1
        names = _assigned_names(node.body + node.orelse)
        true_name, false_name = f"{_HELPER}true_{self.count}", f"{_HELPER}false_{self.count}"
        true_fn = self.function(true_name, names, node.body, names)
        false_fn = self.function(false_name, names, node.orelse or [ast.Pass()], names)
        dispatch = self.call("convert_ifelse", node.test, ast.Name(true_name, ast.Load()),
                             ast.Name(false_name, ast.Load()),
                             ast.Tuple([self.value_of(n) for n in names], ast.Load()),
                             ast.Tuple([ast.Constant(n) for n in names], ast.Load()), self.site(node))
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        return [true_fn, false_fn, ast.Assign([target], dispatch, lineno=node.lineno)]

    def visit_While(self, node):
        self.generic_visit(node)
        escape = _escapes(node.body)
        if escape is not None or node.orelse:
            why = escape[0] if escape else "else"
            node.test = self.call("python_condition", node.test, ast.Constant(why), self.site(node))
            return node
        self.count += 1
        names = _assigned_names(node.body)
        test_name, body_name = f"{_HELPER}test_{self.count}", f"{_HELPER}body_{self.count}"
        args = _args(names)
        test_fn = _function_def(test_name, args, [ast.Return(node.test)])
        body_fn = self.function(body_name, names, node.body, names)
        dispatch = self.call("convert_while", ast.Name(test_name, ast.Load()), ast.Name(body_name, ast.Load()),
                             ast.Tuple([self.value_of(n) for n in names], ast.Load()),
                             ast.Tuple([ast.Constant(n) for n in names], ast.Load()), self.site(node))
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        return [test_fn, body_fn, ast.Assign([target], dispatch, lineno=node.lineno)]

    # -- expressions ----------------------------------------------------------------
    def visit_Compare(self, node):
        self.generic_visit(node)
        if any(type(op) not in _PY_COMPARE for op in node.ops):
            return node  # `is`, `in`: Python's meaning
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(self.call("convert_compare", left, self.helper(f"OP_{type(op).__name__}"), right))
            left = right
        result = parts[0]
        for part in parts[1:]:
            result = self.call("convert_and", result, ast.Lambda(_no_args(), part))
        return result

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "convert_and" if isinstance(node.op, ast.And) else "convert_or"
        result = node.values[0]
        for value in node.values[1:]:
            result = self.call(name, result, ast.Lambda(_no_args(), value))
        return result

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self.call("convert_not", node.operand)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("numpy", "item", "tolist"):
            node.func = self.call("convert_attribute_call", node.func.value, ast.Constant(node.func.attr),
                                  self.site(node))
        elif not (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                  and node.func.value.id == _HELPER):
            node.func = self.call("convert_call", node.func, self.site(node))
        return node

    def visit_Lambda(self, node):
        return node  # lambdas stay Python (tfl.cond branches are often lambdas)


def python_condition(test, why, site):
    """The truth of a condition whose block has return/break/continue: only a Python value is allowed."""
    if isinstance(test, Node):
        fix = {"return": "assign the result to a variable in every branch and return it after the `if`",
               "break": "move the stop test into the `while` condition",
               "continue": "guard the rest of the body with an `if` instead",
               "yield": "build the values in tensors and return them",
               "else": "drop the `else:` of the loop (run its code after the loop)"}[why]
        raise ConversionError(f"{site}: `{why}` inside an `if`/`while` whose condition is a tensor cannot become a "
                              f"graph; {fix}.")
    return bool(test)


for _op in _PY_COMPARE:
    globals()[f"OP_{_op.__name__}"] = _op


def _factory(fn):
    """Compile the converted source of `fn` once: a factory taking the helpers and the closure values."""
    code = fn.__code__
    if code in _CACHE:
        return _CACHE[code]
    factory = None
    try:
        filename = inspect.getsourcefile(fn) or code.co_filename
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        tree = None  # no source (REPL, builtin): the function runs as written
    if tree is not None and tree.body:
        definition = tree.body[0]
        if isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) and definition.name == fn.__name__:
            definition.decorator_list = []
            ast.increment_lineno(tree, first - 1)
            rewriter = _Rewriter(filename)
            definition.body = [rewriter.visit(s) for s in definition.body]
            definition.body = [s for part in definition.body for s in (part if isinstance(part, list) else [part])]
            params = [_HELPER] + list(code.co_freevars)
            wrapper = _function_def(f"{_HELPER}factory", _args(params),
                                    [definition, ast.Return(ast.Name(definition.name, ast.Load()))])
            module = ast.fix_missing_locations(ast.Module([wrapper], []))
            namespace = {}
            exec(compile(module, filename, "exec"), namespace)  # noqa: S102 - the user's own code, rewritten
            factory = types.FunctionType(namespace[f"{_HELPER}factory"].__code__, fn.__globals__)
    _CACHE[code] = factory
    return factory


def convert_function(fn):
    """The converted version of a Python function (cached per code object); `fn` itself if it has no source."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return fn
    factory = _factory(fn)
    if factory is None:
        return fn
    from . import convert as helpers
    try:
        cells = [c.cell_contents for c in (fn.__closure__ or ())]
    except ValueError:  # a closure variable without a value yet
        return fn
    converted = factory(helpers, *cells)
    converted.__defaults__, converted.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    converted.__wrapped__ = fn
    return converted
