"""Run-time dispatch of converted `if` / `while` / `for`: Python's meaning for Python values, graph control flow
for tensors.

The converted code (convert.py) calls these with the statement's pieces as functions: each
branch or loop body takes the values of the variables it assigns and returns their new
values. A variable may hold a tensor, a number, a nested tuple/list of those, or any other
Python object (which a tensor branch or loop must then leave unchanged).

    convert_ifelse   Python bool: run one branch.  Tensor: tfl.cond over the variables' tensors.
    convert_while    Python loop while the test is a Python bool; tfl.while_loop once it is a tensor.
    convert_for      Python iterable: a Python loop.  A tensor, tfl.range(n), enumerate / zip of those:
                     a tfl.while_loop over the position k (control_flow/sequences.py).
"""
import builtins
import re

import numpy as np

from ..control_flow import Cond, Subgraph, while_loop
from ..control_flow.subgraph import owner
from ..control_flow.sequences import Enumerate, Zip, length, range as tensor_range, sequence_of
from ..graph import get_default_graph
from ..nodes import Node, as_node
from ..nodes.node import default_dtype_for
from ..shapes import shapes_compatible
from .errors import ConversionError
from .tensor_lists import TensorList, stacked_list
from .undefined import Undefined, UndefinedValue, is_typeless

RETURN_VALUE = "_tfl_retval"  # the converted function's return value (escapes.py)
NUMBERS = (bool, int, float, np.number, np.bool_)


# ---------------------------------------------------------------- nested values
def flatten(value):
    """(leaves, structure) of a value: tuples and lists are walked, anything else is a leaf."""
    if isinstance(value, (tuple, list)):
        parts = [flatten(v) for v in value]
        return [leaf for leaves, _ in parts for leaf in leaves], (type(value), [s for _, s in parts])
    return [value], None


def rebuild(structure, leaves):
    """The inverse of flatten, from an iterator of leaves."""
    if structure is None:
        return next(leaves)
    kind, parts = structure
    return kind(rebuild(s, leaves) for s in parts)


def _describe(value):
    if isinstance(value, Node):
        return f"a tensor of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, Undefined):
        return "no value"
    return f"{type(value).__name__} {value!r}"


def _same_value(a, b):
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and odd objects compare ambiguously: treat as different
        return False


def as_bool(test, site):
    """A tensor condition as one boolean value (cast if needed); a ConversionError for several values."""
    if test.dtype != np.bool_:
        from ..ops.math_ops import cast
        test = cast(test, "bool")
    if test.shape is not None and any(d is not None and d != 1 for d in test.shape):
        raise ConversionError(f"{site}: the condition has shape {test.shape}; an `if`/`while` on a tensor needs "
                              "one value. Reduce it first: tfl.reduce_max(c) for 'any', tfl.reduce_min or "
                              "tfl.equal(tfl.reduce_sum(c), c.size) for 'all'")
    return test


def python_truth(value, site):
    """bool(value) for a Python value; a ConversionError for a symbolic tensor."""
    if isinstance(value, Node):
        raise symbolic(site, "bool()")
    return bool(value)


def symbolic(site, what):
    """The error for asking a symbolic tensor for its value."""
    return ConversionError(
        f"{site}: {what} of a symbolic tensor inside to_static: while tracing, tensors have no values yet. "
        "Keep the computation in tensors (tfl.cond / tfl.where / an `if` directly on the tensor), or return the "
        "tensor and use its value after the call.")


def list_append(target, value, site):
    """`xs.append(v)` in converted code: Python's append (the list is returned, so the statement assigns it)."""
    if isinstance(target, Undefined):
        target._fail()
    target.append(value)
    return target


def convert_subscript(value, key, site):
    """`value[key]`; a tensor index (a loop's counter) picks that element along the first axis (gather)."""
    if isinstance(key, Node) and isinstance(value, Node):
        if key.shape is not None and len(key.shape) != 0:
            raise ConversionError(f"{site}: indexing a tensor with a tensor of shape {key.shape}; inside to_static a "
                                  "tensor index must be one integer (use tfl.gather for several)")
        from ..ops.indexing import gather
        return gather(value, key)
    if isinstance(key, tuple) and isinstance(value, Node) and any(isinstance(k, Node) for k in key):
        raise ConversionError(f"{site}: a tensor index inside a tuple index (x[i, j] with i or j a tensor); write "
                              "x[i][j], one axis at a time")
    return value[key]


