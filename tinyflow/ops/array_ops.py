"""Ops that move data around: reshape (to a static or run-time shape), transpose, concat, slicing (get_item), identity,
stop_gradient, add_n."""
import math
from types import SimpleNamespace

import numpy as np

from ..arguments import Arguments, is_int, rank_of
from ..errors import ShapeError
from ..nodes import Constant, Node, Operation, is_eager
from ..shapes import is_fully_known
from .broadcasting import LikeOperation, ShapedLike
from .registry import not_differentiable, op_function, register_gradient
from .elementwise_ops import zeros_like


def checks(function, name, *inputs):
    """The argument checks of a function built of other ops: its errors name the function (e.g. "roll")."""
    return Arguments(SimpleNamespace(op_type=function), name, *inputs)


def axis_size(check, x, axis):
    """(axis normalised, its size): the functions rearranging an axis need its size when the graph is built."""
    axis = check.axis("axis", axis, rank_of(x))
    if x.shape[axis] is None:
        check.fail("axis", axis, f"has a size known only at run time (input shape {x.shape})",
                   "give the input a static size along that axis")
    return axis, x.shape[axis]


def _node_list(function, name, xs):
    """The list of inputs of a function that takes a list (concat, add_n, stack); a single node is a mistake."""
    if isinstance(xs, Node) or not hasattr(xs, "__iter__"):
        checks(function, name).fail("xs", xs, "is not a list", "pass a list of nodes, e.g. [a, b]")
    return list(xs)


class Reshape(Operation):
    """x with a new shape of the same size; one dimension may be -1 (inferred).  Gradient: g reshaped back."""

    def __init__(self, x, shape, name=None):
        self.target = Arguments(self, name, x).new_shape("shape", shape)
        super().__init__(x, name=name)

    def compute(self, x):
        return np.reshape(x, self.target)

    def passes_through(self, x_shape):
        return is_fully_known(x_shape) and self.infer_shape(x_shape) == tuple(x_shape)

    def infer_shape(self, x_shape):
        return reshaped(x_shape, self.target)


