"""`return`, `break` and `continue` become flags, as in AutoGraph and Paddle, before if/while/for are converted.

A tensor condition cannot jump: both branches of a tfl.cond run as graphs, and a while_loop
runs its whole body. So each escape sets a flag, the rest of its block is guarded by an
`if` on that flag, and loops test it:

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

`return v` becomes `_tfl_retval = v; _tfl_returned = True`, and the function ends with
`return _tfl_retval`. With Python conditions the flags are Python bools and the code does
what the original did; with tensor conditions they are tensors, the guards become conds and
the flags loop variables. A loop's `else:` runs when its break flag is not set. Only blocks
that contain an escape are rewritten; nested functions are left alone.
"""
import ast

from .errors import ConversionError
from .values import RETURN_VALUE

RETURNED = "_tfl_returned"
HELPER = "_tfl_jit_"


def _name(name, store=False):
    return ast.Name(name, ast.Store() if store else ast.Load())


def _assign(name, value):
    return ast.Assign([_name(name, store=True)], value)


def _not_any(flags):
    flags = sorted(flags)
    test = _name(flags[0]) if len(flags) == 1 else ast.BoolOp(ast.Or(), [_name(f) for f in flags])
    return ast.UnaryOp(ast.Not(), test)


def _helper(name, *args):
    return ast.Call(ast.Attribute(_name(HELPER), name, ast.Load()), list(args), [])


class _Finder(ast.NodeVisitor):
    """Which escapes a block holds: its own loop's break/continue (not those of nested loops), returns anywhere."""

    def __init__(self):
        self.found, self.loops = set(), 0

    def visit_Return(self, node):
        self.found.add("return")

    def visit_Break(self, node):
        if self.loops == 0:
            self.found.add("break")

    def visit_Continue(self, node):
        if self.loops == 0:
            self.found.add("continue")

    def visit_While(self, node):
        self.loops += 1
        for statement in node.body:
            self.visit(statement)
        self.loops -= 1
        for statement in node.orelse:  # a loop's else belongs to the enclosing block
            self.visit(statement)

    visit_For = visit_While

    def visit_FunctionDef(self, node):
        pass

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef


def escapes_in(statements):
    """{"return", "break", "continue"} ∩ what the statements may do."""
    finder = _Finder()
    for statement in statements:
        finder.visit(statement)
    return finder.found


def always_returns(statements):
    """True when every path through the statements ends in a return or a raise (so the function cannot fall off)."""
    for statement in statements:
        if isinstance(statement, (ast.Return, ast.Raise)):
            return True
        if isinstance(statement, ast.If) and always_returns(statement.body) and always_returns(statement.orelse):
            return True
    return False


