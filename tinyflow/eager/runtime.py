"""The eager runtime: how an op meets Tensors. Installed as `Operation.eager` when tinyflow.eager loads.

`Op(*inputs)` goes through the op's own `__init__` as in graph mode; when an
input is a Tensor, `Operation.__init__` calls `prepare` instead of adding a
node to a graph (inputs become Tensors, `infer_shape` validates them), and
the metaclass then calls `run`: the active backend's kernel computes the value
at once. If an input requires grad, the op object itself becomes the result's
`grad_fn`: it keeps its inputs, its attributes and the edges to the grad_fns
of its inputs, which is everything its registered gradient function needs.
"""
import os
import sys
import weakref

import numpy as np

from .. import backends as _backends
from ..autodiff.registry import NOT_DIFFERENTIABLE, gradient_function
from ..errors import GradientError, ShapeError, TinyflowError
from ..nodes import Node, Operation, Variable
from ..nodes.operation import describe_operands
from .grad_mode import GradMode
from .tensor import Tensor, make

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Clock:
    """Stamps in-place changes: a tensor changed after an op was recorded has a newer stamp than the op."""

    now = 0


def tick():
    """The stamp of a new in-place change."""
    Clock.now += 1
    return Clock.now


# ---------------------------------------------------------------- backends
class Dispatch:
    """The active backend and how an op's value is computed on it (chosen once, cached)."""

    def __init__(self, name=None):
        self.backend = _backends.get_backend(name)
        self.small = _small_size(self.backend)
        kind = self.backend.name
        # numpy and C compute on host arrays from the kernel table (run() does it inline); others go
        # through the backend's public kernel() (OpenCL: device arrays for the op, host values between ops)
        self.kernels = {} if kind == "numpy" else self.backend.kernels if kind == "c" else None
        self.run = self._generic

    current = None  # the active Dispatch (None until first use)

    def _generic(self, op, values):
        """Any backend, through its public kernel(): values may live on a device (OpenCL) for one op."""
        self.backend.begin_run()
        return self.backend.to_host(self.backend.kernel(op)(*values))


def _small_size(backend):
    """Below this many elements the backend routes ops to numpy (0: never)."""
    size = getattr(backend, "small_size", None)
    if size is None:
        size = getattr(sys.modules[type(backend).__module__], "SMALL", 0)
    return size


_CHOSEN = {}  # backend name -> its Dispatch, so switching back and forth costs nothing


def set_backend(name=None):
    """Choose the backend eager ops run on: "c", "numpy", "opencl" (None: $TINYFLOW_BACKEND or the best)."""
    dispatch = _CHOSEN.get(name) if name is not None else None
    if dispatch is None:
        dispatch = Dispatch(name)
        if name is not None:
            _CHOSEN[name] = dispatch
    Dispatch.current = dispatch
    return dispatch.backend


def get_backend():
    """The backend eager ops run on (chosen on first use from $TINYFLOW_BACKEND unless set_backend was called)."""
    return (Dispatch.current or _activate()).backend


def _activate():
    set_backend(None)
    return Dispatch.current


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


