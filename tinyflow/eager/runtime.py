"""The eager runtime: how an op meets Tensors. Installed as `Operation.eager` when tinyflow.eager loads.

`Op(*inputs)` runs the op's own `__init__`; when an input is a Tensor, `Operation.__init__` calls `adopt` instead of
adding a graph node (`infer_shape` validates the inputs), then the metaclass calls `run`: the active backend computes
the value at once. If an input requires grad, the op itself becomes the result's `grad_fn`, keeping what its gradient
function needs: inputs, attributes, output value, and the edges to its inputs' grad_fns.

Plain elementwise ops on Tensors of one dtype, most of a training loop's small ops, take a shortcut with the same result
(`_op_shortcut`, the Tensor operators themselves). Their cost is what a PyTorch user's Python loop pays, so it is a few
attribute stores: no reference cycles (the garbage collector would have to free them), and the creation site a shared
(code, offset) pair, turned into "file:line" only when an error message needs it.
"""
from sys import _getframe

import numpy as np

from .. import backends as _backends
from ..ops.registry import NOT_DIFFERENTIABLE, gradient_function
from ..errors import GradientError, ShapeError, TinyflowError, describe
from ..shapes import broadcast_shapes
from ..nodes import Node, Operation, Variable
from ..nodes.node import USER_SITES, user_site
from ..nodes.operation import describe_operands
from ..ops import operators
from ..ops.elementwise_ops import ElementwiseOp
from .grad_mode import GradMode
from .tensor import Tensor, make


class Clock:
    """Stamps in-place changes (`changed_in_place`): a tensor changed after an op was recorded has a newer stamp."""

    now = 0


# ---------------------------------------------------------------- the backend eager ops run on
class Active:
    """The backend eager ops compute on, and `host_below`: smaller plain ops compute at once in numpy (no lookup)."""

    backend = None
    host_below = -1  # -1 until first use: the first plain op chooses the backend


_CHOSEN = {}  # backend name -> the backend, so switching back and forth costs nothing


def set_backend(name=None):
    """Choose the backend eager ops run on: "c", "numpy", "opencl" (None: $TINYFLOW_BACKEND or the best)."""
    backend = _CHOSEN.get(name)
    if backend is None:
        backend = _backends.get_backend(name)
        if name is not None:
            _CHOSEN[name] = backend
    Active.backend, Active.host_below = backend, backend.host_below
    return backend


def get_backend():
    """The backend eager ops run on (chosen on first use from $TINYFLOW_BACKEND unless set_backend was called)."""
    return Active.backend or set_backend(None)


# ---------------------------------------------------------------- the hook
def _differentiable(op, cache={}):
    """Whether outputs of this op's class can carry gradients (not marked not_differentiable)."""
    flag = cache.get(op.__class__)
    if flag is None:
        try:
            flag = gradient_function(op) is not NOT_DIFFERENTIABLE
        except GradientError:
            flag = True  # no gradient registered: backward() will say so, naming the op
        cache[op.__class__] = flag
    return flag


_INFERRED = {}  # (attribute-free op class, *input shapes, *input dtypes) -> (output shape, output dtype)


def _plain_dtype(cls, dtypes, tensors):
    """(output dtype, records, kernel) of plain class cls on these tensors (of one dtype), remembered in dtypes."""
    op = cls.__new__(cls)  # compute's `self`: plain ops read only its dtype
    op.dtype = dtype = _infer(op, tensors)[1]
    ones = [np.ones(1, t._data.dtype) for t in tensors]
    with np.errstate(all="ignore"):  # the bare expression does when numpy's own result dtype is the op's
        kernel = cls.kernel if cls.kernel is not None and cls.kernel(*ones).dtype == dtype else op.compute
    entry = dtypes[tensors[0]._data.dtype] = (dtype, dtype.kind == "f" and _differentiable(op), kernel)
    return entry


