"""Tensor: an array that computes at once and remembers how it was made (PyTorch-style eager mode).

Every op (the graph's op classes) takes Tensors and returns a new Tensor at once; when an input requires grad, the
result remembers the op that made it (`grad_fn`): these ops are the recorded backward graph `backward()` walks.
"""
import numbers

import numpy as np

from ..errors import ArgumentError, TinyflowError
from ..nodes import Node
from ..nodes.node import default_dtype_for
from ..dtypes import promote
from ..ops import operators, runtime_shapes
from ..ops.array_ops import checks
from ..ops.elementwise_ops import cast, equal, not_equal
from ..ops.runtime_shapes import fill


class Tensor:
    """A value with autograd: `.numpy()`, `.grad`, `.grad_fn`, `.backward()`; ops compute immediately."""

    __slots__ = ("_data", "requires_grad", "grad_fn", "_grad", "_version", "_owner", "_taint", "__weakref__")
    graph = None          # not a graph node: ops meeting a Tensor compute at once
    op_type = "Tensor"    # how error messages and pictures call a leaf
    uses = 1              # the backward walk hands a leaf each gradient contribution as it comes
    _next = ()            # and finds no parents to go on to (a recorded op's are its inputs' grad_fns)

    def __init__(self, data, requires_grad=False, dtype=None):
        self._data = np.array(data.numpy() if isinstance(data, Tensor) else data,
                              dtype=dtype if dtype is not None else default_dtype_for(data))
        self.requires_grad, self.grad_fn, self._version = False, None, 0
        self._grad = self._owner = self._taint = None
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def constant(cls, value, like=None):
        """A Tensor of `value` that requires no grad; a Python number takes the dtype of `like` as in graphs."""
        return make(np.asarray(value, dtype=default_dtype_for(value, None if like is None else like.dtype)))

    # ------------------------------------------------------------ the value
    shape = property(lambda self: self._data.shape, doc="The shape (a tuple of ints).")
    dtype = property(lambda self: self._data.dtype, doc="The numpy dtype.")
    ndim = property(lambda self: self._data.ndim, doc="The number of axes.")
    size = property(lambda self: self._data.size, doc="The number of elements.")

    def numpy(self):
        """The value as a numpy array (shared, not copied: treat it as read-only)."""
        return self._data

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        return self._data.item()

    def tolist(self):
        """The value as nested Python lists."""
        return self._data.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __len__(self):
        if not self._data.ndim:
            raise ArgumentError("len() of a 0-d tensor: it holds one value, not a sequence; use .item()")
        return len(self._data)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        if self._data.size != 1:
            raise TinyflowError(f"the truth value of a tensor of shape {self.shape} is ambiguous (an `if` or `while` "
                                "needs one value); use tfl.any(t) or tfl.all(t), e.g. `if tfl.any(x == 0):`")
        return bool(self._data)

    # elementwise like torch (boolean Tensors), where graph nodes keep identity; hashing stays by identity, so
    # Tensors remain usable as dict keys (dicts and sets compare keys by identity before ==)
    def __eq__(self, other):
        return equal(self, other) if isinstance(other, _COMPARABLE) else NotImplemented

    def __ne__(self, other):
        return not_equal(self, other) if isinstance(other, _COMPARABLE) else NotImplemented

    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise ArgumentError(f"an int is needed here (an index, a range bound, a size), and only a tensor of one "
                                f"integer can stand for one; got a tensor of shape {self.shape} and dtype {self.dtype}")
        return int(self._data.item())  # shape () or [1], as torch allows

    __hash__ = object.__hash__

    def __repr__(self):
        body = np.array2string(self._data, separator=", ", prefix="tensor(", threshold=100)
        extras = [f"dtype={self._data.dtype.name}"] if self._data.dtype != np.float32 else []
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.op_type}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    # ------------------------------------------------------------ autograd
    @property
    def is_leaf(self):
        """True for tensors not made by a recorded op (created by the user, or requiring no grad)."""
        return self.grad_fn is None

    @property
    def grad(self):
        """The gradient accumulated by backward() (a numpy array), or None; reset with `t.grad = None`."""
        grad = self._grad
        return grad.numpy() if isinstance(grad, Tensor) else grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            value = np.asarray(value)
            if value.shape != self.shape:
                raise TinyflowError(f"cannot set the gradient of a tensor of shape {self.shape} to an array of "
                                    f"shape {value.shape}")
        self._grad = value

    def zero_grad(self):
        """Forget the accumulated gradient (as `t.grad = None`)."""
        self._grad = None

    def requires_grad_(self, requires_grad=True):
        """Make this leaf tensor record gradients (or stop); returns the tensor itself."""
        if not requires_grad and self.grad_fn is not None:
            raise TinyflowError(f"cannot stop a tensor made by {self.grad_fn.op_type} from requiring grad; "
                                "use .detach() to get a tensor outside the graph")
        if requires_grad and self._data.dtype.kind != "f":
            raise TinyflowError(f"only floating-point tensors can require gradients, this one has dtype "
                                f"{self.dtype}; convert it first, e.g. tfl.tensor(x, dtype='float32')")
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self):
        """A new tensor with the same value, outside any recorded graph (requires no grad)."""
        return make(self._data)

    def clone(self):
        """A new tensor with the same value, still in the recorded graph (gradients flow through it)."""
        from ..ops import identity
        return identity(self) if self.requires_grad else make(self._data.copy())

    def backward(self, grad=None, retain_graph=False, create_graph=False):
        """Accumulate d(self)/d(leaf) into the `.grad` of every leaf that requires grad; `grad` seeds it (needed for
        non-scalars), `retain_graph` keeps the recorded graph, `create_graph` records the pass (for tfl.eager.grad)."""
        from .autograd import backward
        backward([self], None if grad is None else [grad], retain_graph or create_graph, create_graph)