# ---------------------------------------------------------------- return values
def returned(value, site):
    """The value of a `return` statement, remembering where it was returned (for mismatch messages)."""
    for leaf in flatten(value)[0]:
        if isinstance(leaf, Node) and getattr(leaf, "return_site", None) is None:
            leaf.return_site = site
    return value


def return_value(value):
    """What the converted function returns: its return value (None if no `return` ran)."""
    if isinstance(value, Undefined) or is_typeless(value):
        return None
    return value


# ---------------------------------------------------------------- if
def convert_ifelse(test, true_fn, false_fn, values, names, site):
    """Run one branch (Python bool) or build tfl.cond (graph node); returns the branch's variables."""
    if not isinstance(test, Node):
        return true_fn(*values) if python_truth(test, site) else false_fn(*values)
    pred = as_bool(test, site)
    results, lists = {}, _Lists(names, values)

    def branch(fn, label):
        def build():
            results[label] = fn(*values)
            lists.check(site, "an `if` on a tensor")
            nodes = [leaf for value in results[label] for leaf in flatten(value)[0] if isinstance(leaf, Node)]
            return nodes or [as_node(False)]  # provisional: the outputs are set once both branches are known
        return build
    graph = get_default_graph()
    with graph.name_scope("if"):
        true_branch = Subgraph.trace(branch(true_fn, "true"), scope="true")
        false_branch = Subgraph.trace(branch(false_fn, "false"), scope="false")
        merge = _Merge(true_branch, false_branch, site)
        merged = [merge.variable(name, a, b) for name, a, b in zip(names, results["true"], results["false"])]
        if not merge.pairs:
            return tuple(merged)  # nothing tensor-valued differs: no cond
        true_branch.set_outputs([a for a, _ in merge.pairs])
        false_branch.set_outputs([b for _, b in merge.pairs])
        op = Cond(pred, true_branch, false_branch, name="Cond")
        outputs = [op.output(i) for i in range(len(merge.pairs))]
        for out, (a, b) in zip(outputs, merge.pairs):
            out.return_site = getattr(a, "return_site", None) or getattr(b, "return_site", None)
    return tuple(v.resolve(outputs) if isinstance(v, _Pending) else v for v in merged)


class _Pending:
    """A merged variable whose tensors are outputs of the cond still to be built."""

    def __init__(self, structure, leaves):
        self.structure, self.leaves = structure, leaves  # leaves: Python values, or indices of cond outputs

    def resolve(self, outputs):
        return rebuild(self.structure, iter(outputs[v] if isinstance(v, _Slot) else v for v in self.leaves))


class _Slot(int):
    """The index of a cond output among a pending variable's leaves."""


_NO_VALUE = object()  # a return value's leaf on the branch where no `return` ran yet


def _missing(value):
    return value is _NO_VALUE or is_typeless(value)