def _op_shortcut(cls, fallback):
    """The shortcut of plain class cls (elementwise, one or two inputs, no attribute: the shape is the inputs' broadcast
    shape, the dtype asked once per input dtype), or None: `unary(x, fallback)` / `binary(a, b, fallback)` is cls(x) /
    cls(a, b) for Tensors of one dtype whose shapes broadcast, else fallback(...) (None: return None). A closure per
    class, so that `a + b` costs one Python call; at most three names per assignment (more would build a tuple)."""
    if not issubclass(cls, ElementwiseOp) or cls.attributes or len(cls.input_names) not in (1, 2):
        return None
    dtypes = {}  # input dtype -> (output dtype, whether results record a grad_fn, kernel)
    new, ndarray = object.__new__, np.ndarray
    known = [None]  # the shape of the last op made
    last = [None, None, None]  # the last caller's (code, offset, creation site): a loop calls from one line

    def binary(a, b, fallback=fallback):
        if a.__class__ is not Tensor or b.__class__ is not Tensor:
            pair = _leaf_pair(a, b)  # a layer's Variable next to a Tensor stands for its eager leaf
            if pair is None:
                return None if fallback is None else fallback(a, b)
            a, b = pair
        da, db = a._data, b._data
        shape, dtype, size = da.shape, da.dtype, da.size
        same = True
        if shape != db.shape or dtype is not db.dtype:  # broadcasting (a bias add), or mixed dtypes
            shape = _broadcast(shape, db.shape) if dtype is db.dtype else None
            if shape is None:  # the generic path promotes dtypes, or raises the ShapeError
                return None if fallback is None else fallback(a, b)
            same = False
            if db.size > size:
                size = db.size
        entry = dtypes.get(dtype) or _plain_dtype(cls, dtypes, (a, b))
        op = new(cls)
        op.graph, op.inputs = None, (a, b)
        if shape == known[0]:  # a loop's ops share one shape tuple: one object less for the garbage collector
            shape = known[0]
        else:
            known[0] = shape
        op.shape, op.dtype = shape, entry[0]
        if size < Active.host_below:  # the backend would hand it to numpy: do so at once
            out = entry[2](da, db)
            if out.__class__ is not ndarray:
                out = np.asarray(out)
        else:
            out = (Active.backend or set_backend(None)).compute(op, [da, db])
        result = new(Tensor)
        result._data, result._version = out, 0
        result._grad = result._owner = result._taint = None
        if (a.requires_grad or b.requires_grad) and entry[1] and GradMode.enabled:  # _tensor_of, written out
            result.requires_grad, result.grad_fn = True, op
            edge_a = a.grad_fn if a.requires_grad else None  # the edges, counted on the ops they lead to
            if edge_a is not None:
                edge_a.uses += 1
            elif a.requires_grad:
                edge_a = a
            edge_b = b.grad_fn if b.requires_grad else None
            if edge_b is not None:
                edge_b.uses += 1
            elif b.requires_grad:
                edge_b = b
            op._next, op.uses, op._epoch = (edge_a, edge_b), 0, Clock.now
            op._out, op._same_shapes = out, same
            frame = _getframe(1)
            if frame.f_code is not last[0] or frame.f_lasti != last[1]:  # else: the same line as last time
                _find_site(frame, last)
            op.site = last[2]
        else:
            result.requires_grad, result.grad_fn = False, None
        if Taint.active:
            Taint.spread(op.inputs, result)
        return result

    def unary(x, fallback=fallback):  # binary's first steps for one input, whose shape the output has
        if x.__class__ is not Tensor:
            return None if fallback is None else fallback(x)
        data = x._data
        entry = dtypes.get(data.dtype) or _plain_dtype(cls, dtypes, (x,))
        op = new(cls)
        op.graph, op.inputs, op.shape, op.dtype = None, (x,), data.shape, entry[0]
        return _tensor_of(op, (x,), _computed(op, [data], entry[2]), entry[1], same_shapes=True)

    return binary if len(cls.input_names) == 2 else unary


