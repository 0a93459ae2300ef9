"""AST conversion (as Paddle's dynamic-to-static and TF's AutoGraph): `if`/`while`/`for` become runtime dispatch.

    if x_sum > 0:                 def _true(y): y = x * 2; return (y,)
        y = x * 2          →      def _false(y): y = -x; return (y,)
    else:                         (y,) = _jit.convert_ifelse(x_sum > 0, _true, _false, (_jit.ld(lambda: y),), ...)
        y = -x

After escapes.py made `return`/`break`/`continue` flags, the helpers keep Python's semantics for Python values and build
graph ops for graph nodes; comparisons, `and`/`or`/`not`, builtins and `.numpy()` go through helpers too, so a symbolic
value never silently becomes a Python constant. Called user functions are converted too, once per code object.
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
from ..eager.inplace import ARITHMETIC
from ..nodes import Constant, Node, as_node
from ..nodes.node import default_dtype_for, source_line
from ..ops import elementwise_ops, identity
from ..ops.elementwise_ops import cast, equal, where
# helpers the converted code calls (as _tfl_jit_.<name>)
from .dispatch import convert_for, convert_ifelse, convert_ifexp, convert_while  # noqa: F401
from .values import Undefined, as_bool, return_value, returned, symbolic  # noqa: F401
from ..errors import ConversionError
from .escapes import HELPER, Lowering, ast_name, helper_call, walk_here
from .inplace_tracing import assigns_into, inplace  # noqa: F401
from .tensor_lists import convert_subscript, tensor_aware  # noqa: F401 - convert_subscript for the converted code

_CACHE = {}          # code object -> factory of the converted function (or None: leave it unconverted)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NO_SOURCE = "no source"
_COMPARE = {"Gt": (operator.gt, "greater"), "GtE": (operator.ge, "greater_equal"), "Lt": (operator.lt, "less"),
            "LtE": (operator.le, "less_equal"), "Eq": (operator.eq, "equal"), "NotEq": (operator.ne, "not_equal")}


def ld(name, getter):
    """The current value of a local variable, or an Undefined marker if it has none yet."""
    try:
        return getter()
    except NameError:
        return Undefined(name)


def _user_code(fn):
    return not fn.__code__.co_filename.startswith(_PACKAGE_DIR)


def convert_call(fn, site):
    """The function converted code calls for `fn`: builtins needing a value raise, user functions are converted."""
    if fn is builtins.bool or fn is builtins.int or fn is builtins.float:
        return functools.partial(_checked_builtin, fn, site)
    replacement = _graph_tensor if fn is Tensor or fn is tensor else tensor_aware(fn)
    if replacement is not None:
        return replacement
    if isinstance(fn, types.FunctionType) and _user_code(fn):
        return convert_function(fn)
    from ..nn.layer import Layer
    if isinstance(fn, Layer) and _user_code(type(fn).forward):
        return functools.partial(_call_layer, fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) and _user_code(fn.__func__):
        return types.MethodType(convert_function(fn.__func__), fn.__self__)
    return fn


def _graph_tensor(data, requires_grad=False, dtype=None):
    """tfl.tensor(...) in converted code: a graph constant (as Paddle's to_tensor), which branches and loops carry."""
    if isinstance(data, Node):
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
    """`x.numpy()`, `x.item()`, `x.tolist()`: a graph node's value is not known while tracing."""
    if isinstance(obj, Node):
        raise symbolic(site, f".{attr}()")
    return getattr(obj, attr)


def convert_chain(site, left, *steps):
    """`a < b < c`: each operand evaluated once, in order, short-circuit on Python values; ops on graph nodes."""
    result = None
    for op, right_fn in steps:
        right = right_fn()
        python, graph = _COMPARE[op]
        graph_operands = isinstance(left, Node) or isinstance(right, Node)
        part = getattr(elementwise_ops, graph)(left, right) if graph_operands else python(left, right)
        result = part if result is None else convert_boolop(True, result, lambda: part, site)
        if not isinstance(result, Node) and not result:
            return result
        left = right
    return result


def convert_boolop(is_and, left, right_fn, site):
    """`a and b` / `a or b`: Python's short-circuit for Python values; elementwise logic for graph nodes."""
    if not isinstance(left, Node):
        return (left and right_fn()) if is_and else (left or right_fn())
    right = right_fn()
    if not isinstance(right, Node) and bool(right) != is_and:
        # decided whatever the tensor holds: `x > 1 or a is None or a > 1` never reaches `a > 1`, as in Python
        return right
    right = as_bool(right, site) if isinstance(right, Node) else as_node(np.asarray(bool(right)))
    return where(as_bool(left, site), right, False) if is_and else where(as_bool(left, site), True, right)


def convert_not(value, site):
    """`not a`: Python's for Python values; logical not for graph nodes."""
    return equal(as_bool(value, site), False) if isinstance(value, Node) else not value


def convert_assert(test, message_fn, site):
    """`assert test, message`: Python's for a Python value; a tensor's value is not known while tracing."""
    if isinstance(test, Node):
        raise ConversionError(f"{site}: `assert` on a tensor inside to_static: while tracing, tensors have no values "
                              "yet, and a graph cannot stop on one. Assert on the result after the call, or return "
                              "the condition")
    if not test:
        message = message_fn()
        raise AssertionError(*([] if message is None else [message]))


# ---------------------------------------------------------------- the AST rewrite
def _assigned_names(statements, local_names=()):
    """Names a block assigns, then the `local_names` lists it appends to (others change for whoever holds them)."""
    names, grown = [], []
    for node in (n for statement in statements for n in walk_here(statement, root=False)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
            names.append(node.name)
        elif isinstance(node, ast.Attribute) and node.attr in ("append", "extend", "insert") and \
                isinstance(node.value, ast.Name) and node.value.id in local_names:
            grown.append(node.value.id)
    return list(dict.fromkeys(n for n in names + grown if n and not n.startswith(HELPER)))


def _local_names(definition):
    """A function's local variables: its parameters and what its body assigns, less `global`/`nonlocal` names."""
    args = definition.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a]
    declared = {n for node in walk_here(definition) if isinstance(node, (ast.Global, ast.Nonlocal))
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


def _function_def(function_name, args, body):
    extra = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
    return ast.FunctionDef(name=function_name, args=args, body=body, decorator_list=[], returns=None, **extra)


def _thunk(expression):
    """`lambda: expression`, evaluated by the helper only if and when needed."""
    return ast.Lambda(_args([]), expression)


def _returning(names):
    return ast.Return(ast.Tuple([ast_name(n) for n in names], ast.Load()))


class _Rewriter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename, self.count, self.line, self.locals = filename, 0, 0, set()

    def visit(self, node):
        """Children first, then the node's rewrite_<type>; a function and `a += v` visit their children themselves."""
        if isinstance(node, ast.stmt):
            self.line = getattr(node, "lineno", self.line)
        rewrite = getattr(self, f"rewrite_{type(node).__name__}", None)
        if not isinstance(node, (ast.FunctionDef, ast.AugAssign)):
            self.generic_visit(node)
        return node if rewrite is None else rewrite(node)

    def site(self, node):
        """"file:line" of a node (an expression the lowering made has its statement's line)."""
        return ast.Constant(source_line(self.filename, getattr(node, "lineno", self.line)))

    def rewrite_FunctionDef(self, node):
        outer, self.locals = self.locals, _local_names(node)
        self.generic_visit(node)
        self.locals = outer
        return node

    # -- if / while / for ---------------------------------------------------------------
    def dispatch(self, helper, node, first, names, *functions, last=()):
        """The functions ((label, parameters, body) or None), then `(names...) = _tfl_jit_.<helper>(*first,
        *functions, (values...), ("names"...), "file:line", *last)`."""
        definitions = [_function_def(f"{HELPER}{f[0]}_{self.count}", _args(f[1]), f[2]) for f in functions if f]
        references = iter(ast_name(d.name) for d in definitions)
        values = ast.Tuple([helper_call("ld", ast.Constant(n), _thunk(ast_name(n))) for n in names], ast.Load())
        call = helper_call(helper, *first, *[next(references) if f else ast.Constant(None) for f in functions], values,
                           ast.Tuple([ast.Constant(n) for n in names], ast.Load()), self.site(node), *last)
        target = ast.Tuple([ast_name(n, store=True) for n in names], ast.Store())
        return definitions + [ast.Assign([target], call, lineno=node.lineno)]

    def rewrite_If(self, node):
        self.count += 1
        names = _assigned_names(node.body + node.orelse, self.locals)
        escape = ast.Constant(getattr(node, "escape", None))  # guarding what follows an escape (escapes.py)
        true, false = node.body + [_returning(names)], node.orelse + [_returning(names)]
        return self.dispatch("convert_ifelse", node, [node.test], names, ("true", names, true), ("false", names, false),
                             last=[escape])

    def rewrite_While(self, node):
        self.count += 1
        names = _assigned_names(node.body, self.locals)
        return self.dispatch("convert_while", node, [], names, ("test", names, [ast.Return(node.test)]),
                             ("body", names, node.body + [_returning(names)]))

    def rewrite_For(self, node):
        self.count += 1
        item = f"{HELPER}item_{self.count}"
        bind = ast.Assign([node.target], ast_name(item), lineno=node.lineno)
        names = _assigned_names([bind] + node.body, self.locals)
        extra = getattr(node, "extra_test", None)  # the break / return flags (escapes.py)
        test = ("for_test", names, [ast.Return(self.visit(extra))]) if extra is not None else None
        return self.dispatch("convert_for", node, [node.iter], names, test,
                             ("for_body", [item] + names, [bind] + node.body + [_returning(names)]))

    # -- assignments ------------------------------------------------------------------
    def rewrite_AugAssign(self, node):
        """`a += v` becomes `a = _tfl_jit_.inplace(a, "Add", v, ...)`: a tensor changes in place (inplace_tracing)."""
        target = node.target
        if type(node.op).__name__ not in ARITHMETIC or not (isinstance(target, ast.Name) or _simple(target)):
            self.generic_visit(node)
            return node
        load = copy.deepcopy(target)
        load.ctx = ast.Load()
        call = helper_call("inplace", load, ast.Constant(type(node.op).__name__), node.value, self.site(node),
                           ast.Constant(ast.unparse(target)))
        return self.visit(ast.Assign([target], call, lineno=node.lineno))

    def rewrite_Assign(self, node):
        """An attribute or item assigned is checked first (refused inside a tensor branch or loop)."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        checks = [ast.Expr(helper_call("assigns_into", copy.deepcopy(t.value), self.site(node),
                                       ast.Constant(ast.unparse(t)), ast.Constant(isinstance(t, ast.Subscript))),
                           lineno=node.lineno)
                  for target in targets for t in walk_here(target) if _simple(t) and isinstance(t.ctx, ast.Store)]
        return checks + [node]

    rewrite_AnnAssign = rewrite_Assign

    # -- expressions ----------------------------------------------------------------
    def rewrite_Compare(self, node):
        if any(type(op).__name__ not in _COMPARE for op in node.ops):
            return node  # `is`, `in`: Python's meaning
        steps = [ast.Tuple([ast.Constant(type(op).__name__), _thunk(right)], ast.Load())
                 for op, right in zip(node.ops, node.comparators)]
        return helper_call("convert_chain", self.site(node), node.left, *steps)

    def rewrite_BoolOp(self, node):
        result = node.values[0]
        for value in node.values[1:]:
            result = helper_call("convert_boolop", ast.Constant(isinstance(node.op, ast.And)), result, _thunk(value),
                                 self.site(node))
        return result

    def rewrite_UnaryOp(self, node):
        return helper_call("convert_not", node.operand, self.site(node)) if isinstance(node.op, ast.Not) else node

    def rewrite_IfExp(self, node):
        return helper_call("convert_ifexp", node.test, _thunk(node.body), _thunk(node.orelse), self.site(node))

    def rewrite_Assert(self, node):
        message = node.msg if node.msg is not None else ast.Constant(None)
        return ast.Expr(helper_call("convert_assert", node.test, _thunk(message), self.site(node)), lineno=node.lineno)

    def rewrite_Call(self, node):
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("numpy", "item", "tolist"):
            node.func = helper_call("convert_attribute_call", node.func.value, ast.Constant(node.func.attr),
                                    self.site(node))
        elif not (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                  and node.func.value.id == HELPER):
            node.func = helper_call("convert_call", node.func, self.site(node))
        return node

    def rewrite_Subscript(self, node):
        if not isinstance(node.ctx, ast.Load):
            return node
        return helper_call("convert_subscript", node.value, node.slice, self.site(node))


def _factory(fn):
    """The converted `fn`'s factory (of the helpers and closure values), compiled once; _NO_SOURCE or None."""
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
        if not isinstance(definition, ast.FunctionDef) or definition.name not in (fn.__name__, f"{HELPER}lambda"):
            pass  # not its source: its file changed, or several lambdas of its arguments share its lines
        elif any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for s in definition.body
                 for n in walk_here(s, root=False)):
            factory = None  # a generator runs as written: its values cannot become one graph
        else:
            ast.increment_lineno(tree, first - 1)
            lowering = Lowering(lambda line: source_line(filename, line))
            for function in [n for n in ast.walk(definition) if isinstance(n, ast.FunctionDef)]:
                function.body = lowering.function_body(function.body, function.end_lineno)
            _evaluated_once(definition)
            _Rewriter(filename).visit(definition)
            wrapper = _function_def(f"{HELPER}factory", _args([HELPER] + list(code.co_freevars)),
                                    [definition, ast.Return(ast_name(definition.name))])
            module, namespace = ast.fix_missing_locations(ast.Module([wrapper], [])), {}
            exec(compile(module, filename, "exec"), namespace)  # noqa: S102 - the user's own code, rewritten
            factory = types.FunctionType(namespace[f"{HELPER}factory"].__code__, fn.__globals__)
    _CACHE[code] = factory
    return factory


def _lambda_as_def(tree, code):
    """The one lambda of these arguments in its source lines as `def _tfl_jit_lambda(x): return ...` (or None)."""
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
             and [a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs] == names]
    if len(found) != 1:
        return None
    definition = _function_def(f"{HELPER}lambda", found[0].args, [ast.Return(found[0].body, lineno=found[0].lineno)])
    tree.body = [ast.copy_location(definition, found[0])]
    return definition


def _evaluated_once(definition):
    """Drop decorators, defaults and annotations: Python evaluated them already, and the factory lacks their names."""
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
                f"{source_line(user.filename, user.lineno)}: {fn.__qualname__} has no source code that "
                "to_static can read (it was defined with `python -c`, in the interactive interpreter or by exec, its "
                "file changed since, or it is a lambda sharing its lines with another of the same arguments), so its "
                "Python `if`/`while`/`for` on tensors could not be converted. Define it in a file or a notebook cell, "
                "or write tfl.cond / tfl.while_loop") from error
    return run


def convert_function(fn):
    """The converted version of a Python function (cached per code object); `fn` itself if it has no source."""
    if not isinstance(fn, types.FunctionType) or HELPER in fn.__code__.co_freevars:
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