def reshaped(x_shape, target):
    """The shape of x reshaped to `target` (one -1 inferred, None unknown), or ShapeError when no reshape fits."""
    rest = [d for d in target if d != -1]
    if not is_fully_known(x_shape) or None in rest:
        return tuple(None if d == -1 else d for d in target)
    size, known = math.prod(x_shape), math.prod(rest)
    if -1 in target and (known == 0 or size % known):
        raise ShapeError(f"cannot reshape {x_shape} (size {size}) into {target}: {size} is not a multiple of {known}")
    if -1 not in target and known != size:
        raise ShapeError(f"cannot reshape {x_shape} (size {size}) into {target} (size {known}); "
                         "the sizes must match, or use -1 for one dimension")
    return tuple(size // known if d == -1 else d for d in target)


def reshape(x, shape, name=None):
    """x with a new shape; one entry may be -1. `shape` may be an int vector node (a shape known at run time)."""
    if isinstance(shape, Node) or is_eager(shape):
        return ReshapeTo(x, shape, name=name)
    return Reshape(x, shape, name=name)


class ReshapeLike(LikeOperation):
    """x reshaped to the run-time shape of `like` (the gradient of reshape)."""

    def compute(self, x, like):
        return np.reshape(x, like.shape)


register_gradient(Reshape)(lambda op, grad: [ReshapeLike(grad, op.inputs[0])])
register_gradient(ReshapeLike)(lambda op, grad: [ReshapeLike(grad, op.inputs[0]), None])


MAX_RANK = 64  # numpy's most dimensions


def known_entries(node):
    """The entries of an int vector (or scalar) node known when the graph is built: ints and None, or None when not
    even the length is known. Follows shape arithmetic (x.view(n, 3, 2) in ONNX: Shape, Gather, Unsqueeze, Concat)."""
    if not isinstance(node, Node) or node.shape is None or len(node.shape) > 1 or None in node.shape:
        return None
    if node.shape and node.shape[0] > MAX_RANK and not isinstance(node, Constant):
        return None  # longer than any shape: a vector of sizes no array can have (its length is not a rank)
    op = node.op_type
    if isinstance(node, Constant):
        return [int(v) for v in np.asarray(node.value).reshape(-1)]
    if op == "Shape" and node.inputs[0].shape is not None:
        return list(node.inputs[0].shape[getattr(node, "start", 0):getattr(node, "end", None)])
    if op in ("Cast", "Identity", "Reshape", "ReshapeTo", "Squeeze", "Unsqueeze", "Flatten"):
        return known_entries(node.inputs[0])
    if op == "Concat" and node.axis == 0:
        parts = [known_entries(x) for x in node.inputs]
        return None if None in parts else [v for part in parts for v in part]
    if op == "GetItem" or op == "Gather" and isinstance(node.inputs[1], Constant):
        entries = known_entries(node.inputs[0])
        if entries is not None:  # numpy indexes them as it will index the values (slices, ..., masks, negatives)
            key = node.key if op == "GetItem" else np.asarray(node.inputs[1].value)
            return np.asarray(np.array(entries, dtype=object)[key], dtype=object).reshape(-1).tolist()
    return [None] * (node.shape[0] if node.shape else 1)


class ToRuntimeShape(Operation):
    """An op of (x, dims) whose output shape comes from the int vector node `dims` (known at run time), in x's dtype."""

    abstract = True
    dtype_of = 0

    def __init__(self, x, dims, name=None):
        check = Arguments(self, name, x, dims)
        dims_shape = getattr(dims, "shape", None)
        if dims_shape is not None and len(dims_shape) != 1:
            check.fail("dims", dims_shape, "is not a 1-D vector of sizes", "pass a 1-D int64 node")
        self.known = known_entries(dims)  # ints and None (known at run time only)
        super().__init__(x, dims, name=name)


class ReshapeTo(ToRuntimeShape):
    """x reshaped to the run-time shape in `dims` (ONNX Reshape: one -1 inferred; 0 copies x's size unless `allowzero`).
    Gradient: g reshaped back."""

    def __init__(self, x, dims, allowzero=True, name=None):
        self.allowzero = Arguments(self, name, x, dims).flag("allowzero", allowzero)
        super().__init__(x, dims, name=name)

    def target(self, x_shape, dims):
        """The shape from the vector `dims` (-1 left for numpy to infer) for an input of shape x_shape."""
        if not self.allowzero:
            dims = [x_shape[i] if d == 0 and i < len(x_shape) else d for i, d in enumerate(dims)]
        return tuple(None if d is None else int(d) for d in dims)

    def compute(self, x, dims):
        if dims.dtype.kind not in "iu" or dims.ndim != 1:
            raise ValueError(f"the shape must be a 1-D integer vector, got {dims.dtype} of shape {dims.shape}")
        return np.reshape(x, self.target(x.shape, dims.tolist()))

    def infer_shape(self, x_shape, dims_shape):
        if self.known is None:
            return None
        if x_shape is None and not self.allowzero and 0 in self.known:
            return (None,) * len(self.known)
        return reshaped(x_shape, self.target(x_shape, self.known))


register_gradient(ReshapeTo)(lambda op, grad: [ReshapeLike(grad, op.inputs[0]), None])


class Transpose(Operation):
    """x with its axes permuted (reversed when axes is None).  Gradient: g with the inverse permutation."""

    def __init__(self, x, axes=None, name=None):
        self.axes = Arguments(self, name, x).permutation("axes", axes, rank_of(x))
        super().__init__(x, name=name)

    def compute(self, x):
        return np.transpose(x, self.axes)

    def infer_shape(self, x_shape):
        return None if x_shape is None else tuple(x_shape[a] for a in self.axes)


transpose = op_function(Transpose, "transpose", "x with permuted axes (reversed by default).")
register_gradient(Transpose)(lambda op, grad: [  # the inverse permutation (a reversal of unknown rank is its own)
    Transpose(grad, None if op.axes is None else tuple(int(a) for a in np.argsort(op.axes)))])


class Concat(Operation):
    """The inputs joined along `axis`.  Gradient: g split back into the inputs' pieces."""

    def __init__(self, xs, axis=0, name=None):
        check = Arguments(self, name, *[x for x in xs if isinstance(x, Node)])
        if not xs:
            check.fail("xs", xs, "is empty", "pass a list of at least one node")
        self.axis = check.axis("axis", axis, next((r for r in map(rank_of, xs) if r is not None), None))
        super().__init__(*xs, name=name)

    def compute(self, *xs):
        return np.concatenate(xs, axis=self.axis)

    def infer_shape(self, *shapes):
        if any(s is None for s in shapes):
            raise ShapeError("concat needs inputs of known rank")
        if len({len(s) for s in shapes}) > 1:
            raise ShapeError(f"concat inputs must have the same rank, got shapes {shapes}")
        out = []
        for i, dims in enumerate(zip(*shapes)):
            known = {d for d in dims if d is not None}
            if i == self.axis:
                out.append(None if None in dims else sum(dims))
            elif len(known) > 1:
                raise ShapeError(f"concat inputs of shapes {shapes} differ on axis {i}; "
                                 f"only the concat axis ({self.axis}) may differ")
            else:
                out.append(known.pop() if known else None)
        return tuple(out)


def concat(xs, axis, name=None):
    """Join a list of nodes along an existing axis."""
    return Concat(_node_list("Concat", name, xs), axis, name=name)


class ConcatSplit(Operation):
    """Piece `index` of g cut along `axis` with the run-time sizes of the concat inputs."""

    def __init__(self, grad, xs, axis, index, name=None):
        self.axis, self.index = axis, index
        super().__init__(grad, *xs, name=name)

    def compute(self, grad, *xs):
        start = sum(x.shape[self.axis] for x in xs[:self.index])
        stop = start + xs[self.index].shape[self.axis]
        return grad[(slice(None),) * self.axis + (slice(start, stop),)]

    dtype_of = 0

    def infer_shape(self, grad_shape, *x_shapes):
        return x_shapes[self.index]


register_gradient(Concat)(lambda op, grad: [ConcatSplit(grad, op.inputs, op.axis, i) for i in range(len(op.inputs))])


@register_gradient(ConcatSplit)
def _concat_split_grad(op, grad):
    xs = op.inputs[1:]
    pieces = [grad if i == op.index else zeros_like(x) for i, x in enumerate(xs)]
    return [Concat(pieces, op.axis)] + [None] * len(xs)


def normalize_key(key, check=None):
    """A tuple of index entries, with lists turned into integer/boolean arrays."""
    check = check or Arguments(GetItem)
    key = key if isinstance(key, tuple) else (key,)
    out = []
    for k in key:
        if isinstance(k, Node):
            check.fail("key", k, "is a graph node", "index with Python ints, slices or numpy arrays")
        if isinstance(k, (list, tuple, np.ndarray)) or is_eager(k):
            k = np.asarray(k)  # x[[0, 2]], x[(1, 0), i]: integer arrays, as numpy and torch take them
            if k.dtype.kind not in "iub":
                check.fail("key", key, f"holds an array of dtype {k.dtype}",
                           "index with integer or boolean arrays")
        elif isinstance(k, slice):
            if not all(v is None or is_int(v) for v in (k.start, k.stop, k.step)) or k.step == 0:
                check.fail("key", key, f"holds the slice {k}", "use int bounds and a non-zero int step")
        elif not (k is None or k is Ellipsis or is_int(k)):
            check.fail("key", key, f"holds the unsupported index {k!r}",
                       "use ints, slices, None, ..., or integer arrays")
        out.append(k)
    return tuple(out)


def _basic_index_shape(shape, key):
    """The static shape of x[key] for a shape with None dims: ints, slices, None, ... and one in-place integer array."""
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > len(shape):
        raise ShapeError(f"too many indices ({consumed}) for a node of shape {shape}")
    out, dim = [], 0
    for k in key:
        if k is None:
            out.append(1)
        elif k is Ellipsis:
            out.extend(shape[dim:dim + len(shape) - consumed])
            dim += len(shape) - consumed
        else:  # ints, slices and arrays each take one axis
            size = shape[dim]
            if isinstance(k, slice):
                out.append(None if size is None else len(range(*k.indices(size))))
            elif isinstance(k, np.ndarray):
                out.extend(k.shape)
            elif size is not None and not -size <= k < size:
                raise ShapeError(f"index {k} is out of bounds for axis {dim} of size {size}")
            dim += 1
    return tuple(out) + tuple(shape[dim:])


class GetItem(Operation):
    """x[key] with numpy semantics (ints, slices, None, ..., integer or boolean arrays).  Gradient: GetItemGrad."""

    def __init__(self, x, key, name=None):
        self.key = normalize_key(key, Arguments(self, name, x))
        super().__init__(x, name=name)

    def compute(self, x):
        return x[self.key]

    def infer_shape(self, x_shape):
        if x_shape is None:
            return None
        if sum(k is Ellipsis for k in self.key) > 1:
            raise ShapeError(f"index {self.key} has more than one '...'")
        if is_fully_known(x_shape):
            # index a zero-stride stand-in of the right shape: numpy checks bounds, no memory used
            stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), x_shape, (0,) * len(x_shape))
            try:
                return stand_in[self.key].shape
            except IndexError as err:
                raise ShapeError(f"index {self.key} does not fit shape {x_shape}: {err}") from None
        arrays = [k for k in self.key if isinstance(k, np.ndarray)]
        in_place = len(arrays) == 1 and arrays[0].dtype.kind != "b" and not any(is_int(k) for k in self.key)
        return _basic_index_shape(x_shape, self.key) if not arrays or in_place else None