def _find_site(frame, last):
    """Set last[2] to the creation site of a shortcut's op called from `frame`; last[:2] keeps a user's line, so the
    next call from there is known at once."""
    code, offset = frame.f_code, frame.f_lasti
    sites = USER_SITES.get(code)  # holds codes outside tinyflow only
    site = None if sites is None else sites.get(offset)
    if site is None:  # tinyflow's own code (e.g. the metaclass path), or a new line: walk out
        last[0] = last[1] = None
        last[2] = user_site(2)  # user_site <- _find_site <- the shortcut <- frame
    else:
        last[0], last[1], last[2] = code, offset, site


def _leaf_pair(a, b):
    """(a, b) as Tensors when one is a Tensor and the other a Variable, standing for its eager leaf; else None."""
    if a.__class__ is Tensor and isinstance(b, Variable):
        return a, variable_leaf(b)
    if b.__class__ is Tensor and isinstance(a, Variable):
        return variable_leaf(a), b
    return None


def _broadcast(a, b):
    """The broadcast shape of input shapes a and b (remembered), or None when they do not broadcast."""
    shape = _BROADCASTS.get((a, b))
    if shape is None:
        try:
            shape = _remember(_BROADCASTS, (a, b), broadcast_shapes(a, b))
        except ShapeError:
            return None
    return shape


def _remember(cache, key, value):
    """cache[key] = value, the cache emptied first when full (a program with ever new shapes); returns value."""
    if len(cache) > 4096:
        cache.clear()
    cache[key] = value
    return value


_BROADCASTS = {}  # (input shape, input shape) -> their broadcast shape, for plain binary ops
_SHORTCUTS = {}  # op class -> its shortcut or None, see _op_shortcut


def operator(cls, fn):
    """The Tensor method for op class cls with op function fn (`Tensor.__add__` = operator(Add, tfl.add))."""
    return _op_shortcut(cls, fn) or fn


class EagerRuntime:
    """What `Operation` calls when it meets Tensors (see the module docstring)."""

    Tensor = Tensor

    @staticmethod
    def adopt(op, inputs):
        """Take `op` into eager mode (True) if its inputs hold a Tensor and no graph node, checked by infer_shape."""
        tensors = inputs if inputs and all(x.__class__ is Tensor for x in inputs) else _as_tensors(inputs)
        if tensors is None:
            return False
        if op.__dict__:
            op.shape, op.dtype = _infer(op, tensors)
        else:  # attribute-free: shape and dtype depend on the input shapes and dtypes only (remembered)
            key = (op.__class__, *[t._data.shape for t in tensors], *[t._data.dtype for t in tensors])
            op.shape, op.dtype = _INFERRED.get(key) or _remember(_INFERRED, key, _infer(op, tensors))
        op.graph, op.inputs = None, tensors
        return True

    @staticmethod
    def run(op):
        """Compute the op's value now; record the op as the result's grad_fn if an input requires grad."""
        out = _computed(op, [t._data for t in op.inputs], op.compute)
        return _tensor_of(op, op.inputs, out, out.dtype.kind == "f" and _differentiable(op))

    @staticmethod
    def call(cls, args, kwargs):
        """`cls(*args)` when the class's shortcut takes it (see `_op_shortcut`), else None (the generic path)."""
        if kwargs and (len(kwargs) > 1 or "name" not in kwargs):  # eager ops have no name; others: generic
            return None
        shortcut = _SHORTCUTS.get(cls, False)
        if shortcut is False:
            shortcut = _SHORTCUTS[cls] = _op_shortcut(cls, None)
        if shortcut is None or len(args) != len(cls.input_names):
            return None
        return shortcut(*args, None)


def _computed(op, values, kernel):
    """op's value through the backend's kernel table, or `kernel` at once when every input is below `host_below`."""
    for value in values:
        if value.size >= Active.host_below:
            return (Active.backend or set_backend(None)).compute(op, values)
    return np.asarray(kernel(*values))