class _Merge:
    """Pairs the two branches' values of each variable into the cond's outputs (see convert_ifelse)."""

    def __init__(self, true_branch, false_branch, site):
        self.branches, self.site, self.pairs = (true_branch, false_branch), site, []

    def variable(self, name, a, b):
        if name == RETURN_VALUE and (is_typeless(a) or is_typeless(b)):  # no value yet on that side (in a loop)
            a, b = (Undefined(name) if is_typeless(v) else v for v in (a, b))
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
            raise ConversionError(f"{self.site}: variable '{_shown(name)}' is {_describe(a)} in one branch of an "
                                  f"`if` on a tensor and {_describe(b)} in the other; give it one structure")
        return _Pending(structure, [self.leaf(name, x, y) for x, y in zip(leaves_a, leaves_b)])

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
        if any(graphish):
            for v, is_graph in zip((a, b), graphish):
                if not is_graph and not isinstance(v, NUMBERS):
                    raise ConversionError(f"{self.site}: variable '{_shown(name)}' is a tensor in one branch of an "
                                          f"`if` on a tensor and a {type(v).__name__} in the other; make both tensors")
        elif _same_value(a, b):
            return a
        elif not isinstance(a, NUMBERS) or not isinstance(b, NUMBERS):
            raise ConversionError(f"{self.site}: variable '{_shown(name)}' gets different Python values in the two "
                                  f"branches of an `if` on a tensor ({a!r} / {b!r}); make it a tensor (tfl.Constant) "
                                  "or compute it outside the `if`")
        like = next((v for v in (a, b) if isinstance(v, Node) and not _missing(v)), None)
        if like is None:  # numbers on both sides (a flag, a count): a tensor of their common type
            numbers = [v for v in (a, b) if not _missing(v)]
            shape, dtype = (), np.result_type(*[default_dtype_for(v) for v in numbers])
        else:
            shape, dtype = like.shape, like.dtype
        a, b = self.in_branch(0, a, shape, dtype), self.in_branch(1, b, shape, dtype)
        if name == RETURN_VALUE and not (a.dtype == b.dtype and shapes_compatible(a.shape, b.shape)):
            (here, x), (there, y) = sorted(((getattr(v, "return_site", None) or self.site, v) for v in (a, b)),
                                           key=lambda pair: _line(pair[0]), reverse=True)
            raise ConversionError(f"{here}: this `return` gives a tensor of shape {x.shape} and dtype {x.dtype}, but "
                                  f"the `return` at {there} gives shape {y.shape} and dtype {y.dtype}; the values "
                                  "returned on different paths of an `if`/loop on a tensor must have one shape and "
                                  "dtype (reshape, slice or cast one of them)")
        self.pairs.append((a, b))
        return _Slot(len(self.pairs) - 1)

    def in_branch(self, side, value, shape, dtype):
        """`value` as an output node of branch `side`: numbers become constants there, and a missing value an
        UndefinedValue of the type the other branch gives (no path reads it)."""
        if isinstance(value, Node) and not is_typeless(value):
            return value
        branch = self.branches[side]
        with branch.graph.name_scope(branch.label + "/"):
            node = UndefinedValue(shape, dtype) if _missing(value) else as_node(np.asarray(value, dtype))
        branch.adopt(node)
        return node


def _line(site):
    """The line number ending a site ("file.py:12", "cell 5, line 12")."""
    digits = re.search(r"(\d+)$", site)
    return int(digits.group(1)) if digits else 0


class _Lists:
    """The lists among some variables' values and their lengths, to catch one growing in a tensor branch or loop
    (whose code runs once, as a graph: an append there would add one symbolic value, not one per iteration)."""

    def __init__(self, names, values):
        self.lists = [(name, leaf, len(leaf)) for name, value in zip(names, values) for leaf in _lists_in(value)]

    def check(self, site, where):
        for name, array, size in self.lists:
            if len(array) != size:
                del array[size:]
                raise _grows(name, site, where)


def _grows(name, site, where):
    return ConversionError(
        f"{site}: list '{name}' grows inside {where}, whose body runs once, as a graph; a Python list cannot "
        "collect a value per iteration there. Loop with a Python `range` (the loop is unrolled), or keep only the "
        "last value in a variable")


def _lists_in(value):
    if isinstance(value, list):
        yield value
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _lists_in(item)


def _float(node):
    return node.dtype is not None and node.dtype.kind == "f"


def _shown(name):
    return "the return value" if name == RETURN_VALUE else name


# ---------------------------------------------------------------- loops
def convert_while(test_fn, body_fn, values, names, site):
    """A Python loop while the test is a Python bool; tfl.while_loop from the first time it is a graph node."""
    values = tuple(values)
    while True:
        test = test_fn(*values)
        if isinstance(test, Node):
            break
        if not python_truth(test, site):
            return values
        values = tuple(body_fn(*values))
    return graph_loop(test_fn, body_fn, values, names, site)