get_item = op_function(GetItem, "get_item", "x[key], numpy-style indexing and slicing.")


class GetItemGrads(ShapedLike):
    """Zeros like x with each gradient added at its key in `keys` (several GetItems' gradients of x in one pass)."""

    def __init__(self, grad, x, *more, keys, name=None):
        self.keys = tuple(keys)
        super().__init__(grad, x, *more, name=name)

    def compute(self, grad, x, *more):
        out = np.zeros(x.shape, dtype=grad.dtype)
        for g, key in zip((grad,) + more, self.keys):
            if any(isinstance(k, np.ndarray) for k in key):
                np.add.at(out, key, g)  # repeated indices must accumulate
            else:
                out[key] += g
        return out


class GetItemGrad(GetItemGrads):
    """Zeros like x with g added at x[key], repeated indices summed (the gradient of GetItem)."""

    def __init__(self, grad, x, key, name=None):
        self.key = key
        super().__init__(grad, x, keys=(key,), name=name)


def summed_slice_gradients(contributions):
    """`contributions` to one node's gradient with its GetItemGrads merged into one op: T steps' slices of a
    sequence then cost one pass over it, not T passes over mostly zeros and an AddN of them."""
    slices = [c for c in contributions if type(c) is GetItemGrad]
    if len(slices) < 2:
        return contributions
    grads = [c.inputs[0] for c in slices]
    merged = GetItemGrads(grads[0], slices[0].inputs[1], *grads[1:], keys=[c.key for c in slices])
    return [merged] + [c for c in contributions if not any(c is s for s in slices)]


