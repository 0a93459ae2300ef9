"""`return`, `break` and `continue` become flags, as in AutoGraph and Paddle, before if/while/for are converted.

A tensor condition cannot jump: both branches of a tfl.cond run as graphs, and a while_loop runs its whole body. So each
escape sets a flag, the rest of its block is guarded by an `if` on that flag, and loops test it:

    while i < n:                              _tfl_break_1 = False
        if x[i] > 0:                          while not _tfl_break_1 and i < n:
            break                 ──▶             _tfl_continue_1 = False
        if x[i] < -1:                             if x[i] > 0:
            continue                                  _tfl_break_1 = True
        total = total + x[i]                      if not _tfl_break_1:
        i = i + 1                                     if x[i] < -1:
                                                          _tfl_continue_1 = True
                                                      if not _tfl_continue_1:
                                                          total = total + x[i]
                                                          i = i + 1

`return v` sets `_tfl_retval` and `_tfl_returned`, and the function ends with `return _tfl_retval`. With tensor
conditions the flags are tensors, the guards conds and the flags loop variables; with Python ones, Python bools. Also
here: the AST builders convert.py shares.
"""
import ast

from ..errors import ConversionError
from .values import RETURN_VALUE

RETURNED = "_tfl_returned"
HELPER = "_tfl_jit_"  # the name converted code calls its helpers through (the convert module)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
          ast.GeneratorExp)


def ast_name(identifier, store=False):
    """An ast.Name loading (or storing) `identifier`."""
    return ast.Name(identifier, ast.Store() if store else ast.Load())


def assign(identifier, value):
    """`identifier = value`."""
    return ast.Assign([ast_name(identifier, store=True)], value)


def helper_call(helper, *args):
    """`_tfl_jit_.<helper>(*args)`."""
    return ast.Call(ast.Attribute(ast_name(HELPER), helper, ast.Load()), list(args), [])


def walk_here(node, root=True):
    """ast.walk, not into the nested scopes below `node` (functions, classes, lambdas, comprehensions)."""
    yield node
    if root or not isinstance(node, SCOPES):
        for child in ast.iter_child_nodes(node):
            yield from walk_here(child, root=False)


def _not_any(flags):
    flags = sorted(flags)
    test = ast_name(flags[0]) if len(flags) == 1 else ast.BoolOp(ast.Or(), [ast_name(f) for f in flags])
    return ast.UnaryOp(ast.Not(), test)


def escapes_in(statements):
    """{"return", "break", "continue"} ∩ what the statements may do (a nested loop's own break/continue left out)."""
    found = set()
    for node in statements:
        if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
            found.add(type(node).__name__.lower())
        elif isinstance(node, (ast.While, ast.For)):  # a loop's else belongs to the enclosing block
            found |= escapes_in(node.body) & {"return"} | escapes_in(node.orelse)
        elif not isinstance(node, SCOPES):
            found |= escapes_in(ast.iter_child_nodes(node))
    return found


def always_returns(statements):
    """True when every path through the statements ends in a return or a raise (so the function cannot fall off)."""
    return any(isinstance(s, (ast.Return, ast.Raise)) or (isinstance(s, ast.If) and always_returns(s.body)
                                                          and always_returns(s.orelse)) for s in statements)


