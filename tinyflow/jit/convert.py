"""AST conversion (as Paddle's dynamic-to-static and TF's AutoGraph): `if`/`while`/`for` become runtime dispatch.

    if x_sum > 0:                 def _true(y): y = x * 2; return (y,)
        y = x * 2          →      def _false(y): y = -x; return (y,)
    else:                         (y,) = _jit.convert_ifelse(x_sum > 0, _true, _false, (_jit.ld(lambda: y),), ...)
        y = -x

First `return` / `break` / `continue` become flags and guards (escapes.py). Then at run time
`convert_ifelse` keeps Python semantics for a Python bool and builds `tfl.cond` for a graph
node (branches.py); `convert_while` and `convert_for` likewise build `tfl.while_loop` (loops.py): a
`for` over a tensor, `tfl.range(n)` or enumerate / zip of those loops in the graph, a `for`
over a Python iterable stays a Python loop. Comparisons, `and`/`or`/`not`, `bool()`/`int()`/
`float()`, `len()`, `range()` and `.numpy()` go through helpers too, so a symbolic value never
silently becomes a Python constant: what cannot be converted raises a ConversionError naming
the user's file and line. Calls to other user functions are converted on the fly
(recursively), and every converted function is cached per code object (the conversion cache).
"""
import ast
import builtins
import copy
import functools
import inspect
import operator
import os
import textwrap
import traceback
import types

import numpy as np

from ..eager import Tensor, tensor
from ..nodes import Constant, Node, as_node
from ..nodes.node import _notebook_cell, default_dtype_for
# helpers the converted code calls (as _tfl_jit_.<name>)
from .branches import convert_continue_guard, convert_guard, convert_ifelse, convert_ifexp  # noqa: F401
from .loops import convert_for, convert_subscript, convert_while, converted_builtin  # noqa: F401
from .values import as_bool, return_value, returned, symbolic  # noqa: F401
from .errors import ConversionError
from .escapes import Lowering
from .inplace import OPS, assigns_into, inplace  # noqa: F401
from .tensor_lists import list_aware
from .undefined import Undefined

_CACHE = {}          # code object -> factory of the converted function (or None: leave it unconverted)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_HELPER = "_tfl_jit_"
_NO_SOURCE = "no source"


def ld(name, getter):
    """The current value of a local variable, or an Undefined marker if it has none yet."""
    try:
        return getter()
    except NameError:
        return Undefined(name)


