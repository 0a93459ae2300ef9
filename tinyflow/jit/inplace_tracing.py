"""In-place updates under to_static: `a += v` changes the tensor object `a` holds, for every name holding it.

As PyTorch's functionalization does, `a += v` builds `a + v` (in a's dtype and shape) and records it as the newest value
of a's object, which every later read through any name, list or attribute sees (nodes.node.Newest); tensor `if`s and
loops merge what their bodies changed. What tracing cannot know is *spoiled*, a ConversionError if read again.
Arguments, Variables and eager Tensors from outside never change in place (the caller's tensors would not).
"""
import contextlib
import operator

from ..eager.inplace import ARITHMETIC
from ..graph import get_default_graph
from ..nodes import Node, Variable
from ..nodes.node import Newest, is_eager
from ..ops.elementwise_ops import cast
from ..shapes import shapes_compatible
from ..errors import ConversionError

_records = []  # the running trace's in-place changes: the function's record, then one per tensor branch / loop body


class _Record:
    """The newest value (or a spoiling ConversionError) of each object a trace, branch or loop body changed."""

    def __init__(self, where, external=()):
        self.where, self.external, self.newest = where, set(external), {}
        self.start = len(get_default_graph().nodes)

    def changed_outside(self):
        """{object: newest value} of the objects from before this record that it changed."""
        return {obj: value for obj, value in self.newest.items()
                if not (obj.graph is get_default_graph() and obj.creation_index >= self.start)}


class _Either(tuple):
    """The objects a value may belong to (a tensor `if` bound its name to one or another)."""


def _either(*objects):
    return _Either({m: None for o in objects for m in (o if isinstance(o, _Either) else [o])})


def object_of(node):
    """The tensor object `node` is a value of (itself, unless an in-place op or a cond made it)."""
    return getattr(node, "inplace_object", node)


def newest(node):
    """The newest value of the object `node` is a value of."""
    obj = object_of(node)
    for record_ in reversed(_records if not isinstance(obj, _Either) else ()):
        value = record_.newest.get(obj)
        if isinstance(value, ConversionError):
            raise value
        if value is not None:
            return value
    return node


def current(value):
    """`value` with its tensors at their newest values (tuples rebuilt, lists updated in place)."""
    if isinstance(value, Node):
        return newest(value)
    if isinstance(value, list):
        value[:] = [current(v) for v in value]
    elif type(value) is tuple:
        return tuple(current(v) for v in value)
    return value


@contextlib.contextmanager
def tracing(external=()):
    """Record in-place changes while a function is traced (its arguments, `external`, may not change)."""
    if _records:  # a to_static function called inside another's trace
        yield
        return
    _records.append(_Record("the function", external))
    Newest.of = newest
    try:
        yield
    finally:
        _records.clear()
        Newest.of = None


@contextlib.contextmanager
def region(where):
    """A tensor branch or loop body being traced: a record of its own."""
    record_ = _Record(where)
    _records.extend([record_] if _records else [])
    try:
        yield record_
    finally:
        if _records and _records[-1] is record_:
            _records.pop()


def record(obj, value):
    """Make `value` the newest value of `obj`."""
    if _records:
        value.inplace_object = obj
        _records[-1].newest[obj] = value


def _spoil(obj, site, text, why):
    for member in _either(obj):
        _records[-1].newest[member] = ConversionError(
            f"{site}: `{text}` changes a tensor in place {why}, and that tensor is read again later (through another "
            f"name, list or attribute): its value there is not known while tracing. Write `{text} = {text} ...` "
            "to make a new tensor")


def joined(output, a, b):
    """A cond's output joining `a` and `b`: one object if they are one, else either of them."""
    output.inplace_object = object_of(a) if object_of(a) is object_of(b) else _either(object_of(a), object_of(b))


