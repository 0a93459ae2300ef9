"""In-place changes under to_static: `a += v` changes the tensor object `a` holds, so every name holding it sees it.

An eager Tensor is an object whose value an in-place op replaces (tinyflow/eager/inplace.py); a graph
node is a value. Converted code keeps the objects' story, as PyTorch's functionalization does: `a += v`
builds `a + v` (in a's dtype and shape) and records it as the newest value of the object `a` holds;
an op that reads that object later, through any name, list or attribute, reads the newest value
(nodes.node.Newest). A tensor `if` or loop body keeps its own records while it traces:

* a cond gives an outer object changed in a branch one more output, its newest value;
* a loop variable changed in place keeps its object if the body never rebinds it, and that object's
  newest value after the loop is the loop's output;
* what a trace cannot know is *spoiled*, an error if read again: the object a loop variable held
  before a loop that both changes it in place and rebinds it (its value depends on the iterations),
  and the objects a name may hold after a tensor `if` that rebinds it on one side only, once that
  name is changed in place.

The function's arguments, Variables and eager Tensors from outside cannot change in place (the
caller's tensors would not): a ConversionError names the line. So do an outer tensor changed in
a loop body other than through a loop variable, and an attribute or item assigned inside a tensor
`if` or loop (whose body runs once while tracing, and any number of times when the program runs).
"""
import contextlib
import operator

from ..nodes import Node, Variable
from ..nodes.node import Newest
from ..graph import get_default_graph
from ..shapes import shapes_compatible
from .errors import ConversionError

_records = []  # what the running trace changed in place: the function's record, then one per branch / loop body
_IN_PLACE = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv}  # as Tensor's
_PYTHON = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
           "FloorDiv": operator.ifloordiv, "Mod": operator.imod, "Pow": operator.ipow, "MatMult": operator.imatmul,
           "LShift": operator.ilshift, "RShift": operator.irshift, "BitOr": operator.ior, "BitXor": operator.ixor,
           "BitAnd": operator.iand}


class _Record:
    """The newest value of each object a trace (or a branch / loop body of it) changed in place."""

    def __init__(self, where, external=()):
        self.where, self.external, self.newest = where, set(external), {}
        self.start = len(get_default_graph().nodes)

    def changed_outside(self):
        """(object, newest value) of the objects from before this record that it changed."""
        return [(obj, value) for obj, value in self.newest.items()
                if not (obj.graph is get_default_graph() and obj.creation_index >= self.start)]


class _Either(tuple):
    """The objects a value may be (a tensor `if` bound its name to one or another)."""


class _Spoiled:
    """An object whose value a trace cannot know (see the module docstring): reading it is an error."""

    def __init__(self, site, text, why):
        self.site, self.text, self.why = site, text, why

    def error(self):
        return ConversionError(f"{self.site}: `{self.text}` changes a tensor in place {self.why}, and that tensor is "
                               "read again later (through another name, list or attribute): its value there is "
                               f"not known while tracing. Write `{self.text} = {self.text} ...` to make a new tensor")


def object_of(node):
    """The tensor object `node` is a value of (itself, unless an in-place op made it)."""
    return getattr(node, "inplace_object", node)


def newest(node):
    """The newest value of the object `node` is a value of."""
    obj = object_of(node)
    if isinstance(obj, _Either):
        return node
    for record in reversed(_records):
        value = record.newest.get(obj)
        if value is not None:
            if isinstance(value, _Spoiled):
                raise value.error()
            return value
    return node


def current(value):
    """`value` with its tensors at their newest values (tuples rebuilt, lists updated in place)."""
    if isinstance(value, Node):
        return newest(value)
    if isinstance(value, list):
        value[:] = [current(v) for v in value]
    elif isinstance(value, tuple):
        return type(value)(current(v) for v in value) if type(value) is tuple else value
    return value


@contextlib.contextmanager
def tracing(external=()):
    """Record in-place changes while a function is traced (the arguments, `external`, may not change)."""
    if _records:
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
    """A branch or loop body traced as a graph: its own record (empty if nothing is traced)."""
    record = _Record(where)
    if _records:
        _records.append(record)
    try:
        yield record
    finally:
        if _records and _records[-1] is record:
            _records.pop()


def record(obj, value):
    """Make `value` the newest value of `obj` in the innermost record."""
    if _records:
        value.inplace_object = obj
        _records[-1].newest[obj] = value


def spoil(obj, site, text, why):
    if _records and isinstance(obj, Node):
        _records[-1].newest[obj] = _Spoiled(site, text, why)


def joined(output, a, b):
    """A cond's output joining `a` and `b`: one object if they are one, else either of them."""
    oa, ob = object_of(a), object_of(b)
    output.inplace_object = oa if oa is ob else _Either({o: None for o in _members(oa) + _members(ob)})