class Lowering:
    """Rewrites a function body so that no return/break/continue sits inside a compound statement."""

    def __init__(self, site_of):
        self.site_of, self.count = site_of, 0

    def function_body(self, body, end_line):
        """The lowered body; a nested `return` makes it return `_tfl_retval` at the end."""
        nested = any(not isinstance(s, ast.Return) and "return" in escapes_in([s]) for s in body)
        if not nested:
            return self.block(body, {})
        flags = {"return": RETURNED}
        lowered = [_assign(RETURNED, ast.Constant(False)),
                   _assign(RETURN_VALUE, _helper("Undefined", ast.Constant(RETURN_VALUE)))]
        lowered += self.block(body, flags)
        if not always_returns(body):  # falling off the end returns None, as in Python
            lowered.append(ast.If(_not_any({RETURNED}), [
                _assign(RETURN_VALUE, _helper("returned", ast.Constant(None), ast.Constant(self.site_of(end_line)))),
                _assign(RETURNED, ast.Constant(True))], [], lineno=end_line))
        lowered.append(ast.Return(_helper("return_value", _name(RETURN_VALUE))))
        return lowered

    def block(self, statements, flags):
        """Lower a block: each escape sets its flag, and whatever follows a statement that may set one is guarded."""
        out = []
        for index, statement in enumerate(statements):
            lowered, may_set = self.statement(statement, flags)
            out.extend(lowered)
            if may_set:
                rest = self.block(statements[index + 1:], flags)
                if rest:
                    guard = ast.If(_not_any(may_set), rest, [], lineno=statement.lineno)
                    # read by convert.py: after a break or return the guard is skipped only in the iteration that
                    # ends a loop, so a list may collect what it appends there
                    guard.escape = "stops" if all(f == RETURNED or f.startswith("_tfl_break_") for f in may_set) \
                        else "continues"
                    out.append(guard)
                return out
        return out

    def statement(self, node, flags):
        """(statements replacing `node`, the flags they may set)."""
        if isinstance(node, ast.Return) and "return" in flags:
            value = node.value if node.value is not None else ast.Constant(None)
            site = ast.Constant(self.site_of(node.lineno))
            return [_assign(RETURN_VALUE, _helper("returned", value, site)), _assign(RETURNED, ast.Constant(True))], \
                {RETURNED}
        if isinstance(node, ast.Break) and "break" in flags:
            return [_assign(flags["break"], ast.Constant(True))], {flags["break"]}
        if isinstance(node, ast.Continue) and "continue" in flags:
            return [_assign(flags["continue"], ast.Constant(True))], {flags["continue"]}
        if isinstance(node, ast.While) and any(isinstance(n, ast.NamedExpr) for n in ast.walk(node.test)):
            node = self.test_in_body(node)
        if isinstance(node, (ast.While, ast.For)):
            return self.loop(node, flags)
        if isinstance(node, ast.If):
            node.body, set_in_body = self.guarded(node.body, flags)
            node.orelse, set_in_else = self.guarded(node.orelse, flags)
            return [node], set_in_body | set_in_else
        if isinstance(node, (ast.With, ast.Try)):
            may_set = set()
            for field in ("body", "orelse", "finalbody"):
                if getattr(node, field, None):
                    lowered, flags_set = self.guarded(getattr(node, field), flags)
                    setattr(node, field, lowered)
                    may_set |= flags_set
            for handler in getattr(node, "handlers", []):
                handler.body, flags_set = self.guarded(handler.body, flags)
                may_set |= flags_set
            return [node], may_set
        return [node], set()

    def guarded(self, statements, flags):
        """(lowered statements, the flags they may set)."""
        found = escapes_in(statements)
        may_set = {flags[k] for k in found if k in flags}
        return self.block(statements, flags), may_set

    def test_in_body(self, node):
        """`while (v := f()) < n: body` becomes `while True: if not ((v := f()) < n): break; body`, so that `v` is
        assigned where the loop's variables are (a test is a function of its own once converted)."""
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
        if "break" in own:
            inner["break"] = f"_tfl_break_{self.count}"
            before.append(_assign(inner["break"], ast.Constant(False)))
        if "continue" in own:
            inner["continue"] = f"_tfl_continue_{self.count}"
            before.append(_assign(inner["continue"], ast.Constant(False)))
        body = self.block(node.body, inner)
        if "continue" in inner:
            body.insert(0, _assign(inner["continue"], ast.Constant(False)))
        node.body = body or [ast.Pass()]
        stops = {inner[k] for k in ("break",) if k in inner} | ({RETURNED} if "return" in own and "return" in flags
                                                                 else set())
        if stops:
            if isinstance(node, ast.While):
                node.test = ast.BoolOp(ast.And(), [_not_any(stops), node.test])
            else:
                node.extra_test = _not_any(stops)  # read by the if/while/for conversion (convert.py)
        returns = {RETURNED} if "return" in own and "return" in flags else set()
        after, set_in_else = [], set()
        if node.orelse:  # runs when the loop ends without break (or return)
            orelse, set_in_else = self.guarded(node.orelse, flags)
            skip = returns | ({inner["break"]} if "break" in inner else set())
            after = [ast.If(_not_any(skip), orelse, [], lineno=node.lineno)] if skip else orelse
            node.orelse = []
        may_set = returns | set_in_else
        return before + [node] + after, may_set