def convert_call(fn, site):
    """Called functions: builtins that need a value raise, enumerate/zip/range/len take tensors, user functions
    are converted too."""
    if fn is builtins.bool or fn is builtins.int or fn is builtins.float:
        return functools.partial(_checked_builtin, fn, site)
    if fn is Tensor or fn is tensor:
        return _graph_tensor
    tensor_aware = converted_builtin(fn) or list_aware(fn)
    if tensor_aware is not None:
        return tensor_aware
    if isinstance(fn, types.FunctionType) and not fn.__code__.co_filename.startswith(_PACKAGE_DIR):
        return convert_function(fn)
    from ..nn.layer import Layer
    if isinstance(fn, Layer) and type(fn).forward.__code__.co_filename.startswith(_PACKAGE_DIR) is False:
        return functools.partial(_call_layer, fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and \
            not fn.__func__.__code__.co_filename.startswith(_PACKAGE_DIR):
        return types.MethodType(convert_function(fn.__func__), fn.__self__)
    return fn


def _graph_tensor(data, requires_grad=False, dtype=None):
    """tfl.tensor(...) in converted code: a constant of the graph (as Paddle's to_tensor and TF's tf.constant are),
    so that loops and branches can carry it like any tensor."""
    if isinstance(data, Node):
        from ..ops import cast, identity
        return identity(data) if dtype is None else cast(data, dtype)
    data = data.numpy() if isinstance(data, Tensor) else data
    return Constant(np.array(data, dtype=dtype if dtype is not None else default_dtype_for(data)))


def _call_layer(layer, *args, **kwargs):
    """A user-defined sub-layer, with its forward converted too."""
    with layer.graph.name_scope(layer.scope + "/"):
        return convert_function(type(layer).forward)(layer, *args, **kwargs)


def _checked_builtin(fn, site, *args):
    if args and isinstance(args[0], Node):
        raise symbolic(site, f"{fn.__name__}()")
    return fn(*args)


def convert_attribute_call(obj, attr, site):
    """`x.numpy()` and `x.item()` of a graph node raise; any other attribute is looked up normally."""
    if isinstance(obj, Node) and attr in ("numpy", "item", "tolist"):
        raise symbolic(site, f".{attr}()")
    return getattr(obj, attr)


def convert_compare(left, op, right):
    """A comparison: tinyflow ops if either side is a graph node, else Python's."""
    if isinstance(left, Node) or isinstance(right, Node):
        from ..ops import elementwise_ops as ew
        fn = {ast.Gt: ew.greater, ast.GtE: ew.greater_equal, ast.Lt: ew.less, ast.LtE: ew.less_equal, ast.Eq: ew.equal,
              ast.NotEq: ew.not_equal}.get(op)
        if fn is not None:
            return fn(left, right)
    return _PY_COMPARE[op](left, right)


def convert_chain(site, left, *steps):
    """`a < b < c`: each operand evaluated once, in order; Python's short-circuit while the parts are Python values."""
    result = None
    for op, right_fn in steps:
        right = right_fn()
        part = convert_compare(left, op, right)
        result = part if result is None else convert_and(result, lambda: part, site)
        if not isinstance(result, Node) and not result:
            return result
        left = right
    return result


def convert_and(left, right_fn, site):
    """`a and b`: Python's short-circuit for Python values; elementwise logical and for graph nodes."""
    if not isinstance(left, Node):
        return left and right_fn()
    right = right_fn()
    if not isinstance(right, Node) and not right:
        return right  # false whatever the tensor holds: later operands are skipped, as in Python
    from ..ops.elementwise_ops import where
    return where(as_bool(left, site), _bool_node(right, site), False)


def convert_or(left, right_fn, site):
    """`a or b`: Python's for Python values; elementwise logical or for graph nodes."""
    if not isinstance(left, Node):
        return left or right_fn()
    right = right_fn()
    if not isinstance(right, Node) and right:
        return right  # true whatever the tensor holds: `x > 1 or a is None or a > 1` never reaches `a > 1`
    from ..ops.elementwise_ops import where
    return where(as_bool(left, site), True, _bool_node(right, site))


def convert_not(value, site):
    """`not a`: Python's for Python values; logical not for graph nodes."""
    if not isinstance(value, Node):
        return not value
    from ..ops.elementwise_ops import equal
    return equal(as_bool(value, site), False)


def convert_assert(test, message_fn, site):
    """`assert test, message`: Python's for a Python value; a tensor's value is not known while tracing."""
    if isinstance(test, Node):
        raise ConversionError(f"{site}: `assert` on a tensor inside to_static: while tracing, tensors have no values "
                              "yet, and a graph cannot stop on one. Assert on the result after the call, or return "
                              "the condition")
    if not test:
        message = message_fn()
        raise AssertionError(*([] if message is None else [message]))


def _bool_node(value, site):
    if isinstance(value, Node):
        return as_bool(value, site)
    return as_node(np.asarray(bool(value)))


_PY_COMPARE = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
               ast.Eq: operator.eq, ast.NotEq: operator.ne}


# ---------------------------------------------------------------- the AST rewrite
def _assigned_names(statements):
    """Local names a block assigns (not inside nested functions, classes, lambdas or comprehensions)."""
    names = []
    for node in (n for statement in statements for n in _walk_here(statement, root=False)):
        name = node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else \
            node.name if isinstance(node, _SCOPES[:3] + (ast.ExceptHandler,)) else None
        if name and not name.startswith(_HELPER) and name not in names:
            names.append(name)
    return names


def _grown_lists(statements, local_names):
    """The local lists a block appends to (`xs.append(v)`, extend, insert): a tensor branch or loop carries them
    (a global or an attribute is left alone: the statement changes the object, whoever holds it)."""
    names = []
    for node in (n for statement in statements for n in _walk_here(statement, root=False)):
        if isinstance(node, ast.Attribute) and node.attr in ("append", "extend", "insert") and \
                isinstance(node.value, ast.Name) and node.value.id in local_names and node.value.id not in names:
            names.append(node.value.id)
    return names


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)