def _members(obj):
    return list(obj) if isinstance(obj, _Either) else [obj]


def inplace(target, op, operand, site, text):
    """`target op= operand` in converted code: in place for a tensor (+= -= *= /=, as eager Tensors do), Python's
    meaning for anything else."""
    if not _records or op not in _IN_PLACE:
        return _PYTHON[op](target, operand)
    if getattr(target, "graph", False) is None:  # an eager Tensor from outside the function
        raise ConversionError(f"{site}: `{text} {_SYMBOL[op]}= ...` changes in place an eager Tensor from outside the "
                              "function: to_static would do it once, while tracing, not on every call. Pass it as an "
                              "argument and return the new value, or make it a tfl.Variable and use tfl.assign")
    if not isinstance(target, Node):
        return _PYTHON[op](target, operand)
    target = newest(target)
    obj = object_of(target)
    if isinstance(obj, Variable) or obj in _records[0].external:
        what = "a Variable: use tfl.assign_add / assign_sub (it changes the Variable's state at every call)" \
            if isinstance(obj, Variable) else "an argument of the function: the caller's tensor would not change " \
            f"(to_static feeds arguments by value); write `{text} = {text} {_SYMBOL[op]} ...`"
        raise ConversionError(f"{site}: `{text} {_SYMBOL[op]}= ...` changes in place {what}")
    value = _IN_PLACE[op](target, operand)
    if value.dtype != target.dtype:  # an in-place op keeps the tensor's dtype
        from ..ops.math_ops import cast
        value = cast(value, target.dtype)
    if not shapes_compatible(value.shape, target.shape):
        raise ConversionError(f"{site}: `{text} {_SYMBOL[op]}= ...` cannot change a tensor of shape {target.shape} "
                              f"into a result of shape {value.shape}: an in-place op keeps the tensor's shape")
    if isinstance(obj, _Either):  # which tensor changes depends on a tensor condition
        for member in obj:
            spoil(member, site, text, "after an `if` on a tensor that bound it to one tensor or another")
        obj = value
    record(obj, value)
    return value


_SYMBOL = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/"}


def assigns_into(obj, site, text, item=False):
    """Before `obj.attr = v` / `obj[k] = v`: refused inside a tensor branch or loop, and into a tensor."""
    if item and (isinstance(obj, Node) or getattr(obj, "graph", False) is None and _records):
        raise ConversionError(f"{site}: `{text} = ...` assigns into a tensor; inside to_static build a new one "
                              "(tfl.where(mask, value, x), tfl.concat) instead")
    for record_ in _records[1:]:
        raise ConversionError(f"{site}: `{text} = ...` inside {record_.where}, which is traced once, as a graph (and "
                              "runs any number of times, maybe none, when the program runs), so Python cannot change "
                              "an object there. Assign a variable inside, and the attribute or item after it")


def loop_identities(record, placeholders, starts, results, site):
    """After a loop body's trace: each carried value changed in place keeps or loses its object (see the module
    docstring); returns, per carried value, the object its final value belongs to (None: a new one)."""
    changed, placeholders = dict(record.changed_outside()), list(placeholders)
    for obj in changed:
        if obj not in set(placeholders):
            raise ConversionError(f"{site}: a loop over a tensor changes in place a tensor from before the loop "
                                  "through a name that is not one of its variables; a loop carries variables, not "
                                  "objects: assign it to a variable (`b = b + ...`) inside the loop")
    kept = []
    for placeholder, start, result in zip(placeholders, starts, results):
        mutated = placeholder in changed
        preserved = object_of(result) is placeholder
        kept.append((mutated, preserved, object_of(start)))
    owners = [o for m, _, o in kept if m]
    if any(sum(1 for _, _, o in kept if o is owner) > 1 for owner in owners):
        raise ConversionError(f"{site}: two variables of a loop over a tensor hold one tensor, which the loop "
                              "changes in place; copy it first (`b = a * 1`) or change it through one name")
    return kept


def after_loop(kept, finals, captures, site):
    """Give the loop's outputs the objects of the values they continue (see loop_identities)."""
    captures = set(captures)
    for (mutated, preserved, obj), final in zip(kept, finals):
        if not isinstance(final, Node):
            continue
        either = isinstance(obj, _Either)
        if mutated and not either and obj in captures:
            raise ConversionError(f"{site}: a loop over a tensor changes in place a tensor that it also reads "
                                  "through another name; write the change as `a = a + ...` (a new tensor)")
        if preserved and not (mutated and either):
            if mutated:
                record(obj, final)
            else:
                final.inplace_object = obj
        elif mutated:
            for member in _members(obj):
                spoil(member, site, "a loop variable", "inside a loop over a tensor that also rebinds it (its value "
                                                       "after the loop depends on the iterations that ran)")
        else:
            final.inplace_object = _Either({o: None for o in _members(obj) + [final]})  # no iteration: still obj