class Lowering:
    """Rewrites a function body so that no return/break/continue sits inside a compound statement."""

    def __init__(self, site_of):
        self.site_of, self.count = site_of, 0

    def function_body(self, body, end_line):
        """The lowered body; a nested `return` makes it return `_tfl_retval` at the end."""
        if not any(not isinstance(s, ast.Return) and "return" in escapes_in([s]) for s in body):
            return self.block(body, {})[0]
        lowered = [assign(RETURNED, ast.Constant(False)),
                   assign(RETURN_VALUE, helper_call("Undefined", ast.Constant(RETURN_VALUE)))]
        lowered += self.block(body, {"return": RETURNED})[0]
        if not always_returns(body):  # falling off the end returns None, as in Python
            lowered.append(ast.If(_not_any({RETURNED}), self.returning(None, end_line), [], lineno=end_line))
        return lowered + [ast.Return(helper_call("return_value", ast_name(RETURN_VALUE)))]

    def returning(self, value, line):
        """`_tfl_retval = _tfl_jit_.returned(value, "file:line"); _tfl_returned = True`."""
        value = ast.Constant(None) if value is None else value
        returned = helper_call("returned", value, ast.Constant(self.site_of(line)))
        return [assign(RETURN_VALUE, returned), assign(RETURNED, ast.Constant(True))]

    def block(self, statements, flags):
        """(the lowered block, the flags it may set): each escape sets its flag, and what follows it is guarded."""
        out, all_set = [], set()
        for index, statement in enumerate(statements):
            lowered, may_set = self.statement(statement, flags)
            out.extend(lowered)
            all_set |= may_set
            if may_set:
                rest, set_later = self.block(statements[index + 1:], flags)
                if rest:
                    guard = ast.If(_not_any(may_set), rest, [], lineno=statement.lineno)
                    # read by convert.py: after a break or return the guard is skipped only in the iteration that
                    # ends a loop, so a list may collect what it appends there
                    guard.escape = "stops" if all(f == RETURNED or f.startswith("_tfl_break_") for f in may_set) \
                        else "continues"
                    out.append(guard)
                return out, all_set | set_later
        return out, all_set

    def statement(self, node, flags):
        """(statements replacing `node`, the flags they may set)."""
        if isinstance(node, ast.Return) and "return" in flags:
            return self.returning(node.value, node.lineno), {RETURNED}
        kind = type(node).__name__.lower()
        if isinstance(node, (ast.Break, ast.Continue)) and kind in flags:
            return [assign(flags[kind], ast.Constant(True))], {flags[kind]}
        if isinstance(node, ast.While) and any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            node = self.test_in_body(node)
        if isinstance(node, (ast.While, ast.For)):
            return self.loop(node, flags)
        may_set = set()
        if isinstance(node, (ast.If, ast.With, ast.Try)):
            for part in [node] + getattr(node, "handlers", []):
                for field in ("body", "orelse", "finalbody"):
                    if getattr(part, field, None):
                        lowered, flags_set = self.block(getattr(part, field), flags)
                        setattr(part, field, lowered)
                        may_set |= flags_set
        return [node], may_set

    def test_in_body(self, node):
        """`while (v := f()) < n: body` as `while True: if not ((v := f()) < n): break; body` (v a loop variable)."""
        if node.orelse:
            raise ConversionError(f"{self.site_of(node.lineno)}: `:=` in the test of a `while` that has an `else:`; "
                                  "assign the value before the loop and again at the end of its body")
        stop = ast.If(ast.UnaryOp(ast.Not(), node.test), [ast.Break(lineno=node.lineno)], [], lineno=node.lineno)
        return ast.While(ast.Constant(True), [stop] + node.body, [], lineno=node.lineno)

    def loop(self, node, flags):
        """A loop's own break/continue become its flags; a return inside it stops it too."""
        own = escapes_in(node.body)
        self.count += 1
        inner = {k: v for k, v in flags.items() if k == "return"}
        before = []
        for kind in ("break", "continue"):
            if kind in own:
                inner[kind] = f"_tfl_{kind}_{self.count}"
                before.append(assign(inner[kind], ast.Constant(False)))
        body = self.block(node.body, inner)[0]
        if "continue" in inner:
            body.insert(0, assign(inner["continue"], ast.Constant(False)))
        node.body = body or [ast.Pass()]
        returns = {RETURNED} if "return" in own and "return" in flags else set()
        stops = returns | ({inner["break"]} if "break" in inner else set())
        if stops and isinstance(node, ast.While):
            node.test = ast.BoolOp(ast.And(), [_not_any(stops), node.test])
        elif stops:
            node.extra_test = _not_any(stops)  # read by the if/while/for conversion (convert.py)
        after, set_in_else = [], set()
        if node.orelse:  # runs when the loop ends without break (or return)
            orelse, set_in_else = self.block(node.orelse, flags)
            after = [ast.If(_not_any(stops), orelse, [], lineno=node.lineno)] if stops else orelse
            node.orelse = []
        return before + [node] + after, returns | set_in_else