def user_site(_getframe=sys._getframe, _inside={}):
    """(file, line) of the innermost caller outside the tinyflow package (for error messages).

    Called from `run`, itself called from the op's metaclass: the walk starts at the caller
    of that, and remembers per code object whether it belongs to tinyflow.
    """
    frame = _getframe(3)
    while frame is not None:
        code = frame.f_code
        inside = _inside.get(code)
        if inside is None:
            inside = _inside[code] = code.co_filename.startswith(_PACKAGE_DIR)
        if not inside:
            return (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


_INFERRED = {}  # (elementwise op class, *input dtypes) -> output dtype


class EagerRuntime:
    """What `Operation` calls when it meets Tensors (see the module docstring)."""

    @staticmethod
    def adopt(op, inputs):
        """Take `op` into eager mode if its inputs hold a Tensor and no graph node: inputs become Tensors
        and the op's own infer_shape checks them. False (graph mode) otherwise.

        A Variable next to a Tensor acts as an eager leaf; an eager op stands for its output.
        """
        for x in inputs:
            if x.__class__ is not Tensor:
                tensors = _as_tensors(inputs)
                if tensors is None:
                    return False
                break
        else:
            if not inputs:
                return False
            tensors = inputs
        first = tensors[0]._data.shape
        for t in tensors:
            if t._data.shape != first:
                break
        else:
            if op.__class__.elementwise and not op.__dict__:
                # elementwise, attribute-free, one shape: only the dtype rule is left to check (remembered)
                key = (op.__class__, *[t._data.dtype for t in tensors])
                dtype = _INFERRED.get(key)
                if dtype is None:
                    dtype = _INFERRED[key] = _infer(op, tensors)[1]
                op.shape, op.dtype = first, dtype
                op.graph = None
                op.inputs = tensors
                return True
        op.shape, op.dtype = _infer(op, tensors)
        op.graph = None
        op.inputs = tensors
        return True

    @staticmethod
    def run(op):
        """Compute the op's value now; record the op as the result's grad_fn if an input requires grad."""
        inputs = op.inputs
        values = [t._data for t in inputs]
        dispatch = Dispatch.current or _activate()
        kernels = dispatch.kernels
        if kernels is None:
            out = dispatch.run(op, values)
        else:  # a host-array table backend (C): small arrays go straight to numpy, as its dispatch would
            entry = kernels.get(op.op_type)
            out = None
            if entry is not None:
                small = dispatch.small
                for v in values:
                    if v.size >= small:  # the backend's one dispatch: dtype checks, contiguity, fallback
                        out = dispatch.backend.call(entry, op, values)
                        break
            if out is None:
                out = op.compute(*values)
        if out.__class__ is not np.ndarray:
            out = np.asarray(out)
        record = False
        if GradMode.enabled:
            for t in inputs:
                if t.requires_grad:
                    record = out.dtype.kind == "f" and _differentiable(op)
                    break
        result = Tensor.__new__(Tensor)
        result._data, result.requires_grad, result._grad, result._owner, result._taint = out, record, None, None, None
        result._version = 0
        if record:
            result.grad_fn = op
            op._next = tuple([(t if t.grad_fn is None else t.grad_fn) if t.requires_grad else None for t in inputs])
            op._epoch = Clock.now
            op._output = weakref.ref(result)
            op._site = user_site()
        else:
            result.grad_fn = None
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
    """Values computed from a saved tensor that was changed in place (see autograd.py): wrong, and marked.

    Only while a gradient function runs on such a stand-in; a marked gradient that
    reaches an input needing it raises the version error, as PyTorch does.
    """

    active = False

    @staticmethod
    def spread(inputs, result):
        for t in inputs:
            if t._taint is not None:
                result._taint = t._taint
                return


def output_of(op):
    """The Tensor an eager op computed (gradient functions use `op` for its output, e.g. exp's g * op)."""
    out = op._output() if getattr(op, "_output", None) is not None else None
    if out is None:
        raise TinyflowError(f"the output of {describe(op)} is no longer available")
    if out._version > op._epoch:
        return stale_stand_in(out, op, "its output", out)
    return out


def stale_stand_in(tensor, op, what, changed):
    """A tainted copy of a saved tensor changed in place after `op` saved it."""
    stand_in = make(tensor._data, tensor.requires_grad, tensor.grad_fn)
    by = changed.grad_fn.op_type + " " if changed.grad_fn is not None else ""
    by_site = f" (the in-place {by}op at {changed.grad_fn.creation_site})" if changed.grad_fn is not None else ""
    stand_in._taint = (
        f"{describe(op)} needs {what} for its gradient, but that tensor of shape {tensor.shape} was changed "
        f"in place after the op used it{by_site}. Compute a new tensor instead of changing it in place "
        "(y = x + 1 rather than x.add_(1)), or change a copy (x.clone()) after its last use.")
    return stand_in


def describe(op):
    """"Multiply (created at train.py:12)": an eager op and where the user's code made it."""
    site = getattr(op, "_site", None)
    return f"{op.op_type}" + (f" (created at {op.creation_site})" if site else "")


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