_COMPARABLE = (Tensor, Node, numbers.Number, np.ndarray, np.generic, list, tuple)  # `t == None` is False


def make(data, requires_grad=False, grad_fn=None):
    """A Tensor around a numpy array, without copying or checking (the runtime's fast path)."""
    tensor = Tensor.__new__(Tensor)
    tensor._data, tensor.requires_grad, tensor.grad_fn = data, requires_grad, grad_fn  # three at most: no tuple built
    tensor._grad = tensor._owner = tensor._taint = None
    tensor._version = 0
    return tensor


def tensor(data, requires_grad=False, dtype=None):
    """A new eager Tensor holding a copy of `data` (Python floats become float32, numpy arrays keep their dtype)."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


# ------------------------------------------------------------ constructors (torch's): constants for every mode
def arange(start, stop=None, step=1, dtype=None):
    """start, start + step, ... below stop (arange(n): 0 .. n-1); ints give int64, floats float32, as torch.arange.
    Tensor bounds (a graph node: a loop's counter) are read when the op runs."""
    start, stop = (0, start) if stop is None else (start, stop)
    if any(hasattr(v, "graph") for v in (start, stop, step)):
        values = runtime_shapes.arange(start, stop, step)
        return cast(values, dtype) if dtype else values
    check = checks("arange", None)
    for argument, value in (("start", start), ("stop", stop), ("step", step)):
        check.number(argument, value)
    if step == 0:
        check.fail("step", step, "is 0", "pass a step other than 0")
    dtype = check.dtype("dtype", dtype) if dtype else promote(*map(default_dtype_for, (start, stop, step)))
    return make(np.arange(start, stop, step).astype(dtype))


def linspace(start, end, steps, dtype=None):
    """`steps` values evenly spaced from start to end, both included (torch.linspace; float32 by default)."""
    check = checks("linspace", None)
    for argument, value in (("start", start), ("end", end)):
        check.number(argument, value)
    steps = check.integer("steps", steps, minimum=0)
    return make(np.linspace(start, end, steps).astype(check.dtype("dtype", dtype or "float32")))


def eye(n, m=None, dtype=None):
    """The n × m identity matrix (m = n by default; torch.eye, float32 by default)."""
    check = checks("eye", None)
    n, m = check.integer("n", n, minimum=0), check.integer("m", n if m is None else m, minimum=0)
    return make(np.eye(n, m, dtype=check.dtype("dtype", dtype or "float32")))


def full(shape, value, dtype=None):
    """A tensor of `shape` filled with `value` (torch.full; floats float32); a tensor shape is read at run time."""
    if hasattr(shape, "graph"):
        return fill(shape, value, dtype or default_dtype_for(value))
    check = checks("full", None)
    dims = check.new_shape("shape", shape)
    if -1 in dims:
        check.fail("shape", shape, "holds -1", "give every size")
    if check.numeric_array("value", value).size != 1:
        check.fail("value", value, "is not a single number", "pass one number, e.g. 0.0")
    return make(np.full(dims, value, dtype=check.dtype("dtype", dtype) if dtype else default_dtype_for(value)))


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy ufuncs: the operator ones become ops; others compute on values when no grad is needed."""
    op = operators.OPERATOR_UFUNCS.get(ufunc)
    if op is not None and method == "__call__" and len(inputs) == 2 and not kwargs:
        return op(*inputs)
    if any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        name = operators.tfl_name_for(ufunc) or "a tfl op"
        raise TinyflowError(f"np.{ufunc.__name__} on a tensor that requires grad would lose its gradient: "
                            f"use {name}(...), or np.{ufunc.__name__}(t.detach().numpy()) for a plain value")
    plain = [x._data if isinstance(x, Tensor) else x for x in inputs]
    return getattr(ufunc, method)(*plain, **kwargs)


operators.install(Tensor, _array_ufunc)
