"""Eager backward: a topological walk over the recorded grad_fns, calling the registered gradient functions.

The ops recorded in the forward pass are the graph: each op keeps `_next`, the
grad_fn of each input (or the leaf Tensor itself, or None when the input needs
no gradient). `backward` processes an op once every edge leading into it from
the roots' graph delivered its contribution (Kahn's algorithm, as the graph-mode
`tfl.gradients`). How many that is, each op counted while it was recorded
(`_uses`: the recorded ops that took its output); when some of those never lead
to the roots, the walk runs out early and counts the rest of the graph exactly.
Each op's gradient comes from the same registered gradient function as in graph
mode, called with Tensors, so the ops it builds compute at once (and are
recorded when `create_graph=True`). Leaves accumulate into `.grad`.
"""
import numpy as np

from ..ops.registry import _GRADIENTS, NOT_DIFFERENTIABLE, gradient_function
from ..errors import GradientError, TinyflowError
from ..nodes import OP_TYPES
from ..shapes import can_reduce_to
from .grad_mode import GradMode
from .runtime import Clock, Taint, change_phrase, describe, stale_stand_in
from .tensor import Tensor, make


class LeafGradFn:
    """The end of a backward path: accumulates the gradient into a leaf's `.grad` (torch's AccumulateGrad)."""

    op_type = "LeafGradFn"
    _next = ()

    def __init__(self, tensor):
        self.variable = tensor

    def __repr__(self):
        return f"<LeafGradFn of a tensor of shape {self.variable.shape}>"


def next_functions(fn):
    """The grad_fns an op's gradient flows into, one per input (LeafGradFn for leaves, None for no gradient)."""
    return tuple(LeafGradFn(e) if isinstance(e, Tensor) else e for e in fn._next or ())


def _seed(root, grad):
    if grad is None:
        if root.size != 1:
            raise TinyflowError(f"backward() on a tensor of shape {root.shape} needs `grad` (the gradient of "
                                "what you differentiate with respect to it); for a scalar loss call it on "
                                "loss.sum() or loss.mean(), or pass grad=np.ones(shape)")
        return make(np.ones_like(root._data))
    value = grad._data if isinstance(grad, Tensor) else np.asarray(grad, dtype=root.dtype)
    if value.shape != root.shape:
        raise TinyflowError(f"backward(grad) got a gradient of shape {value.shape} for a tensor of shape "
                            f"{root.shape}; they must match")
    return grad if isinstance(grad, Tensor) else make(value)


def _accumulate(leaf, grad, create_graph):
    """leaf.grad += grad (a Variable's leaf accumulates into the Variable's `.grad`)."""
    target = leaf._owner if leaf._owner is not None else leaf
    if not create_graph:
        grad = grad._data
    old = target._grad if isinstance(target, Tensor) else target.grad
    new = grad if old is None else old + grad
    if isinstance(target, Tensor):
        target._grad = new
    else:
        target.grad = new._data if isinstance(new, Tensor) else new


def _dependencies(roots):
    """For each op reachable from the roots: how many edges lead into it."""
    counts, stack = {}, list(roots)
    for fn in roots:
        counts.setdefault(fn, 0)
    while stack:
        fn = stack.pop()
        edges = fn._next
        if edges is None:
            raise _freed_error(fn)
        for e in edges:
            if e is None or e.__class__ is Tensor:
                continue
            if e in counts:
                counts[e] += 1
            else:
                counts[e] = 1
                stack.append(e)
    return counts


def _freed_error(fn):
    return TinyflowError(
        f"trying to run backward through {describe(fn)} a second time: the values it saved were freed by the "
        "first backward(). Pass retain_graph=True to the first backward() if you need to run it again, or "
        "recompute the forward pass.")


def _gradients_of(fn, grad):
    """Call fn's registered gradient function with Tensors; one gradient (or None) per input."""
    gradient = gradient_function(fn)
    if gradient is NOT_DIFFERENTIABLE:
        return [None] * len(fn.inputs)
    if fn._epoch == Clock.now and not Taint.active:  # nothing changed in place since: the plain call
        result = gradient(fn, grad)
    else:
        result = _guarded_call(gradient, fn, grad)
    return result if result.__class__ is list and len(result) == len(fn.inputs) else _one_per_input(result, fn)