def convert_for(iterable, extra_test, body_fn, values, names, site):
    """A Python loop over a Python iterable; a tfl.while_loop over a tensor sequence (tfl.range, rows, ...).

    `extra_test(*values)` (or None) is the loop's `break` / `return` flag test: False stops the loop.
    """
    sequence = sequence_of(iterable.as_tensor() if isinstance(iterable, TensorList) else iterable)
    if sequence is not None:
        def test(k, *loop):
            valid = sequence.valid(k)
            if extra_test is None:
                return valid
            keep = extra_test(*loop)
            if not isinstance(keep, Node):
                return valid if keep else as_node(False)
            from ..ops.math_ops import where
            return where(valid, as_bool(keep, site), False)

        def body(k, *loop):
            return (k + 1,) + tuple(body_fn(sequence.item(k), *loop))
        return graph_loop(test, body, (as_node(np.int64(0)),) + tuple(values), ("<position>",) + tuple(names),
                          site)[1:]
    if isinstance(iterable, Undefined):
        iterable._fail()
    values = tuple(values)
    for item in iterable:
        keep = True if extra_test is None else extra_test(*values)
        if isinstance(keep, Node):  # stopped by a tensor flag: the remaining iterations run under a cond
            values = convert_ifelse(keep, lambda *v, item=item: body_fn(item, *v), lambda *v: v, values, names, site)
            continue
        if not keep:
            break
        values = tuple(body_fn(item, *values))
    return values


class _Restructure(Exception):
    """A variable without a value before the loop turned out to hold a tuple/list: trace the loop again."""

    def __init__(self, index, structure):
        super().__init__(index, structure)
        self.index, self.structure = index, structure


def graph_loop(test_fn, body_fn, values, names, site):
    """tfl.while_loop over the tensors among `values` (numbers become tensors; other Python values must not change).

    A variable first assigned inside the loop takes the type the body gives it; if the body makes it a
    tuple or list, the loop is traced again with that structure (the first trace's nodes are dropped).
    """
    values = list(values)
    graph = get_default_graph()
    for _ in range(len(values) + 1):
        start = len(graph.nodes)
        try:
            return _graph_loop(test_fn, body_fn, values, names, site)
        except _Restructure as again:
            _forget_nodes(graph, start)
            leaves, _ = flatten(again.structure)
            values[again.index] = rebuild(again.structure, iter([Undefined(names[again.index], site)] * len(leaves)))
    raise AssertionError("unreachable: each retrace gives one more variable its structure")


def _forget_nodes(graph, start):
    """Drop the nodes built since graph.nodes[start] (an abandoned trace): names and consumer lists as before."""
    gone = graph.nodes[start:]
    del graph.nodes[start:]
    gone_set = set(gone)
    for node in gone:
        graph._by_name.pop(node.name, None)
        for inp in node.inputs:
            if inp not in gone_set:
                inp.consumers[:] = [c for c in inp.consumers if c not in gone_set]


