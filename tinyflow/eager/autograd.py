"""Eager backward: the backward walk of graph mode (autodiff/backprop.py) over the recorded ops.

Each recorded op keeps `_next`, per input its grad_fn, the leaf Tensor, or None (no gradient). Its gradient is graph
mode's registered gradient function called with Tensors, so the ops it builds compute at once (recorded when
`create_graph=True`). Leaves accumulate into `.grad`.
"""
import operator
from functools import reduce
from types import FunctionType

import numpy as np

from ..autodiff.backprop import backprop
from ..autodiff.gradients import fit_to_shape, one_per_input
from ..ops.elementwise_ops import TABLE_GRADIENTS
from ..ops.registry import GRADIENT_FUNCTIONS, NOT_DIFFERENTIABLE, gradient_function
from ..errors import TinyflowError, describe
from .grad_mode import switched
from .runtime import Clock, Taint, change_phrase, stale_stand_in
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


# What other packages (viz, optim) may read and do of the recorded graph; the underscored fields are eager's own.
def recorded_inputs(fn):
    """Per input of a recorded op its grad_fn, the leaf Tensor or None (no gradient); None once freed, () for a leaf."""
    return fn._next


def recorded_output(fn):
    """The value (a numpy array) a recorded op computed, None once backward freed it."""
    return fn._out


def leaf_variable(leaf):
    """The Variable a leaf Tensor stands for (a layer's weight, whose `.grad` its gradients go to), or None."""
    return leaf._owner


def changed_in_place(param, value=None):
    """Say that a leaf Tensor (now holding the array `value`, if given) or a Variable's eager leaf was changed in place
    outside the recorded graph (an optimizer step): recorded ops that saved it must not backprop through it."""
    leaf = param if isinstance(param, Tensor) else param.__dict__.get("_eager_leaf")
    if leaf is not None:
        if value is not None:
            leaf._data = value
        Clock.now += 1
        leaf._version = Clock.now


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


def _dependencies(nodes):
    """For each op reachable from `nodes` (leaf Tensors among them are skipped): how many edges lead into it."""
    stack = [n for n in nodes if n.__class__ is not Tensor]
    counts = dict.fromkeys(stack, 0)
    while stack:
        fn = stack.pop()
        edges = fn._next
        if edges is None:
            raise _freed_error(fn)
        for e in edges:
            if e is not None and e.__class__ is not Tensor:
                if e not in counts:
                    stack.append(e)
                counts[e] = counts.get(e, 0) + 1
    return counts


def _freed_error(fn):
    return TinyflowError(
        f"trying to run backward through {describe(fn)} a second time: the values it saved were freed by the "
        "first backward(). Pass retain_graph=True to the first backward() if you need to run it again, or "
        "recompute the forward pass.")


def _unusual_call(gradient, fn, grad):
    """fn's gradients when the plain call does not do: not differentiable, no gradient function (the GradientError),
    or tensors changed in place since fn was recorded: stale saved inputs and outputs become tainted stand-ins."""
    if gradient.__class__ is not FunctionType:
        gradient = gradient_function(fn)
        if gradient is NOT_DIFFERENTIABLE:
            return [None] * len(fn._next)
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
    return fit_to_shape(grad, fn, index, grad._data.shape, inp._data.shape)


def _fitted(input_grads, fn, grad):
    """One gradient per input of fn, each summed to its input's shape where broadcasting widened it."""
    if input_grads.__class__ is not list or len(input_grads) != len(fn._next):
        input_grads = one_per_input(input_grads, fn)
    same, edges = fn._same_shapes, fn._next  # same: the output's gradient fits every input
    for index, g in enumerate(input_grads):
        if g is not None and (g is not grad or not same) and edges[index] is not None and (
                g.__class__ is not Tensor or g._taint is not None
                or g._data.shape != fn.inputs[index]._data.shape):
            input_grads[index] = _fit(g, fn, index)
    return input_grads