def _walk_here(node, root=True):
    """ast.walk, not into the nested scopes below `node` (functions, classes, lambdas, comprehensions)."""
    yield node
    if root or not isinstance(node, _SCOPES):
        for child in ast.iter_child_nodes(node):
            yield from _walk_here(child, root=False)


def _local_names(definition):
    """A function's local variables: its parameters and what its body assigns, less `global`/`nonlocal` names."""
    args = definition.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a]
    declared = {n for node in _walk_here(definition) if isinstance(node, (ast.Global, ast.Nonlocal))
                for n in node.names}
    return set(params + _assigned_names(definition.body)) - declared


def _simple(target):
    """An attribute or item target whose object and key can be evaluated again without side effects."""
    if not isinstance(target, (ast.Attribute, ast.Subscript)):
        return False
    base, key = target.value, getattr(target, "slice", None)
    while isinstance(base, ast.Attribute):
        base = base.value
    return isinstance(base, ast.Name) and (key is None or isinstance(key, (ast.Name, ast.Constant)))


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
        self.filename, self.count, self.line, self.locals = filename, 0, 0, set()

    def visit(self, node):
        if isinstance(node, ast.stmt):
            self.line = getattr(node, "lineno", self.line)
        return super().visit(node)

    def site(self, node):
        """"file:line" of a node (an expression the lowering made has its statement's line)."""
        return ast.Constant(site_of(self.filename, getattr(node, "lineno", self.line)))

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

    def visit_FunctionDef(self, node):
        outer, self.locals = self.locals, _local_names(node)
        self.generic_visit(node)
        self.locals = outer
        return node

    def carried(self, statements):
        """The names a branch or loop body assigns, then the local lists it appends to."""
        names = _assigned_names(statements)
        return names + [n for n in _grown_lists(statements, self.locals) if n not in names]

    # -- if / while / for ---------------------------------------------------------------
    def dispatch(self, helper, first, functions, names, node):
        """`(names...) = _tfl_jit_.<helper>(first, *functions, (values...), ("names"...), "file:line")`."""
        call = self.call(helper, first, *functions, ast.Tuple([self.value_of(n) for n in names], ast.Load()),
                         ast.Tuple([ast.Constant(n) for n in names], ast.Load()), self.site(node))
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        return ast.Assign([target], call, lineno=node.lineno)

    def visit_If(self, node):
        self.generic_visit(node)
        self.count += 1
        names = self.carried(node.body + node.orelse)
        true_name, false_name = f"{_HELPER}true_{self.count}", f"{_HELPER}false_{self.count}"
        true_fn = self.function(true_name, names, node.body, names)
        false_fn = self.function(false_name, names, node.orelse or [ast.Pass()], names)
        guard = getattr(node, "escape", None)  # the rest of a block after a return / break / continue (escapes.py)
        helper = {"stops": "convert_guard", "continues": "convert_continue_guard"}.get(guard, "convert_ifelse")
        return [true_fn, false_fn, self.dispatch(helper, node.test, [ast.Name(true_name, ast.Load()),
                                                                     ast.Name(false_name, ast.Load())], names, node)]

    def visit_While(self, node):
        self.generic_visit(node)
        self.count += 1
        names = self.carried(node.body)
        test_name, body_name = f"{_HELPER}test_{self.count}", f"{_HELPER}body_{self.count}"
        test_fn = _function_def(test_name, _args(names), [ast.Return(node.test)])
        body_fn = self.function(body_name, names, node.body, names)
        return [test_fn, body_fn, self.dispatch("convert_while", ast.Name(test_name, ast.Load()),
                                                [ast.Name(body_name, ast.Load())], names, node)]

    def visit_For(self, node):
        self.generic_visit(node)
        self.count += 1
        item = f"{_HELPER}item_{self.count}"
        bind = ast.Assign([node.target], ast.Name(item, ast.Load()), lineno=node.lineno)
        names = self.carried([bind] + node.body)
        test_name, body_name = f"{_HELPER}for_test_{self.count}", f"{_HELPER}for_body_{self.count}"
        extra = getattr(node, "extra_test", None)  # the break / return flags (escapes.py)
        extra = self.visit(extra) if extra is not None else None
        body_fn = _function_def(body_name, _args([item] + names), [bind] + node.body + [
            ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load()))])
        statements = [body_fn]
        if extra is not None:
            statements.insert(0, _function_def(test_name, _args(names), [ast.Return(extra)]))
        test = ast.Name(test_name, ast.Load()) if extra is not None else ast.Constant(None)
        return statements + [self.dispatch("convert_for", node.iter, [test, ast.Name(body_name, ast.Load())],
                                           names, node)]

    # -- assignments ------------------------------------------------------------------
    def visit_AugAssign(self, node):
        """`a += v` becomes `a = _tfl_jit_.inplace(a, "Add", v, ...)`: a tensor changes in place (inplace.py)."""
        target = node.target
        if type(node.op).__name__ not in OPS or not (isinstance(target, ast.Name) or _simple(target)):
            self.generic_visit(node)
            return node
        load = copy.deepcopy(target)
        load.ctx = ast.Load()
        call = self.call("inplace", load, ast.Constant(type(node.op).__name__), node.value, self.site(node),
                         ast.Constant(ast.unparse(target)))
        return self.visit(ast.Assign([target], call, lineno=node.lineno))

    def visit_Assign(self, node):
        """An attribute or item assigned is checked first (refused inside a tensor branch or loop)."""
        self.generic_visit(node)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        checks = [ast.Expr(self.call("assigns_into", copy.deepcopy(t.value), self.site(node),
                                     ast.Constant(ast.unparse(t)), ast.Constant(isinstance(t, ast.Subscript))),
                           lineno=node.lineno)
                  for target in targets for t in _walk_here(target) if _simple(t) and isinstance(t.ctx, ast.Store)]
        return checks + [node]

    visit_AnnAssign = visit_Assign

    # -- expressions ----------------------------------------------------------------
    def visit_Compare(self, node):
        self.generic_visit(node)
        if any(type(op) not in _PY_COMPARE for op in node.ops):
            return node  # `is`, `in`: Python's meaning
        steps = [ast.Tuple([self.helper(f"OP_{type(op).__name__}"), ast.Lambda(_no_args(), right)], ast.Load())
                 for op, right in zip(node.ops, node.comparators)]
        return self.call("convert_chain", self.site(node), node.left, *steps)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "convert_and" if isinstance(node.op, ast.And) else "convert_or"
        result = node.values[0]
        for value in node.values[1:]:
            result = self.call(name, result, ast.Lambda(_no_args(), value), self.site(node))
        return result

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self.call("convert_not", node.operand, self.site(node))
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return self.call("convert_ifexp", node.test, ast.Lambda(_no_args(), node.body),
                         ast.Lambda(_no_args(), node.orelse), self.site(node))

    def visit_Assert(self, node):
        self.generic_visit(node)
        message = node.msg if node.msg is not None else ast.Constant(None)
        return ast.Expr(self.call("convert_assert", node.test, ast.Lambda(_no_args(), message), self.site(node)),
                        lineno=node.lineno)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("numpy", "item", "tolist"):
            node.func = self.call("convert_attribute_call", node.func.value, ast.Constant(node.func.attr),
                                  self.site(node))
        elif not (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                  and node.func.value.id == _HELPER):
            node.func = self.call("convert_call", node.func, self.site(node))
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        key = node.slice
        return self.call("convert_subscript", node.value, key, self.site(node))