register_gradient(GetItem)(lambda op, grad: [GetItemGrad(grad, op.inputs[0], op.key)])
for _cls in (GetItemGrad, GetItemGrads):
    register_gradient(_cls)(lambda op, grad: [GetItem(grad, op.keys[0]), None] + [GetItem(grad, k)
                                                                                  for k in op.keys[1:]])


class Identity(Operation):
    """x unchanged.  Gradient: g."""

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return x

    def passes_through(self, x_shape):
        return True


identity = op_function(Identity, "identity", "A new node with x's value (useful to name a value).")
register_gradient(Identity)(lambda op, grad: [grad])


class StopGradient(Identity):
    """x unchanged in the forward pass; backprop passes nothing through it."""


stop_gradient = op_function(StopGradient, "stop_gradient", "x, but treated as a constant by backprop.")
not_differentiable(StopGradient)


class AddN(Operation):
    """The sum of any number of inputs (with broadcasting).  Gradient: g for every input."""

    def __init__(self, *xs, name=None):
        if not xs:
            Arguments(self, name).fail("xs", [], "is empty", "pass a list of at least one node")
        super().__init__(*xs, name=name)

    def compute(self, *xs):
        return sum(xs[1:], xs[0])


def add_n(xs, name=None):
    """The sum of a list of nodes."""
    return AddN(*_node_list("AddN", name, xs), name=name)


register_gradient(AddN)(lambda op, grad: [grad] * len(op.inputs))