def _graph_loop(test_fn, body_fn, values, names, site):
    flat = [flatten(v) for v in values]
    starts, kinds = [], []  # per leaf: "carried" (a loop variable) or "python" (must stay as it is)
    for name, (leaves, _) in zip(names, flat):
        for leaf in leaves:
            if is_typeless(leaf):  # no value yet (e.g. an enclosing loop's variable before its first assignment)
                starts.append(UndefinedValue())
            elif isinstance(leaf, Node):
                starts.append(leaf)
            elif isinstance(leaf, NUMBERS):
                starts.append(as_node(leaf))
            elif isinstance(leaf, Undefined):
                starts.append(UndefinedValue())  # typed by the body's first assignment (trace_loop)
            else:
                kinds.append("python")
                continue
            kinds.append("carried")
    lists = _Lists(names, values)

    def with_loop_values(loop):
        carried = iter(loop)
        out, position = [], 0
        for leaves, structure in flat:
            new = [next(carried) if kinds[position + i] == "carried" else leaf for i, leaf in enumerate(leaves)]
            position += len(leaves)
            out.append(rebuild(structure, iter(new)))
        return out

    def test(*loop):
        return as_bool(test_fn(*with_loop_values(loop)), site)

    appended = {}  # variable index -> the body node a list variable gets appended at each iteration

    def body(*loop):
        result = body_fn(*with_loop_values(loop))
        lists.check(site, "a loop over a tensor")
        carried, position = [], 0
        for index, (name, (leaves, structure), new, old) in enumerate(zip(names, flat, result, values)):
            if isinstance(old, list) and isinstance(new, list) and len(new) > len(old):
                if len(new) != len(old) + 1 or not isinstance(new[-1], Node):
                    raise _grows(name, site, "a loop over a tensor")
                appended[index], new = new[-1], new[:-1]  # collected on a stack by the loop (tensor_lists.py)
            new_leaves, new_structure = flatten(new)
            if new_structure is not None and structure is None and (isinstance(old, Undefined) or is_typeless(old)):
                raise _Restructure(index, new_structure)  # first assigned in the loop, to a tuple/list
            if new_structure != structure:
                raise ConversionError(f"{site}: variable '{_shown(name)}' changes structure in a loop over a tensor "
                                      f"({_describe(leaves if structure else leaves[0])} before, {_describe(new)} "
                                      "after an iteration); keep one structure")
            for old, value, kind in zip(leaves, new_leaves, kinds[position:position + len(leaves)]):
                if kind == "python":
                    _check_unchanged(name, old, value, site)
                else:
                    carried.append(_loop_value(name, value, loop[len(carried)], site))
            position += len(leaves)
        return carried

    if not starts:
        raise ConversionError(f"{site}: this loop on a tensor changes no variable, so as a graph it would do "
                              "nothing; assign the values you need inside the loop")
    final = while_loop(test, body, starts, name="while")
    final = [final] if isinstance(final, Node) else final
    results = with_loop_values([Undefined("?", site) if is_typeless(v) else v for v in final])
    for index, node in appended.items():
        loop = final[0].inputs[0]
        if owner(node) is not loop.body:
            raise ConversionError(f"{site}: list '{names[index]}' gets a value appended in the loop that the loop "
                                  f"does not compute ('{node.name}'); append values computed inside the loop")
        results[index] = stacked_list(loop, results[index], node)
    return tuple(results)


def _loop_value(name, value, placeholder, site):
    if isinstance(value, Node):
        if _float(value) and _float(placeholder) and value.dtype != placeholder.dtype:
            # `total + x * i` with a counter i that was a Python int: eager Python keeps x's float type
            from ..ops.math_ops import cast
            return cast(value, placeholder.dtype)
        return value
    if isinstance(value, NUMBERS):
        return as_node(value, like=placeholder)
    if isinstance(value, Undefined):
        if is_typeless(placeholder) or name == RETURN_VALUE:
            return UndefinedValue()
        raise ConversionError(f"{site}: variable '{name}' has a value before this loop on a tensor but is assigned "
                              "in only one branch of an `if` on a tensor inside it; assign it in both branches")
    raise ConversionError(f"{site}: variable '{name}' ({type(value).__name__}) changes in a loop on a tensor; only "
                          "tensors and numbers can be loop variables")


def _check_unchanged(name, old, new, site):
    if not _same_value(old, new):
        raise ConversionError(f"{site}: variable '{name}' ({type(new).__name__}) changes in a loop on a tensor; "
                              "only tensors and numbers can be loop variables")


# ---------------------------------------------------------------- builtins inside converted code
def converted_builtin(fn):
    """enumerate / zip / range / len that also take tensors (a tensor `for` loop iterates over them), or None."""
    try:
        return _BUILTINS.get(fn)
    except TypeError:  # an unhashable callable
        return None


def _enumerate(iterable, start=0):
    sequence = sequence_of(iterable)
    return builtins.enumerate(iterable, start) if sequence is None else Enumerate(sequence, start)


def _zip(*iterables):
    sequences = [sequence_of(i) for i in iterables]
    if all(s is None for s in sequences):
        return builtins.zip(*iterables)
    if any(s is None for s in sequences):
        raise ConversionError("zip() of a tensor and a Python iterable inside to_static: a loop over a tensor "
                              "cannot step through a Python list; make both tensors (tfl.Constant(list)) or index "
                              "the tensor inside a Python loop")
    return Zip(sequences)


def _range(*args):
    return tensor_range(*args) if any(isinstance(a, Node) for a in args) else builtins.range(*args)


def _len(value):
    if isinstance(value, TensorList):
        return value.length()
    return length(value) if isinstance(value, Node) else builtins.len(value)


_BUILTINS = {builtins.enumerate: _enumerate, builtins.zip: _zip, builtins.range: _range, builtins.len: _len}