def _one_per_input(result, fn):
    """A gradient function's result as a list of one gradient per input, or the GradientError saying why not."""
    if result is None or not isinstance(result, (list, tuple)):
        result = [result]
    if len(result) != len(fn.inputs):
        raise GradientError(f"the gradient function of {describe(fn)} returned {len(result)} gradient(s) for "
                            f"{len(fn.inputs)} input(s); return exactly one per input (None where there is none).")
    return list(result)


def _guarded_call(gradient, fn, grad):
    """The gradient function's call when tensors changed in place since fn was recorded: stale saved
    inputs (and outputs, see runtime.output_of) become tainted stand-ins."""
    stale = any(t._version > fn._epoch for t in fn.inputs)
    saved = fn.inputs
    if stale:  # some saved input changed in place since: hand out tainted stand-ins
        fn.inputs = tuple(stale_stand_in(t, fn, f"input {i}", change_phrase(t.grad_fn))
                          if t._version > fn._epoch else t for i, t in enumerate(saved))
    taint_before, Taint.active = Taint.active, Taint.active or stale or fn._epoch != Clock.now
    try:
        return gradient(fn, grad)
    finally:
        Taint.active, fn.inputs = taint_before, saved


def _fit(grad, fn, index):
    """The gradient for input `index`, summed to its shape if broadcasting widened it (graph mode's rule)."""
    inp = fn.inputs[index]
    if not isinstance(grad, Tensor):
        grad = Tensor.constant(grad, like=inp)
    if grad._taint is not None:
        raise TinyflowError(grad._taint)
    if grad._data.shape == inp._data.shape:
        return grad
    if not can_reduce_to(grad.shape, inp.shape):
        raise GradientError(
            f"the gradient function of {describe(fn)} returned a gradient of shape {grad.shape} for input "
            f"{index} (shape {inp.shape}); it must have the input's shape, or a shape that broadcasting made "
            f"from it. Fix the gradient function registered for '{fn.op_type}'.")
    return OP_TYPES["SumToShapeOf"](grad, inp)  # graph mode's one unbroadcasting op


def backward(roots, grads=None, retain_graph=False, create_graph=False, sink=None, trace=None):
    """Backpropagate from `roots` (seeded with `grads`, default ones for scalars) into the leaves.

    With `sink` (a dict leaf -> None), gradients of those tensors are collected there
    instead of accumulated into `.grad` (what `grad()` returns). `trace(fn, grad, counts)`,
    if given, sees each op as it is processed (tfl.viz.eager_backprop_steps draws it).
    """
    grads = [None] * len(roots) if grads is None else list(grads)
    pending, start = {}, []
    for root, grad in zip(roots, grads):
        if not root.requires_grad:
            raise TinyflowError("backward() on a tensor that does not require grad: no input of its "
                                "computation had requires_grad=True (or it ran under tfl.no_grad())")
        seed = _seed(root, grad)
        fn = root.grad_fn
        if fn is None:
            _deliver(root, seed, sink, create_graph)
        elif fn in pending:
            pending[fn] = pending[fn] + seed
        else:
            pending[fn] = seed
            start.append(fn)
    # how many contributions each op still waits for. The first guess is how many recorded ops took its
    # output (`_uses`, counted as they were recorded): right when all of them lead to the roots, as in
    # a training step. An op that also fed something else waits forever: when the walk runs out, the
    # part of the graph still waiting is counted exactly (Kahn's algorithm, as graph mode's
    # tfl.gradients) and the walk goes on. A trace sees the exact counts from the start.
    counts = {fn: fn._uses for fn in start} if trace is None else _dependencies(start)
    # ops whose gradient is complete, with that gradient; pending holds the partial sums of the others
    ready = [(fn, pending.pop(fn)) for fn in start if counts[fn] == 0]
    previous, GradMode.enabled = GradMode.enabled, create_graph
    # gradient functions also compute gradients nobody asked for (x ** 2 computes one for the 2, with
    # log(x)): like PyTorch, backward does not warn about their nan or inf
    errstate = np.errstate(divide="ignore", invalid="ignore", over="ignore")
    errstate.__enter__()
    try:
        _walk(ready, counts, pending, sink, retain_graph, create_graph, trace)
        if any(counts.values()):  # ops that also fed ops the roots do not reach: count the rest exactly
            waiting = [fn for fn, left in counts.items() if left]
            counts = _dependencies(waiting)
            for fn in waiting:
                if counts[fn] == 0:
                    if fn in pending:
                        ready.append((fn, pending.pop(fn)))
                    else:
                        _skip(fn, counts, ready, pending)
            _walk(ready, counts, pending, sink, retain_graph, create_graph, trace)
    finally:
        GradMode.enabled = previous
        errstate.__exit__(None, None, None)


