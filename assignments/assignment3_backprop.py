"""Assignment 3 — the backprop walk, with pending counts.

`tfl.gradients` walks the graph backwards from the loss. A node may pass its gradient on only
when *every* consumer on a path to the loss has delivered its contribution, so the walk keeps a
pending count per node (Kahn's algorithm). Here you write that walk yourself, on tinyflow's
graphs and its table of gradient functions, and compare with `tfl.gradients`.
Check yourself with `pytest tests -m assignment3`.
"""
from collections import deque

import numpy as np

import tinyflow as tfl
from tinyflow.ops.registry import NOT_DIFFERENTIABLE, gradient_function
from tinyflow.ops.broadcasting import SumToShapeOf


def ancestors(node):
    """Every node `node` depends on, itself included (given)."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(n.inputs)
    return seen


def is_float(node):
    """Only floating-point values have gradients (given)."""
    return node.dtype is not None and np.issubdtype(node.dtype, np.floating)


def fit_to_input(grad, inp):
    """A gradient summed back to its input's shape when broadcasting widened it (given)."""
    return grad if grad.shape == inp.shape and None not in (inp.shape or (None,)) else SumToShapeOf(grad, inp)


def nodes_between(y, xs):
    """The float nodes on some path from one of `xs` to `y` (both ends included), as a set."""
    # BEGIN SOLUTION
    # HINT: start from the xs that are ancestors of y and follow node.consumers forward, keeping only nodes
    #   that are float (is_float) and ancestors of y
    needed = ancestors(y)
    between, stack = set(), [x for x in xs if x in needed]
    while stack:
        node = stack.pop()
        if node not in between and is_float(node):
            between.add(node)
            stack.extend(c for c in node.consumers if c in needed)
    return between
    # END SOLUTION


def pending_counts(between):
    """For each node of `between`: how many of its consumers are in `between` (contributions it waits for)."""
    # BEGIN SOLUTION
    # HINT: a dict comprehension over between, counting node.consumers that are in between
    return {node: sum(1 for c in node.consumers if c in between) for node in between}
    # END SOLUTION


def backprop_order(y, xs):
    """The nodes in the order the walk takes them: y first; a node only once its pending count is 0.

    Ties (several nodes ready at once) are taken first-in first-out, the initial ones and the inputs
    of one node in the order they become ready (inputs in their order in `node.inputs`).
    """
    # BEGIN SOLUTION
    # HINT: between = nodes_between(y, xs); pending = pending_counts(between); a deque holding y; pop a node,
    #   append it to the order, decrement the pending count of each of its inputs in between and enqueue
    #   those that reach 0
    between = nodes_between(y, xs)
    if y not in between:
        return []
    pending = pending_counts(between)
    ready, order = deque([y]), []
    while ready:
        node = ready.popleft()
        order.append(node)
        for inp in node.inputs:
            if inp in between:
                pending[inp] -= 1
                if pending[inp] == 0:
                    ready.append(inp)
    return order
    # END SOLUTION


def gradients(y, xs):
    """Gradient nodes of y with respect to each of `xs` (None where x does not affect y), like tfl.gradients.

    y's own gradient is tfl.ones_like(y). Contributions to one node are summed (tfl.add_n).
    For an op, `gradient_function(op)` is its registered function fn(op, grad) returning one gradient
    (or None) per input, or NOT_DIFFERENTIABLE; pass each gradient through fit_to_input.
    """
    # BEGIN SOLUTION
    # HINT: walk in backprop_order(y, xs); keep a dict node -> list of contributions (y starts with
    #   [tfl.ones_like(y)]); for each node sum its list, store it, call its gradient function and append
    #   each input's gradient to that input's list (inputs outside nodes_between get nothing)
    between = nodes_between(y, xs)
    contributions = {node: [] for node in between}
    grads = {}
    for node in backprop_order(y, xs):
        received = [tfl.ones_like(y)] if node is y else contributions[node]
        if not received:
            continue
        grad = received[0] if len(received) == 1 else tfl.add_n(received)
        grads[node] = grad
        if not node.inputs:
            continue
        fn = gradient_function(node)
        if fn is NOT_DIFFERENTIABLE:
            continue
        for inp, g in zip(node.inputs, fn(node, grad)):
            if g is not None and inp in between:
                contributions[inp].append(fit_to_input(g, inp))
    return [grads.get(x) for x in xs]
    # END SOLUTION