def _tensor_of(op, inputs, out, records, same_shapes=False):
    """A Tensor of op's value `out`; op becomes its grad_fn when it `records` gradients and an input requires grad,
    keeping its edges, its output value (the Tensor would be a cycle) and the user's line. `_same_shapes`: the
    output's gradient fits every input unchecked; `uses`: backward's first guess of the contributions it waits for."""
    result = make(out)
    if records and GradMode.enabled and any(t.requires_grad for t in inputs):
        result.requires_grad, result.grad_fn = True, op
        op._next = tuple([(t if t.grad_fn is None else t.grad_fn) if t.requires_grad else None for t in inputs])
        for edge in op._next:
            if edge is not None and edge.__class__ is not Tensor:
                edge.uses += 1
        op.uses, op._epoch, op._out, op._same_shapes = 0, Clock.now, out, same_shapes
        op.site = user_site(2)  # (it walks out of tinyflow's frames to the user's)
    if Taint.active:
        Taint.spread(inputs, result)
    return result


def _infer(op, tensors):
    """(shape, dtype) from the op's own infer_shape / infer_dtype: the same checks as in graph mode."""
    try:
        return (op.infer_shape(*[t._data.shape for t in tensors]),
                op.infer_dtype(*[t._data.dtype for t in tensors]))
    except ShapeError as err:
        raise ShapeError(f"{op.op_type}: {err} [operands: {describe_operands(tensors)}]") from None


def _as_tensors(inputs):
    """The inputs as Tensors, or None when there is no Tensor among them or a graph node is."""
    like = None
    for x in inputs:
        if isinstance(x, Tensor):
            like = x
        elif isinstance(x, Node) and x.graph is not None and not isinstance(x, Variable):
            return None  # graph mode: Tensors become Constants of their value
    if like is None and not any(isinstance(x, Node) and x.graph is None for x in inputs) and not (
            Operation.eager_variables and any(isinstance(x, Variable) for x in inputs)):
        return None
    tensors = []
    for x in inputs:
        if isinstance(x, Tensor):
            tensors.append(x)
        elif isinstance(x, Node):
            tensors.append(output_of(x) if x.graph is None else variable_leaf(x))
        else:
            tensors.append(Tensor.constant(x, like))
    return tuple(tensors)


class Taint:
    """Marks values computed from a stale stand-in (autograd.py): a marked gradient reaching an input raises."""

    active = False

    @staticmethod
    def spread(inputs, result):
        for t in inputs:
            if t._taint is not None:
                result._taint = t._taint
                return


def output_of(op):
    """The Tensor of an eager op's saved output, grad_fn the op (gradient functions use `op` for it: exp's g * op)."""
    out = getattr(op, "_out", None)
    if out is None:
        raise TinyflowError(f"the output of {describe(op)} is no longer available")
    tensor = make(out, True, op)
    changed = getattr(op, "_changed_by", None)
    if changed is not None:  # the output Tensor was changed in place after the op made it
        return stale_stand_in(tensor, op, "its output", changed)
    return tensor


def stale_stand_in(tensor, op, what, changed_by):
    """A tainted copy of a saved tensor changed in place after `op` saved it (`changed_by`: see `change_phrase`)."""
    stand_in = make(tensor._data, tensor.requires_grad, tensor.grad_fn)
    stand_in._taint = (
        f"{describe(op)} needs {what} for its gradient, but that tensor of shape {tensor.shape} was changed "
        f"in place after the op used it{changed_by}. Compute a new tensor instead of changing it in place "
        "(y = x + 1 rather than x.add_(1)), or change a copy (x.clone()) after its last use.")
    return stand_in


def change_phrase(fn):
    """" (the in-place Add op at train.py:12)" for the recorded op `fn` that changed a tensor, "" for none."""
    return f" (the in-place {fn.op_type} op at {fn.creation_site})" if fn is not None else ""


def variable_leaf(var):
    """The eager leaf Tensor standing for a Variable: same value array, gradients go to `var.grad`."""
    value = var.value
    leaf = var.__dict__.get("_eager_leaf")
    if leaf is None or leaf._data is not value:
        leaf = make(value, var.trainable)
        leaf._owner = var
        var._eager_leaf = leaf
    return leaf


Operation.eager = EagerRuntime
operators.connect_eager(Tensor, operator)
