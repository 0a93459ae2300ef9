"""convert_ifelse: a converted `if` runs one branch for a Python condition and builds tfl.cond for a tensor.

Both branches are traced as graphs, then each variable's two values paired into the cond's outputs (`_Merge`).
"""
import numpy as np

from ..control_flow import Cond, Subgraph
from ..graph import get_default_graph
from ..nodes import Node, as_node
from ..nodes.node import default_dtype_for
from ..shapes import shapes_compatible
from ..errors import ConversionError
from .inplace_tracing import current, joined, newest, record, region
from .tensor_lists import Guarded
from .values import (NUMBERS, RETURN_VALUE, Lists, Undefined, UndefinedValue, as_bool, describe, flatten,
                     typeless, line_of, rebuild, same_value, shown)


_AFTER = "the code after a `{}` that depends on a tensor (it runs, or not, when the program runs)"
_WHERE = {None: "an `if` on a tensor", "stops": _AFTER.format("break` or `return"),
          "continues": _AFTER.format("continue")}


def convert_ifelse(test, true_fn, false_fn, values, names, site, escape=None):
    """Run one branch (Python bool) or build tfl.cond (graph node); returns the branch's variables.

    `escape` marks the guard of the code after a `continue` ("continues"), or a `break` or `return` ("stops": a tensor
    loop collects a value a list gets appended there, unless it was skipped)."""
    where, collects = _WHERE[escape], escape == "stops"
    if not isinstance(test, Node):
        return true_fn(*values) if test else false_fn(*values)
    pred = as_bool(test, site)
    results, changed, lists, appended = {}, {}, Lists(names, values), []

    def branch(fn, label):
        with region(where) as record:
            results[label] = current(tuple(fn(*values)))
            changed[label] = dict(record.changed_outside())  # tensors from outside changed in place
        for _, array, items in lists.lists if collects and label == "true" else ():
            if len(array) == len(items) + 1 and isinstance(array[-1], (Node, Guarded)):
                appended.append((array, array.pop()))
        lists.check(site, where)
        nodes = [leaf for value in results[label] for leaf in flatten(value)[0] if isinstance(leaf, Node)]
        return nodes or [as_node(False)]  # provisional: the outputs are set once both branches are known
    with get_default_graph().name_scope("if"):
        true_branch = Subgraph.trace(lambda: branch(true_fn, "true"), scope="true")
        false_branch = Subgraph.trace(lambda: branch(false_fn, "false"), scope="false")
        merge = _Merge(true_branch, false_branch, site)
        merged = [merge.variable(name, a, b) for name, a, b in zip(names, results["true"], results["false"])]
        objects = []  # tensors from outside a branch changed in place: their newest values join too
        for obj in {**changed["true"], **changed["false"]}:
            sides = [changed[side][obj] if obj in changed[side] else newest(obj) for side in ("true", "false")]
            spoiled = [v for v in sides if not isinstance(v, Node)]
            objects.append((obj, spoiled[0] if spoiled else merge.variable(CHANGED, *sides)))
        for array, item in appended:  # the value and whether it was appended
            value, valid = (item.value, item.valid) if isinstance(item, Guarded) else (item, True)
            objects.append((array, (merge.variable(CHANGED, value, _NO_VALUE), merge.variable(CHANGED, valid, False))))
        outputs = []
        if merge.pairs:  # else nothing tensor-valued differs: no cond
            true_branch.set_outputs([a for a, _ in merge.pairs])
            false_branch.set_outputs([b for _, b in merge.pairs])
            op = Cond(pred, true_branch, false_branch, name="Cond")
            outputs = [op.output(i) for i in range(len(merge.pairs))]
            for out, (a, b) in zip(outputs, merge.pairs):
                out.return_site = getattr(a, "return_site", None) or getattr(b, "return_site", None)
                joined(out, a, b)
    for obj, value in objects:
        if isinstance(obj, list):
            obj.append(Guarded(*(_filled(v, outputs) for v in value)))
        else:
            record(obj, _filled(value, outputs))
    return tuple(_filled(v, outputs) for v in merged)


def convert_ifexp(test, true_fn, false_fn, site):
    """`a if test else b`: Python's for a Python condition; a tfl.cond of the two values for a tensor."""
    value = "<the value of `a if c else b`>"
    return convert_ifelse(test, lambda _: (true_fn(),), lambda _: (false_fn(),), (None,), (value,), site)[0]


class _Slot(int):
    """The index of a cond output, standing for it in a merged variable until the cond is built."""


def _filled(value, outputs):
    """A merged variable with the cond's outputs in place of its _Slots (its lists filled in place)."""
    leaves, structure = flatten(value)
    return rebuild(structure, iter(outputs[v] if isinstance(v, _Slot) else v for v in leaves), into=value)