def _walk(ready, counts, pending, sink, retain_graph, create_graph, trace):
    """Process ready ops until there is none: call each one's gradient function, hand the gradients to
    the ops and leaves its edges lead to, and add the ops that got their last contribution to `ready`.

    The op that became ready last is processed next without going through `ready` (a chain of ops
    whose outputs have one consumer each never touches it).
    """
    gradients = _GRADIENTS  # the registry's own table: one dict lookup per op (gradient_function raises if none)
    fn = None
    while fn is not None or ready:
        if fn is None:
            fn, grad = ready.pop()
        edges = fn._next
        if edges is None:
            raise _freed_error(fn)
        gradient = gradients.get(fn.__class__)
        if fn._epoch == Clock.now and not Taint.active and gradient is not None \
                and gradient is not NOT_DIFFERENTIABLE:
            input_grads = gradient(fn, grad)  # the plain call: nothing changed in place since fn ran
            if input_grads.__class__ is not list or len(input_grads) != len(edges):
                input_grads = _one_per_input(input_grads, fn)
        else:
            input_grads = _gradients_of(fn, grad)
        inputs = fn.inputs
        same = fn._same_shapes  # the output's gradient fits every input
        after = after_grad = None  # the op to process next
        for index, edge in enumerate(edges):
            if edge is None:
                continue
            g = input_grads[index]
            if g is not None and (g.__class__ is not Tensor or g._taint is not None or (
                    g is not grad or not same) and g._data.shape != inputs[index]._data.shape):
                g = _fit(g, fn, index)
            if edge.__class__ is Tensor:
                if g is not None:
                    _deliver(edge, g, sink, create_graph)
                continue
            known = counts.get(edge)
            left = (edge._uses if known is None else known) - 1  # an op reached first: its first guess
            if left or known is not None:  # (an op released at its first contribution stays out)
                counts[edge] = left
            if left:  # more consumers of edge's output still owe their contribution
                if g is not None:
                    old = pending.get(edge)
                    pending[edge] = g if old is None else old + g
                continue
            if pending:  # the last contribution: edge is ready, with the partial sum of the others
                old = pending.pop(edge, None)
                if old is not None:
                    g = old if g is None else old + g
            if g is None:  # every contribution was None: nothing flows on
                _skip(edge, counts, ready, pending)
            else:
                if after is not None:
                    ready.append((after, after_grad))
                after, after_grad = edge, g
        if not retain_graph:  # free what fn saved: its gradient is done
            fn._next = None
            fn.inputs = ()
            fn._out = None
        if trace is not None:
            trace(fn, grad, dict(counts))
        fn, grad = after, after_grad


def _skip(fn, counts, ready, pending):
    """An op that received no gradient at all: its inputs get none from it either."""
    stack = [fn]
    while stack:
        fn = stack.pop()
        for edge in fn._next or ():
            if edge is None or edge.__class__ is Tensor:
                continue
            left = counts.get(edge)
            left = counts[edge] = (edge._uses if left is None else left) - 1
            if left == 0:
                (ready.append((edge, pending.pop(edge))) if edge in pending else stack.append(edge))


def _deliver(leaf, grad, sink, create_graph):
    if sink is None:
        _accumulate(leaf, grad, create_graph)
    elif leaf in sink:
        old = sink[leaf]
        sink[leaf] = grad if old is None else old + grad


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of `outputs` with respect to `inputs` as Tensors (torch.autograd.grad); `.grad` is untouched.

    With `create_graph=True` the returned gradients are recorded too, so they can be
    differentiated again (second derivatives).
    """
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    sink = {}
    for x in inputs:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise TinyflowError(f"grad() needs inputs that are tensors requiring grad, got {x!r}")
        if x.grad_fn is not None:
            raise TinyflowError("grad() with respect to a non-leaf tensor is not supported: "
                                "take the gradient with respect to the leaves it was computed from")
        sink[x] = None
    backward(outputs, grad_outputs, create_graph if retain_graph is None else retain_graph, create_graph, sink)
    result = []
    for x in inputs:
        g = sink[x]
        if g is None and not allow_unused:
            raise TinyflowError(f"a tensor of shape {x.shape} passed to grad() was not used to compute the "
                                "outputs; pass allow_unused=True to get None for it")
        result.append(g if g is None or create_graph else make(g._data))
    return result[0] if single else result