def inplace(target, op, operand, site, text):
    """`target op= operand` for + - * / in converted code: in place for a tensor, Python's meaning otherwise."""
    _, symbol, compute = ARITHMETIC[op]
    if not _records or not (isinstance(target, Node) or is_eager(target)):
        return getattr(operator, f"i{compute.__name__}")(target, operand)  # operator.iadd: a list grows in place
    if not isinstance(target, Node):
        raise ConversionError(f"{site}: `{text} {symbol}= ...` changes in place an eager Tensor from outside the "
                              "function: to_static would do it once, while tracing, not on every call. Pass it as an "
                              "argument and return the new value, or make it a tfl.Variable and use tfl.assign")
    target = newest(target)
    obj = object_of(target)
    if any(isinstance(m, Variable) or m in _records[0].external for m in _either(obj)):
        what = "a Variable: use tfl.assign_add / assign_sub (it changes the Variable's state at every call)" if \
            isinstance(obj, Variable) else "an argument of the function: the caller's tensor would not change " \
            f"(to_static feeds arguments by value); write `{text} = {text} {symbol} ...`"
        raise ConversionError(f"{site}: `{text} {symbol}= ...` changes in place {what}")
    value = compute(target, operand)
    if value.dtype != target.dtype:  # an in-place op keeps the tensor's dtype
        value = cast(value, target.dtype)
    if not shapes_compatible(value.shape, target.shape):
        raise ConversionError(f"{site}: `{text} {symbol}= ...` cannot change a tensor of shape {target.shape} into "
                              f"a result of shape {value.shape}: an in-place op keeps the tensor's shape")
    if isinstance(obj, _Either):  # which tensor changes depends on a tensor condition
        _spoil(obj, site, text, "after an `if` on a tensor that bound it to one tensor or another")
        obj = value
    record(obj, value)
    return value


def assigns_into(obj, site, text, item=False):
    """Before `obj.attr = v` / `obj[k] = v`: refused into a tensor, and inside a tensor branch or loop."""
    if item and (isinstance(obj, Node) or is_eager(obj) and _records):
        raise ConversionError(f"{site}: `{text} = ...` assigns into a tensor; inside to_static build a new one "
                              "(tfl.where(mask, value, x), tfl.concat) instead")
    for record_ in _records[1:]:
        raise ConversionError(f"{site}: `{text} = ...` inside {record_.where}, which is traced once, as a graph (and "
                              "runs any number of times, maybe none, when the program runs), so Python cannot change "
                              "an object there. Assign a variable inside, and the attribute or item after it")


def loop_identities(record_, placeholders, starts, results, site):
    """After a loop body's trace: per carried value, (changed in place, kept its object, the object it started as)."""
    changed, placeholders = record_.changed_outside(), list(placeholders)
    if set(changed) - set(placeholders):
        raise ConversionError(f"{site}: a loop over a tensor changes in place a tensor from before the loop through "
                              "a name that is not one of its variables; a loop carries variables, not objects: assign "
                              "it to a variable (`b = b + ...`) inside the loop")
    kept = [(p in changed, object_of(r) is p, object_of(s)) for p, s, r in zip(placeholders, starts, results)]
    owners = [o for changed_, _, o in kept if changed_]
    if any(sum(o is owner for _, _, o in kept) > 1 for owner in owners):
        raise ConversionError(f"{site}: two variables of a loop over a tensor hold one tensor, which the loop "
                              "changes in place; copy it first (`b = a * 1`) or change it through one name")
    return kept


def after_loop(kept, finals, captures, site):
    """Give the loop's outputs the objects of the values they continue (see loop_identities)."""
    captures = set(captures)
    for (changed, preserved, obj), final in zip(kept, finals):
        if changed and not isinstance(obj, _Either) and obj in captures:
            raise ConversionError(f"{site}: a loop over a tensor changes in place a tensor that it also reads "
                                  "through another name; write the change as `a = a + ...` (a new tensor)")
        if preserved and changed and not isinstance(obj, _Either):
            record(obj, final)
        elif preserved and not changed:
            final.inplace_object = obj
        elif changed:
            _spoil(obj, site, "a loop variable", "inside a loop over a tensor that also rebinds it (its value after "
                                                 "the loop depends on the iterations that ran)")
        else:
            final.inplace_object = _either(obj, final)  # after no iteration it is still obj