for _op in _PY_COMPARE:
    globals()[f"OP_{_op.__name__}"] = _op


def site_of(filename, line):
    """"file:line" of the user's code for messages ("cell 5, line 3" in a notebook)."""
    cell = _notebook_cell(filename)
    return f"cell {cell}, line {line}" if cell is not None else f"{filename}:{line}"


def _is_generator(definition):
    """Whether a function yields (generators run as written: their values cannot become one graph)."""
    class Finder(ast.NodeVisitor):
        found = False

        def visit_Yield(self, node):
            self.found = True

        visit_YieldFrom = visit_Await = visit_Yield

        def visit_FunctionDef(self, node):
            pass

        visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef
    finder = Finder()
    for statement in definition.body:
        finder.visit(statement)
    return finder.found


def _factory(fn):
    """Compile the converted source of `fn` once: a factory taking the helpers and the closure values
    (_NO_SOURCE when Python cannot find the source, None for a function that runs as written)."""
    code = fn.__code__
    if code in _CACHE:
        return _CACHE[code]
    factory = _NO_SOURCE
    try:
        filename = inspect.getsourcefile(fn) or code.co_filename
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        tree = None  # no source (python -c, the REPL, exec): the function runs as written
    if tree is not None and tree.body:
        definition = _lambda_as_def(tree, code) if fn.__name__ == "<lambda>" else tree.body[0]
        if not isinstance(definition, ast.FunctionDef) or definition.name not in (fn.__name__, f"{_HELPER}lambda"):
            pass  # not its source: its file changed, or several lambdas of its arguments share its lines
        elif _is_generator(definition):
            factory = None  # a generator runs as written: its values cannot become one graph
        else:
            ast.increment_lineno(tree, first - 1)
            lowering = Lowering(lambda line: site_of(filename, line))
            for function in [n for n in ast.walk(definition) if isinstance(n, ast.FunctionDef)]:
                function.body = lowering.function_body(function.body, function.end_lineno)
            _evaluated_once(definition)
            _Rewriter(filename).visit(definition)
            params = [_HELPER] + list(code.co_freevars)
            wrapper = _function_def(f"{_HELPER}factory", _args(params),
                                    [definition, ast.Return(ast.Name(definition.name, ast.Load()))])
            module = ast.fix_missing_locations(ast.Module([wrapper], []))
            namespace = {}
            exec(compile(module, filename, "exec"), namespace)  # noqa: S102 - the user's own code, rewritten
            factory = types.FunctionType(namespace[f"{_HELPER}factory"].__code__, fn.__globals__)
    _CACHE[code] = factory
    return factory