class EagerWalk:
    """The backward walk's (autodiff/backprop.py) eager side: an op's parents are its edges `_next`, a leaf Tensor has
    none and takes each contribution as it comes. An op waits for as many contributions as recorded ops took its
    output (`uses`), right when all lead to the roots (a training step); else `recount` counts exactly."""

    def __init__(self, sink, retain_graph, create_graph):
        self.sink, self.retain_graph, self.create_graph = sink, retain_graph, create_graph
        # ops recorded at this stamp take the plain call (nothing changed in place since); none does inside a
        # gradient function running on tainted stand-ins. The stamp cannot move while the walk runs
        self.plain_epoch = -1 if Taint.active else Clock.now

    def parents(self, fn, grad):
        """(edges, gradients) of a recorded op: its registered gradient function's, fit to each input's shape."""
        edges = fn._next
        gradient = GRADIENT_FUNCTIONS.get(fn.__class__)
        if edges and fn._epoch == self.plain_epoch and grad is not None and gradient.__class__ is FunctionType:
            input_grads = gradient(fn, grad)  # the plain call: nothing changed in place since fn ran
            # a table op's gradients on inputs of the output's shape have that shape: nothing to fit
            if not (fn._same_shapes and gradient in TABLE_GRADIENTS):
                input_grads = _fitted(input_grads, fn, grad)
        elif not edges:
            if edges is None:
                raise _freed_error(fn)
            return None  # a leaf Tensor (whose _next is ())
        elif grad is None:
            return edges, (None,) * len(edges)
        else:
            input_grads = _fitted(_unusual_call(gradient, fn, grad), fn, grad)
        if not self.retain_graph:  # free what fn saved: its gradient is done
            fn._next, fn.inputs, fn._out = None, (), None
        return edges, input_grads

    @staticmethod
    def add(node, contributions):
        return reduce(operator.add, contributions) if contributions else None

    def deliver(self, leaf, grad):
        """Add a leaf's gradient into the sink, or its `.grad` (a Variable's leaf: the Variable's numpy `.grad`)."""
        if grad is None:
            return
        if self.sink is not None:
            if leaf in self.sink:
                old = self.sink[leaf]
                self.sink[leaf] = grad if old is None else old + grad
            return
        owner = leaf._owner
        if not self.create_graph:
            grad = grad._data
        if owner is None:
            leaf._grad = grad if leaf._grad is None else leaf._grad + grad
        else:
            total = grad if owner.grad is None else owner.grad + grad
            owner.grad = total._data if isinstance(total, Tensor) else total
    recount = staticmethod(_dependencies)


def backward(roots, grads=None, retain_graph=False, create_graph=False, sink=None, trace=None):
    """Backpropagate from `roots` (seeded with `grads`, default ones) into the leaves' `.grad`, or into `sink` (a dict
    leaf -> None, what grad() returns); `trace(step)` sees each step (tfl.viz.eager_backprop_steps draws it)."""
    grads = [None] * len(roots) if grads is None else list(grads)
    seeds = {}
    for root, grad in zip(roots, grads):
        if not root.requires_grad:
            raise TinyflowError("backward() on a tensor that does not require grad: no input of its "
                                "computation had requires_grad=True (or it ran under tfl.no_grad())")
        seed = _seed(root, grad)
        node = root.grad_fn if root.grad_fn is not None else root
        seeds[node] = seeds[node] + seed if node in seeds else seed
    # a trace sees the exact counts from the start; otherwise they are guessed as ops are reached
    pending = {} if trace is None else _dependencies(seeds)
    # gradient functions also compute gradients nobody asked for (x ** 2 computes one for the 2, with
    # log(x)): like PyTorch, backward does not warn about their nan or inf
    with switched(create_graph), np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        backprop(seeds, pending, EagerWalk(sink, retain_graph, create_graph), trace)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of `outputs` with respect to `inputs` as Tensors (torch.autograd.grad); `.grad` is untouched.
    With `create_graph=True` they are recorded too, to be differentiated again (second derivatives)."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    for x in inputs:
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise TinyflowError(f"grad() needs inputs that are tensors requiring grad, got {x!r}")
        if x.grad_fn is not None:
            raise TinyflowError("grad() with respect to a non-leaf tensor is not supported: "
                                "take the gradient with respect to the leaves it was computed from")
    sink = dict.fromkeys(inputs)
    backward(outputs, grad_outputs, create_graph if retain_graph is None else retain_graph, create_graph, sink)
    unused = [x for x in inputs if sink[x] is None]
    if unused and not allow_unused:
        raise TinyflowError(f"a tensor of shape {unused[0].shape} passed to grad() was not used to compute the "
                            "outputs; pass allow_unused=True to get None for it")
    result = [g if g is None or create_graph else make(g._data) for g in map(sink.get, inputs)]
    return result[0] if single else result
