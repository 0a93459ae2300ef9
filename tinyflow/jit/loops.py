"""convert_while / convert_for: converted loops run in Python over Python values, as tfl.while_loop over tensors.

A `for` over a tensor, tfl.range(n), or enumerate / zip of those loops over the position k (control_flow/sequences.py).
The tensors among the variables become the loop's variables, numbers become tensors, other Python values must not
change; a list appended to once per iteration is collected on a stack (tensor_lists.py).
"""
import numpy as np

from ..control_flow import WhileLoop
from ..control_flow.subgraph import owner
from ..control_flow.while_loop import trace_loop
from ..graph import get_default_graph
from ..nodes import Node, as_node
from ..ops.elementwise_ops import cast, where
from .branches import convert_ifelse
from ..errors import ConversionError
from .inplace_tracing import after_loop, current, loop_identities, region
from .tensor_lists import Guarded, stack_collected, tensor_sequence
from .values import (NUMBERS, RETURN_VALUE, Lists, Undefined, UndefinedValue, as_bool, describe, flatten, grows,
                     typeless, rebuild, same_value, shown)


def convert_while(test_fn, body_fn, values, names, site):
    """A Python loop while the test is a Python bool; tfl.while_loop from the first time it is a graph node."""
    values = tuple(values)
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
        return graph_loop(test, body, (as_node(np.int64(0)),) + tuple(values), ("<position>",) + tuple(names),
                          site)[1:]
    values = tuple(values)
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
            graph.discard_nodes_from(start)
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
