"""What converted `if`, `while` and `for` statements call: Python's meaning for Python values, graph ops for tensors.

convert_ifelse runs one branch for a Python condition; for a tensor it traces both branches as graphs, then pairs each
variable's two values into a tfl.cond's outputs (`_Merge`). convert_while / convert_for loop in Python over Python
values and build a tfl.while_loop over tensors: a `for` over a tensor, tfl.range(n), or enumerate / zip of those loops
over the position k (control_flow/sequences.py). The tensors among the variables become the loop's variables, numbers
become tensors, other Python values must not change; a list appended to once per iteration is collected on a stack
(tensor_lists.py).
"""
import numpy as np

from ..control_flow import Cond, Subgraph, WhileLoop
from ..control_flow.subgraph import owner
from ..control_flow.while_loop import trace_loop
from ..errors import ConversionError
from ..graph import get_default_graph
from ..nodes import Node, as_node
from ..nodes.node import default_dtype_for
from ..ops.elementwise_ops import cast, where
from ..shapes import shapes_compatible
from .inplace_tracing import after_loop, current, joined, loop_identities, newest, record, region
from .tensor_lists import Guarded, stack_collected, tensor_sequence
from .values import (NUMBERS, RETURN_VALUE, Lists, Undefined, UndefinedValue, as_bool, describe, flatten, grows,
                     line_of, rebuild, same_value, shown, typeless)

_AFTER = "the code after a `{}` that depends on a tensor (it runs, or not, when the program runs)"
_WHERE = {None: "an `if` on a tensor", "stops": _AFTER.format("break` or `return"),
          "continues": _AFTER.format("continue")}


def convert_ifelse(test, true_fn, false_fn, values, names, site, escape=None):
    """Run one branch (Python bool) or build tfl.cond (graph node); returns the branch's variables. `escape`: it
    guards the code after a `continue` ("continues") or a `break`/`return` ("stops": a loop collects appends there)."""
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


# ---------------------------------------------------------------- loops
def convert_while(test_fn, body_fn, values, names, site):
    """A Python loop while the test is a Python bool; tfl.while_loop from the first time it is a graph node."""
    while not isinstance(test := test_fn(*values), Node):
        if not test:
            return values
        values = tuple(body_fn(*values))
    return graph_loop(test_fn, body_fn, values, names, site)


def convert_for(iterable, extra_test, body_fn, values, names, site):
    """A Python loop over a Python iterable, a tfl.while_loop over a tensor sequence; `extra_test`: the break flags'."""
    sequence = tensor_sequence(iterable)
    if sequence is not None:
        def test(k, *loop):
            keep = True if extra_test is None else extra_test(*loop)
            if not isinstance(keep, Node):
                return sequence.valid(k) if keep else as_node(False)
            return where(sequence.valid(k), as_bool(keep, site), False)

        def body(k, *loop):
            return (k + 1,) + tuple(body_fn(sequence.item(k), *loop))
        return graph_loop(test, body, (as_node(np.int64(0)),) + values, ("<position>",) + names, site)[1:]
    for item in iterable:  # an Undefined raises its error here
        keep = True if extra_test is None else extra_test(*values)
        if not isinstance(keep, Node) and not keep:
            break
        # once stopped by a tensor flag, the remaining iterations run under a cond
        values = tuple(convert_ifelse(keep, lambda *v, i=item: body_fn(i, *v), lambda *v: v, values, names, site))
    return values


class _Restructure(Exception):
    """A variable without a value before the loop holds a tuple/list in it: trace again (args: its index, structure)."""


def graph_loop(test_fn, body_fn, values, names, site):
    """tfl.while_loop over the tensors and numbers among `values`; a variable first assigned inside the loop takes the
    type the body gives it (a tuple or list: the loop is traced again with that structure)."""
    values = list(current(tuple(values)))
    graph = get_default_graph()
    lists = Lists(names, values)
    for _ in range(len(values) + 1):
        start = len(graph.nodes)
        try:
            return _graph_loop(test_fn, body_fn, values, names, site, lists)
        except _Restructure as again:
            graph.discard(graph.nodes[start:])
            lists.restore()
            index, structure = again.args
            values[index] = rebuild(structure, iter([Undefined(names[index], site)] * len(flatten(structure)[0])))
        except BaseException:
            lists.restore()
            raise
    raise AssertionError("unreachable: each retrace gives one more variable its structure")


