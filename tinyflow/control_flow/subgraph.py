"""Subgraphs: the nodes a branch or loop-body function built, and the outer nodes they read.

A subgraph's nodes live in the same graph, inside a name scope (pictures draw a cluster). The outer plan never
runs them: a control-flow op's kernel runs a cached sub-plan, fed the values of the outer nodes it reads (its
*captures*). While the gradient of a loop body is built, the forward body's nodes are *saved values*: read from
the gradient loop's body they are captured (their value at each iteration comes back from a stack), never
recomputed (see `saving`).
"""
import contextlib

import numpy as np

from ..errors import TinyflowError
from ..graph import get_default_graph
from ..nodes import Constant, Node, Placeholder, as_node
from ..session.plan import ExecutionPlan

_building = []  # markers of the subgraphs whose functions are running right now, innermost last
_saving = []    # forward loop bodies whose gradient is being built: their nodes are read as saved values


class Subgraph:
    """The nodes a function built, its inputs (placeholders), the outer nodes they read (captures), its outputs."""

    def __init__(self, graph, nodes, outputs, inputs=(), label="", also=()):
        self.graph, self.nodes, self.outputs, self.inputs, self.label = graph, nodes, outputs, tuple(inputs), label
        self.restores = []  # (pop node, forward node): a gradient body's saved values, see while_grad.py
        self.captures = _captures(self, also)

    @classmethod
    def trace(cls, fn, inputs=(), scope="branch", also=None):
        """Call `fn(*inputs)` inside a name scope and collect what it built; `also()`, if given, names nodes the
        subgraph computes besides its outputs (values its loop records)."""
        graph = get_default_graph()
        start = len(graph.nodes)
        marker = object()
        _building.append(marker)
        try:
            with graph.name_scope(scope) as label:
                result = fn(*inputs)
                single = not isinstance(result, (list, tuple))
                outputs = [result] if single else list(result)
                if not outputs:
                    raise TinyflowError(f"the function {fn_name(fn)} of '{label}' returned no value; "
                                        "return one node or a list/tuple of nodes")
                like = next((o for o in outputs if isinstance(o, Node)), None)
                outputs = [as_node(o, like=like) for o in outputs]
        finally:
            _building.pop()
        # nodes a subgraph adopted while this function ran (a forward loop's stack pushes) stay that subgraph's
        nodes = [n for n in graph.nodes[start:] if not getattr(n, "adopted", False)]
        for node in nodes:
            if node.subgraph is None:
                node.subgraph = marker
        sub = cls(graph, nodes, outputs, inputs, label, also() if also is not None else ())
        sub.single = single
        for node in nodes:
            if node.subgraph is marker:
                node.subgraph = sub
        return sub

    def set_outputs(self, outputs):
        """Replace the outputs (a converted `if` knows them once both branches ran) and find the captures again."""
        self.outputs, self.single = list(outputs), False
        self.captures = _captures(self)

    def adopt(self, node):
        """Make `node`, built after the trace, part of this subgraph (a gradient body's stack pops)."""
        node.subgraph, node.adopted = self, True
        self.nodes.append(node)


def fn_name(fn):
    return getattr(fn, "__qualname__", repr(fn))


@contextlib.contextmanager
def saving(body):
    """While the gradient of loop body `body` is built, its nodes are saved values, never recomputed."""
    _saving.append(body)
    try:
        yield
    finally:
        _saving.pop()


def owner(node):
    """The subgraph a node's value comes from (None for the outer graph): the one it was built in, except for
    the forward values a gradient loop's body restores from stacks (those come from that body)."""
    for body in _saving:
        if any(node is restored for _, restored in body.restores):
            return body
    owned_by = getattr(node, "subgraph", None)
    return owned_by if isinstance(owned_by, Subgraph) else None


def _captures(sub, also=()):
    """Outer nodes the subgraph reads, in creation order.

    A node built inside *another, finished* subgraph (a forward branch read by its gradient branch) is recomputed
    here, not captured: capturing it would make the outer plan run a branch that was not taken. The nodes of a
    loop body whose gradient is being built are the exception: they are saved values, captured.
    """
    own = set(sub.nodes) | set(sub.inputs)
    captured, stack, seen = set(), list(sub.outputs) + list(also), set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        owned_by = owner(node)
        recompute = (owned_by is not None and owned_by not in _building and owned_by is not sub
                     and (owned_by not in _saving or isinstance(node, Constant)) and not isinstance(node, Placeholder))
        if node in own or recompute:
            own.add(node)
            stack.extend(node.inputs)
        else:
            captured.add(node)
    leaked = [n for n in captured if isinstance(n, Placeholder) and owner(n) is not None
              and owner(n) not in _building and owner(n) not in _saving]
    if leaked:
        raise TinyflowError(f"'{sub.label}' reads {leaked[0].name}, a loop variable of a finished while_loop; "
                            "use the while_loop's outputs instead")
    sub.nodes = sorted(own - set(sub.inputs), key=lambda n: n.creation_index)
    return tuple(sorted(captured, key=lambda n: n.creation_index))


def truth(value, op):
    """A condition's value as a Python bool (it must hold one value)."""
    value = np.asarray(value)
    if value.size != 1:
        raise ValueError(f"the condition of {op.op_type} '{op.name}' has shape {value.shape}; it must be one "
                         "value (reduce it, e.g. tfl.reduce_max(x > 0) for 'any')")
    return bool(value.reshape(()))


def merged_captures(*subgraphs):
    """The captures of all `subgraphs`, each once, in creation order."""
    return tuple(sorted(set().union(*[sub.captures for sub in subgraphs]), key=lambda n: n.creation_index))


def sub_plan(plans, key, fetches, fed, backend):
    """The cached ExecutionPlan computing `fetches` from the `fed` nodes (built on first use)."""
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = ExecutionPlan(list(fetches), frozenset(fed), backend)
    return plan


def is_float(node):
    """Whether a node holds floating-point values (only those get gradients)."""
    return node.dtype is not None and np.issubdtype(node.dtype, np.floating)