def _lambda_as_def(tree, code):
    """`lambda x: body` (the one lambda of these arguments in its source lines) as `def _tfl_jit_lambda(x): return
    body`; None if there is not exactly one."""
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
             and [a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] == names]
    if len(found) != 1:
        return None
    definition = _function_def(f"{_HELPER}lambda", found[0].args, [ast.Return(found[0].body, lineno=found[0].lineno)])
    tree.body = [ast.copy_location(definition, found[0])]
    return definition


def _evaluated_once(definition):
    """Drop what Python already evaluated when it defined the function (decorators, defaults, annotations): in the
    factory they would run again, where an enclosing function's names do not exist."""
    definition.decorator_list, definition.returns = [], None
    arguments = definition.args
    arguments.defaults = [ast.Constant(None) for _ in arguments.defaults]
    arguments.kw_defaults = [None if d is None else ast.Constant(None) for d in arguments.kw_defaults]
    for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg]:
        if arg is not None:
            arg.annotation = None


def _without_source(fn):
    """A function whose source Python cannot find runs as written; a tensor `if` in it then says why it fails."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as error:
            *_, user, last = traceback.extract_tb(error.__traceback__)
            if last.name not in ("__bool__", "__iter__") or not last.filename.startswith(_PACKAGE_DIR):
                raise
            raise ConversionError(
                f"{site_of(user.filename, user.lineno)}: {fn.__qualname__} has no source code that "
                "to_static can read (it was defined with `python -c`, in the interactive interpreter or by exec, its "
                "file changed since, or it is a lambda sharing its lines with another of the same arguments), so its "
                "Python `if`/`while`/"
                "`for` on tensors could not be converted. Define it in a file or a notebook cell, or write tfl.cond "
                "/ tfl.while_loop") from error
    return run


def convert_function(fn):
    """The converted version of a Python function (cached per code object); `fn` itself if it has no source."""
    if not isinstance(fn, types.FunctionType) or _HELPER in fn.__code__.co_freevars:
        return fn  # a function defined inside converted code is converted already
    factory = _factory(fn)
    if factory is _NO_SOURCE:
        return _without_source(fn)
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