def _graph_loop(test_fn, body_fn, values, names, site, lists):
    flat = [flatten(v) for v in values]
    all_leaves = [leaf for leaves, _ in flat for leaf in leaves]
    carries = [isinstance(leaf, (Node, Undefined) + NUMBERS) for leaf in all_leaves]  # else must stay as it is
    # a leaf with no value yet (an Undefined, or an enclosing loop's variable before its first assignment) is typed by
    # the body's first assignment (trace_loop)
    starts = [UndefinedValue() if typeless(leaf) or isinstance(leaf, Undefined) else
              leaf if isinstance(leaf, Node) else as_node(leaf) for leaf, c in zip(all_leaves, carries) if c]

    def with_loop_values(loop):
        """The variables holding `loop`'s values (lists filled in place: the object every name holding it sees)."""
        carried = iter(loop)
        leaves = iter([next(carried) if c else leaf for leaf, c in zip(all_leaves, carries)])
        return [rebuild(structure, leaves, into=value) for value, (_, structure) in zip(values, flat)]

    def test(*loop):
        return as_bool(test_fn(*with_loop_values(loop)), site)

    appended = {}  # variable index -> the body node a list variable gets appended at each iteration
    kept = []  # per carried value: whether the body changed it in place, kept its object, and that object

    def body(*loop):
        with region("a loop over a tensor") as changes:
            result = current(tuple(body_fn(*with_loop_values(loop))))
        carried, position = [], 0
        for index, (name, (leaves, structure), new, old) in enumerate(zip(names, flat, result, values)):
            if isinstance(new, list) and structure is not None and structure[0] is list and \
                    len(new) > len(structure[1]):
                if len(new) != len(structure[1]) + 1 or not isinstance(new[-1], (Node, Guarded)):
                    raise grows(name, site, "a loop over a tensor")
                # collected on a stack by the loop (tensor_lists.py)
                appended[index], new = (new.pop(), new) if new is old else (new[-1], new[:-1])
            new_leaves, new_structure = flatten(new)
            if new_structure is not None and structure is None and (isinstance(old, Undefined) or typeless(old)):
                raise _Restructure(index, new_structure)  # first assigned in the loop, to a tuple/list
            if new_structure != structure:
                raise ConversionError(f"{site}: variable '{shown(name)}' changes structure in a loop over a tensor "
                                      f"({describe(leaves if structure else leaves[0])} before, {describe(new)} "
                                      "after an iteration); keep one structure")
            for old, value, carried_leaf in zip(leaves, new_leaves, carries[position:position + len(leaves)]):
                if carried_leaf:
                    carried.append(_loop_value(name, value, loop[len(carried)], site))
                elif not same_value(old, value):
                    raise _not_carried(name, value, site)
            position += len(leaves)
        lists.check(site, "a loop over a tensor")
        kept[:] = loop_identities(changes, loop, starts, carried, site)
        return carried

    if not starts:
        raise ConversionError(f"{site}: this loop on a tensor changes no variable, so as a graph it would do "
                              "nothing; assign the values you need inside the loop")
    with get_default_graph().name_scope("while") as scope:  # tfl.while_loop, told what else the body computes
        test_graph, body_graph = trace_loop(test, body, starts, scope, also=lambda: [
            n for item in appended.values() for n in (
                (item.value, item.valid) if isinstance(item, Guarded) else (item,)) if isinstance(n, Node)])
        loop_op = WhileLoop(starts, test_graph, body_graph, name="While")
        final = [loop_op.output(i) for i in range(loop_op.n_vars)]
    after_loop(kept, final, loop_op.captures, site)
    # a variable no iteration assigned (its assignment is behind a Python `return` / `break`) still has no value
    results = with_loop_values([Undefined("?", site) if typeless(v) or typeless(start) else v
                                for v, start in zip(final, starts)])
    for index, item in appended.items():
        node = item.value if isinstance(item, Guarded) else item
        if owner(node) is not loop_op.body:
            raise ConversionError(f"{site}: list '{names[index]}' gets a value appended in the loop that the loop "
                                  f"does not compute ('{node.name}'); append values computed inside the loop")
        stack_collected(loop_op, results[index], item)
    return tuple(results)


def _loop_value(name, value, placeholder, site):
    if isinstance(value, Node):
        if value.dtype != placeholder.dtype and all(v.dtype is not None and v.dtype.kind == "f"
                                                    for v in (value, placeholder)):
            # `total + x * i` with a counter i that was a Python int: eager Python keeps x's float type
            return cast(value, placeholder.dtype)
        return value
    if isinstance(value, NUMBERS):
        return as_node(value, like=placeholder)
    if isinstance(value, Undefined):
        if typeless(placeholder) or name == RETURN_VALUE:
            return UndefinedValue()
        raise ConversionError(f"{site}: variable '{name}' has a value before this loop on a tensor but is assigned "
                              "in only one branch of an `if` on a tensor inside it; assign it in both branches")
    raise _not_carried(name, value, site)


def _not_carried(name, value, site):
    return ConversionError(f"{site}: variable '{name}' ({type(value).__name__}) changes in a loop on a tensor; only "
                           "tensors and numbers can be loop variables")