CHANGED = "<a tensor changed in place>"
_NO_VALUE = object()  # a return value's leaf on the branch where no `return` ran yet


def _missing(value):
    return value is _NO_VALUE or typeless(value)


class _Merge:
    """Pairs the two branches' values of each variable into the cond's outputs (see convert_ifelse)."""

    def __init__(self, true_branch, false_branch, site):
        self.branches, self.site, self.pairs = (true_branch, false_branch), site, []

    def variable(self, name, a, b):
        if a is b and isinstance(a, list):
            return a  # one list object on both sides (only appended to, which Lists checks): it stays that object
        if name == RETURN_VALUE and (typeless(a) or typeless(b)):  # no value yet on that side (in a loop)
            a, b = (Undefined(name) if typeless(v) else v for v in (a, b))
        if isinstance(a, Undefined) and isinstance(b, Undefined):
            return a
        if isinstance(a, Undefined) or isinstance(b, Undefined):
            if name != RETURN_VALUE:
                return Undefined(name, self.site)  # a branch-local temporary: an error only if used later
            leaves, structure = flatten(b if isinstance(a, Undefined) else a)  # the `return` ran on one side only
            stand_in = rebuild(structure, iter(_NO_VALUE if isinstance(v, Node) else v for v in leaves))
            a, b = (stand_in, b) if isinstance(a, Undefined) else (a, stand_in)
        (leaves_a, structure), (leaves_b, structure_b) = flatten(a), flatten(b)
        if structure != structure_b:
            raise ConversionError(f"{self.site}: variable '{shown(name)}' is {describe(a)} in one branch of an "
                                  f"`if` on a tensor and {describe(b)} in the other; give it one structure")
        return rebuild(structure, iter([self.leaf(name, x, y) for x, y in zip(leaves_a, leaves_b)]))

    def leaf(self, name, a, b):
        if _missing(a) and _missing(b):
            return a if a is b and a is not _NO_VALUE else UndefinedValue()
        graphish = [isinstance(v, Node) or _missing(v) for v in (a, b)]
        if name == RETURN_VALUE and any(graphish) and (a is None or b is None):
            tensor = b if a is None else a
            raise ConversionError(f"{getattr(tensor, 'return_site', None) or self.site}: this `return` gives a tensor "
                                  f"of shape {tensor.shape}, but on other paths the function returns None (it ends "
                                  "without `return`, or returns no value); when the path depends on a tensor, return "
                                  "a tensor on every path")
        python = [v for v, is_graph in zip((a, b), graphish) if not is_graph and not isinstance(v, NUMBERS)]
        if not any(graphish) and same_value(a, b):
            return a
        if python and any(graphish):
            raise ConversionError(f"{self.site}: variable '{shown(name)}' is a tensor in one branch of an `if` on a "
                                  f"tensor and a {type(python[0]).__name__} in the other; make both tensors")
        if python:
            raise ConversionError(f"{self.site}: variable '{shown(name)}' gets different Python values in the two "
                                  f"branches of an `if` on a tensor ({a!r} / {b!r}); make it a tensor (tfl.Constant) "
                                  "or compute it outside the `if`")
        like = next((v for v in (a, b) if isinstance(v, Node) and not _missing(v)), None)
        # numbers on both sides (a flag, a count) make a tensor of their common type
        shape, dtype = (like.shape, like.dtype) if like is not None else \
            ((), np.result_type(*[default_dtype_for(v) for v in (a, b) if not _missing(v)]))
        a, b = self.in_branch(0, a, shape, dtype), self.in_branch(1, b, shape, dtype)
        if name == RETURN_VALUE and not (a.dtype == b.dtype and shapes_compatible(a.shape, b.shape)):
            (here, x), (there, y) = sorted(((getattr(v, "return_site", None) or self.site, v) for v in (a, b)),
                                           key=lambda pair: line_of(pair[0]), reverse=True)
            raise ConversionError(f"{here}: this `return` gives a tensor of shape {x.shape} and dtype {x.dtype}, but "
                                  f"the `return` at {there} gives shape {y.shape} and dtype {y.dtype}; the values "
                                  "returned on different paths of an `if`/loop on a tensor must have one shape and "
                                  "dtype (reshape, slice or cast one of them)")
        self.pairs.append((a, b))
        return _Slot(len(self.pairs) - 1)

    def in_branch(self, side, value, shape, dtype):
        """`value` as an output node of branch `side` (a constant, or an UndefinedValue typed like the other side)."""
        if isinstance(value, Node) and not typeless(value):
            return value
        branch = self.branches[side]
        with branch.graph.name_scope(branch.label + "/"):
            node = UndefinedValue(shape, dtype) if _missing(value) else as_node(np.asarray(value, dtype))
        branch.adopt(node)
        return node


