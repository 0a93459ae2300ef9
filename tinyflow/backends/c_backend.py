"""The C backend: the cffi kernels of ckernels/ (native.py) for the hot ops, numpy for everything else.

`Backend.call` checks the table's conditions first, so C only sees non-empty contiguous float inputs of one dtype
and shapes it handles, and writes into fresh or recycled buffers: no public input can crash the interpreter."""
import math
import weakref

import numpy as np

from ..ops.elementwise_ops import GRADIENTS as GRADIENT_OPS, OPS as ELEMENTWISE_OPS
from ..ops.expressions import fingerprint, text
from ..ops.cross_entropy import check_labels
from ..ops.recurrent_cells import GATES
from ..shapes import reduced_shape
from . import native
from .base import DECLINE, Backend, Kernel
from .fused import CTYPE, CFusedKernel, elementwise_layout
from .kernel_codes import (ENUMS, POOL_KERNELS, REDUCE, ROW_KERNELS, UPDATES, along_last_axis, conv_geometry,
                           fits_conv, inner_dims_match, labels_fit, pool_geometry, pooled_shape,
                           reduce_dims, reduced_axes, transposed_input_shape, update_hyper)

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}

# Below this many elements in every input, numpy's own loop beats a call into C (cffi and the checks cost a few
# microseconds; benchmarks/kernels.py). In-place updates (no copy) and cross-entropy (a dozen numpy calls): any size.
SMALL = 4096


def _buf(array):
    """A C pointer to a contiguous float array's data (the caller keeps the array alive); NULL for None."""
    return native.ffi.NULL if array is None else native.ffi.from_buffer(CTYPE[array.dtype], array)


def _fn(name, array):
    """The C function `name` for the dtype of `array` (name_f32 or name_f64)."""
    return getattr(native.lib, f"{name}_{_SUFFIX[array.dtype]}")


# ---------------------------------------------------------------- elementwise: the table's generated kernels
def _generated_kernels():
    """op type -> its number among the library's generated elementwise kernels, where the expression built agrees."""
    if native.lib is None:
        return {}
    classes = {**ELEMENTWISE_OPS, **GRADIENT_OPS}
    numbers = {}
    for number, entry in enumerate(native.ffi.string(native.lib.tf_elementwise_ops()).decode().split(",")):
        op_type, _, built = entry.partition(":")
        cls = classes.get(op_type)
        if cls is not None and built == fingerprint(op_type, cls.input_names, text(cls.expression), cls.attributes):
            numbers[op_type] = number
    return numbers


GENERATED = _generated_kernels()


def elementwise(backend, op, *arrays):
    """An op of the elementwise table by its generated kernel, inputs read as full arrays, rows, columns or scalars."""
    out_shape, code, rows, cols = elementwise_layout(tuple([a.shape for a in arrays]))
    if code is None or len(arrays) > 4:
        return DECLINE
    out = backend.pool.empty(out_shape, arrays[0].dtype)
    pointers = [_buf(a) for a in arrays] + [native.ffi.NULL] * (4 - len(arrays))
    attributes = native.ffi.new("double[]", [getattr(op, a) for a in op.attributes]) if op.attributes \
        else native.ffi.NULL
    _fn("tf_elementwise", out)(GENERATED[op.op_type], *pointers, _buf(out), rows, cols, code, attributes)
    return out


def flat_kernel(op_type, dtype=np.float32):
    """`run(*input pointers, out pointer, n)`: op_type's generated kernel on n values, default attributes (tests)."""
    function, number = _fn("tf_elementwise", np.empty(0, dtype)), GENERATED[op_type]
    defaults = ELEMENTWISE_OPS.get(op_type, GRADIENT_OPS.get(op_type)).attributes
    attributes = native.ffi.new("double[]", list(defaults.values())) if defaults else native.ffi.NULL

    def run(*pointers):
        *inputs, out, n = pointers
        return function(number, *inputs, *[native.ffi.NULL] * (4 - len(inputs)), out, 1, n, 0, attributes)
    return run


# ---------------------------------------------------------------- reductions, rows, indexing
def reduce(backend, op, x):
    """Sum, mean or max over a contiguous run of axes, collapsed into one middle axis."""
    axes = reduced_axes(op, x)
    out = backend.pool.empty(reduced_shape(x.shape, axes, op.keepdims), x.dtype)
    _fn("tf_reduce", x)(REDUCE[op.op_type], _buf(x), _buf(out), *reduce_dims(x.shape, axes))
    return out


def row_kernel(backend, op, x, *others):
    """The op's `tf_<name>(*inputs, out, rows, cols[, eps])` over x as rows of its axes from op.axis on."""
    name = ROW_KERNELS[op.op_type]
    out = backend.pool.empty(x.shape, x.dtype)
    cols = math.prod(x.shape[op.axis % x.ndim:])
    _fn(f"tf_{name}", x)(_buf(x), *[_buf(a) for a in others], _buf(out), x.size // cols, cols,
                         *([op.eps] if name.startswith("layer_norm") else []))
    return out


def softmax_xent(backend, op, logits, labels, *grad):
    """Fused mean softmax cross-entropy; with `grad`, its gradient (softmax(logits) - onehot(labels)) * grad / N."""
    n, cols = logits.shape
    check_labels(labels, cols)
    labels_ptr = native.ffi.from_buffer("int64_t[]", np.ascontiguousarray(labels, dtype=np.int64))  # keeps the copy
    out = backend.pool.empty(logits.shape, logits.dtype)  # the gradient, or the loss's scratch rows
    if grad:
        _fn("tf_softmax_xent_back", logits)(_buf(logits), labels_ptr, n, cols, float(np.asarray(grad[0]).reshape(())),
                                            _buf(out))
        return out
    loss = native.ffi.new("double *")
    status = _fn("tf_softmax_xent", logits)(_buf(logits), labels_ptr, n, cols, _buf(out), loss)
    backend.pool.recycle(out)
    if status == -2:
        raise MemoryError(f"no memory for {n} row losses of the softmax cross-entropy")
    return np.asarray(loss[0], dtype=logits.dtype)


def scatter_add(backend, op, grad, x, indices):
    """GatherGrad: zeros of x's shape with the rows of grad added at their indices along op.axis."""
    dim = x.shape[op.axis]
    index = np.array(indices, dtype=np.int64).reshape(-1)  # a copy: negative indices are made positive in it
    if index.size and (index.min() < -dim or index.max() >= dim):
        bad = index[(index < -dim) | (index >= dim)][0]
        raise IndexError(f"index {bad} is out of bounds for axis {op.axis} of size {dim}")
    index[index < 0] += dim
    outer, inner = math.prod(x.shape[:op.axis]), math.prod(x.shape[op.axis + 1:])
    out = backend.pool.empty(x.shape, grad.dtype)
    _fn("tf_scatter_add", grad)(native.ffi.from_buffer("int64_t[]", index), index.size, _buf(grad), _buf(out),
                                outer, dim, inner)
    return out


def integer_indices(op, grad, x, indices):
    """GatherGrad's kernel takes integer indices and a gradient of the gathered shape."""
    return np.asarray(indices).dtype.kind in "iu" and grad.size == (
        math.prod(x.shape[:op.axis]) * np.size(indices) * math.prod(x.shape[op.axis + 1:]))


def attention(backend, op, q, k, v, *mask):
    """softmax(q kᵀ · scale + mask) v in one C pass per block of query rows; a boolean mask becomes 0 / -inf first."""
    batch, (length, width), value_width = q.shape[:-2], q.shape[-2:], v.shape[-1]
    out = backend.pool.empty(batch + (length, value_width), q.dtype)
    masking = (native.ffi.NULL, native.ffi.NULL, 0, 0)
    if mask:
        added = np.where(mask[0], 0, -np.inf).astype(q.dtype) if mask[0].dtype == bool else \
            np.ascontiguousarray(mask[0], q.dtype)
        # where each batch entry's (L, S) mask starts in `added`, and its row and column steps (0 where broadcast)
        index = np.broadcast_to(np.arange(added.size).reshape(added.shape), batch + (length, k.shape[-2]))
        starts = np.ascontiguousarray(index[..., 0, 0], np.int64).reshape(-1)
        masking = (_buf(added), native.ffi.from_buffer("long[]", starts), *(s // index.itemsize for s in index.strides[-2:]))
    if _fn("tf_attention", q)(_buf(q), _buf(k), _buf(v), *masking, _buf(out), math.prod(batch), length, k.shape[-2],
                              width, value_width, op.scale) != 0:
        raise MemoryError("tf_attention could not allocate its scratch rows")
    return out


def same_batch(op, q, k, v, *mask):
    """The shapes fit (else ShapeError, before C), and q, k and v share their batch axes (C does not broadcast)."""
    op.check_values(q, k, v, *mask)
    return q.shape[:-2] == k.shape[:-2] == v.shape[:-2]


# ---------------------------------------------------------------- matmul
_POINTER = {dtype: ctype.replace("[]", " *") for dtype, ctype in CTYPE.items()}


def _matrices(x):
    """Matrices (rows, cols), or a batch of them (B, rows, cols), as tf_gemm reads them: (x or a copy, pointer, batch
    step, leading dimension, transposed); a copy when neither their rows nor their columns are contiguous."""
    (rows, cols), batched = x.shape[-2:], x.ndim == 3 and len(x) > 1
    if x.flags.c_contiguous:
        return x, _buf(x), rows * cols if batched else 0, cols or 1, False
    if min(x.strides) < 0 or any(s % x.itemsize for s in x.strides):
        return _matrices(np.ascontiguousarray(x))
    step, row, col = (x.strides[0] // x.itemsize if batched else 0), *(s // x.itemsize for s in x.strides[-2:])
    if cols == 1 or col == 1:
        layout = step, row if rows > 1 else cols, False
    elif rows == 1 or row == 1:
        layout = step, col if cols > 1 else rows, True
    else:
        return _matrices(np.ascontiguousarray(x))
    return (x, native.ffi.cast(_POINTER[x.dtype], x.ctypes.data)) + layout


def gemm(a, b, out, accumulate=False):
    """out (+)= a @ b in one tf_gemm call, for float matrices or batches a ([B,] m, k), b ([B,] k, n) and a contiguous
    out ([B,] m, n) of one dtype, where a batch of 1 is one matrix for all (out's: the sum of the B products)."""
    (a, a_pointer, *a_layout), (b, b_pointer, *b_layout) = _matrices(a), _matrices(b)
    (m, k), n = a.shape[-2:], b.shape[-1]
    batch = max(len(a) if a.ndim == 3 else 1, len(b) if b.ndim == 3 else 1)
    if _fn("tf_gemm", out)(batch, m, n, k, a_pointer, *a_layout, b_pointer, *b_layout, _buf(out),
                           m * n if out.ndim == 3 and len(out) > 1 else 0, accumulate) != 0:
        raise MemoryError("tf_gemm could not allocate its packing buffers")
    return out


def matmul(backend, op, a, b, out=None):
    """a @ b in one C call (matrices, a batch and a matrix, or two batches of one shape) into a recycled buffer."""
    if a.ndim > 2 and b.ndim == 2:
        flat = None if out is None else out.reshape(-1, out.shape[-1])
        return matmul(backend, op, a.reshape(-1, a.shape[-1]), b, flat).reshape(a.shape[:-1] + b.shape[1:])
    (m, k), n, batch = a.shape[-2:], b.shape[-1], (a if a.ndim > 2 else b).shape[:-2]
    out = backend.pool.empty(batch + (m, n), a.dtype) if out is None else out
    work, lib = m * n * k * math.prod(batch), native.lib
    if work < lib.TF_PARALLEL_MIN:  # BLAS threads nothing this small: numpy's call, with less Python than tf_gemm's
        return np.matmul(a, b, out=out)
    if work < lib.TF_PARALLEL_MIN * lib.TF_GEMM_COST_DIVISOR:  # one thread's work for tf_gemm too: numpy's call,
        lib.tf_hold_blas(1)  # BLAS held at one thread as tf_gemm holds it (W2b's products: 5% fewer instructions)
        try:
            return np.matmul(a, b, out=out)
        finally:
            lib.tf_hold_blas(0)
    gemm(*(x.reshape(-1, *x.shape[-2:]) if x.ndim > 3 else x for x in (a, b, out)))  # batch axes as one
    return out


# ---------------------------------------------------------------- convolution and pooling (1-D and 2-D)
def _im2col(backend, x, geometry):
    """The windows of x as tap-major columns (C·K, N·P): row (channel, tap) holds that tap of every output pixel."""
    n, c, kh, kw, ho, wo = geometry[0], geometry[1], geometry[4], geometry[5], geometry[12], geometry[13]
    cols = backend.pool.empty((c * kh * kw, n * ho * wo), x.dtype)
    _fn("tf_im2col", x)(_buf(x), _buf(cols), *geometry)
    return cols


def _grouped_product(backend, a, b, groups, transpose_a=False, transpose_b=False):
    """a @ b (a.T, b.T where asked) as a 2-D array; with groups, each group's block of rows of a times that of b."""
    a, b = a.reshape(groups, -1, a.shape[-1]), b.reshape(groups, -1, b.shape[-1])
    a, b = a.transpose(0, 2, 1) if transpose_a else a, b.transpose(0, 2, 1) if transpose_b else b
    return gemm(a, b, backend.pool.empty((groups, a.shape[1], b.shape[2]), a.dtype)).reshape(-1, b.shape[2])


def _planes(backend, y):
    """(N, O, *spatial) as contiguous (O, N·P) rows: each channel's planes, image after image."""
    n, o = y.shape[:2]
    out = backend.pool.empty((o, y.size // o), y.dtype)
    np.copyto(out.reshape(o, n, -1), y.reshape(n, o, -1).transpose(1, 0, 2))
    return out


def conv(backend, op, x, w, *extras):
    """Convolution: direct kernels for depthwise and pointwise (1x1) filters, else tap-major im2col then one product
    per group, rows the output planes; a ConvBiasAct's bias, residual and clipping while each plane is in cache."""
    geometry = conv_geometry(op, x.shape, w.shape)
    n, o = x.shape[0], w.shape[0]
    shape, filters = pooled_shape((n, o) + x.shape[2:], geometry), w.reshape(o, -1)
    out = backend.pool.empty(shape, x.dtype)
    bias, residual = _epilogue_operands(op, extras)
    bounds = getattr(op, "bounds", (-math.inf, math.inf))
    if w.shape[1] == 1:  # depthwise (MobileNet's, fits_conv checked): a group per input channel; its direct kernel
        if _fn("tf_depthwise_conv", x)(_buf(x), _buf(w), _buf(out), o // op.groups, *geometry, _buf(bias),
                                       _buf(residual), *bounds):
            raise MemoryError("tf_depthwise_conv could not allocate its scratch tap blocks")
        return out
    if _pointwise(op, geometry):
        # pointwise: each image's (C, H·W) data already is im2col's matrix, and the product is the output's layout
        for b, (image, planes) in enumerate(zip(x.reshape(n, x.shape[1], -1), out.reshape(n, o, -1))):
            matmul(backend, None, filters, image, planes)
            if op.op_type == "ConvBiasAct":
                _fn("tf_conv_epilogue", x)(_buf(planes), _buf(planes), 1, o, planes.shape[1], _buf(bias),
                                           _buf(None if residual is None else residual[b]), *bounds)
        return out
    cols = _im2col(backend, x, geometry)
    in_place = n == 1 and op.groups == 1  # the product's rows (O, P) are the output's planes: written there
    rows = matmul(backend, None, filters, cols, out.reshape(o, -1)) if in_place else \
        _grouped_product(backend, filters, cols, op.groups)  # (O, N·P)
    backend.pool.recycle(cols)
    if not in_place or op.op_type == "ConvBiasAct":  # rows' planes image-major, in the pass adding the bias
        _fn("tf_conv_epilogue", x)(_buf(rows), _buf(out), n, o, rows.shape[1] // n, _buf(bias), _buf(residual),
                                   *bounds)
    if not in_place:
        backend.pool.recycle(rows)
    return out


def _pointwise(op, geometry, planes=None):
    """Whether a convolution is 1x1, stride 1, unpadded, in one group (the input is im2col's matrix); with the
    gradient's `planes`, also 14x14 or more: its gradients go image by image (half the time; smaller: one product)."""
    return (op.groups == 1 and geometry[4:12] == (1, 1, 1, 1, 0, 0, 1, 1) and geometry[12:] == geometry[2:4]
            and (planes is None or planes[0, 0].size >= 128))


def _epilogue_operands(op, extras):
    """(bias, residual) of a ConvBiasAct's extra inputs, None where absent."""
    residual = extras[-1] if getattr(op, "residual", False) else None
    return extras[0] if len(extras) > (residual is not None) else None, residual


def fits_conv_bias(op, x, w, *extras):
    """A convolution's input and filter fit, its bias (if any) has one value per output channel and its residual (if
    any) the output's shape: a broadcast residual is numpy's to add."""
    if not fits_conv(op, x, w):
        return False
    bias, residual = _epilogue_operands(op, extras)
    return (bias is None or bias.size == w.shape[0]) and (residual is None or residual.shape == pooled_shape(
        (x.shape[0], w.shape[0]) + x.shape[2:], conv_geometry(op, x.shape, w.shape)))


def conv_back_input(backend, op, g, w, x=None):
    """The input gradient of a convolution of output gradient g (x gives the shape; a ConvTranspose is this): g's
    planes back through the filters (the adjoint of conv's product), then col2im (depthwise: its direct kernel)."""
    shape = transposed_input_shape(op, g, w) if x is None else x.shape
    geometry = conv_geometry(op, shape, w.shape, g.shape)
    if w.shape[1] == 1:  # depthwise: the direct kernel of its adjoint
        out = backend.pool.empty(shape, g.dtype)
        _fn("tf_depthwise_back_input", g)(_buf(g), _buf(w), _buf(out), w.shape[0] // shape[1], *geometry)
        return out
    if _pointwise(op, geometry, g):  # each image's planes back through the filters, in place
        out = backend.pool.empty(shape, g.dtype)
        gemm(w.reshape(1, w.shape[0], -1).transpose(0, 2, 1), g.reshape(g.shape[0], g.shape[1], -1),
             out.reshape(shape[0], shape[1], -1))
        return out
    rows = _planes(backend, g)
    cols = _grouped_product(backend, w.reshape(w.shape[0], -1), rows, op.groups, transpose_a=True)  # (C·K, N·P)
    backend.pool.recycle(rows)
    out = backend.pool.empty(shape, cols.dtype)
    _fn("tf_col2im", cols)(_buf(cols), _buf(out), *geometry)
    backend.pool.recycle(cols)
    return out


def conv_back_filter(backend, op, x, g, w):
    """The filter gradient: per group, the gradient's planes times the input's im2col transposed (depthwise: direct)."""
    geometry = conv_geometry(op, x.shape, w.shape, g.shape)
    if w.shape[1] == 1:  # depthwise
        out = np.empty(w.shape, x.dtype)
        if _fn("tf_depthwise_back_filter", x)(_buf(x), _buf(g), _buf(out), w.shape[0] // x.shape[1], *geometry):
            raise MemoryError("tf_depthwise_back_filter could not allocate its scratch tap blocks")
        return out
    if _pointwise(op, geometry, g):  # each image's planes times its input's, added up: no im2col copy of x or g
        out = np.empty(w.shape, x.dtype)
        gemm(g.reshape(g.shape[0], g.shape[1], -1), x.reshape(x.shape[0], x.shape[1], -1).transpose(0, 2, 1),
             out.reshape(1, w.shape[0], -1))
        return out
    cols = _im2col(backend, x, geometry)
    rows = _planes(backend, g)
    out = _grouped_product(backend, rows, cols, op.groups, transpose_b=True).reshape(w.shape)
    backend.pool.recycle(rows)
    backend.pool.recycle(cols)
    return out


def max_pool(backend, op, x, *other):
    """Max pooling forward (x), backward (x, g) or gather (x, h) with the op's window."""
    geometry = pool_geometry(op, x, *other)
    out = backend.pool.empty(x.shape if op.op_type == "MaxPoolGrad" else pooled_shape(x.shape, geometry), x.dtype)
    _fn(f"tf_{POOL_KERNELS[op.op_type]}", x)(_buf(x), *[_buf(o) for o in other], _buf(out), *geometry)
    return out


# ---------------------------------------------------------------- recurrent layers
CELL_CODES = {cell: ENUMS["tf_recurrent_cell"][f"TF_{cell}"] for cell in GATES}


def recurrence(backend, op, x_gates, w_hh, state, *rest):
    """A Recurrence's loop over time, or with the gradient of its value its RecurrenceGrad, in one C call."""
    bias, grad = (rest[:-1], rest[-1]) if op.op_type == "RecurrenceGrad" else (rest, None)
    steps, n, width = x_gates.shape
    shape = (steps,) + state.shape if grad is None else op.infer_shape(x_gates.shape, w_hh.shape, state.shape,
                                                                       *[a.shape for a in rest])
    out = backend.pool.empty(shape, x_gates.dtype)
    arrays = (x_gates, w_hh, bias[0] if bias else None, state, grad, out)
    order = native.ffi.new("int[]", op.order or tuple(range(GATES[op.cell])))
    if _fn("tf_recurrence", out)(CELL_CODES[op.cell], order, *map(_buf, arrays), steps, n, state.shape[-1],
                                 op.reverse):
        raise MemoryError(f"{op.op_type} '{op.name}' could not allocate its scratch memory")
    return out


def recurrence_fits(op, x_gates, w_hh, state, *rest):
    """The arrays' shapes fit the op (run time: the static shapes may have had unknown sizes)."""
    grad = rest[-1] if op.op_type == "RecurrenceGrad" else None
    steps, n, hidden = len(x_gates), state.shape[-2], state.shape[-1]
    width = GATES[op.cell] * hidden
    return (state.shape == ((2, n, hidden) if op.cell == "LSTM" else (n, hidden)) and x_gates.shape == (steps, n, width)
            and w_hh.shape == (width, hidden)
            and all(b.shape == (width,) for b in rest[:len(rest) - (grad is not None)])
            and (grad is None or grad.shape == (steps,) + state.shape))


# ---------------------------------------------------------------- fused optimizer updates, in place
class UpdateState:
    """C pointer arrays to the parameters and slots of some update ops (one optimizer's, of one dtype), kept while
    their Variables keep their arrays: making the pointers costs more than a small update."""

    def __init__(self, ops):
        ffi, first = native.ffi, ops[0]
        kind, slots, _, _ = UPDATES[first.op_type]
        self.op = first  # its hyper-parameters are read at each step: a user may change them between steps
        ctype = "double" if first.inputs[0].dtype == np.float64 else "float"
        self.variables = [var for op in ops for var in op.variables]
        self.arrays = [var.writable_value() for var in self.variables]
        self.count, self.kind = len(ops), ENUMS["tf_update_kind"][kind]
        self.function = _fn("tf_update_multi", self.arrays[0])
        self.keep = [ffi.from_buffer("int64_t[]" if a.dtype.kind == "i" else f"{ctype}[]", a)
                     for a in self.arrays]  # the pointers below point into these (step counts are int64)
        buffers = iter(self.keep)
        by_op = [dict(zip(("param",) + op.slot_names, buffers)) for op in ops]  # name -> that Variable's buffer

        def pointers(name, ctype_name):
            return ffi.new(f"{ctype_name} *[]", [d.get(name, ffi.NULL) for d in by_op])
        self.params = pointers("param", ctype)
        self.slots = [pointers(name, ctype) for name in (slots + (None, None))[:3]]
        self.steps = pointers("step", "int64_t")
        self.sizes = ffi.new("long[]", [len(d["param"]) for d in by_op])  # a buffer's length counts its elements
        self.hyper = ffi.new("double[]", 5)  # lr and the hyper-parameters, filled at each step
        self.grads = ffi.new(f"{ctype} *[]", len(ops))
        self.ctype = f"{ctype}[]"

    def fresh(self):
        """Whether the Variables still hold the arrays the pointers point into (and mark device copies old)."""
        # every `.value` read: it downloads first when an OpenCL session's copy is the newer one
        fresh = [var.value is array for var, array in zip(self.variables, self.arrays)]
        for var in self.variables:
            mirror = var.device_mirror
            if mirror is not None:  # the kernel changes the host array in place: that copy is old afterwards
                mirror.device_stale = True
        return all(fresh)

    def run(self, grads, lr):
        """One step of every update, in one C call; each grad is a contiguous array of its parameter's dtype."""
        buffers = [native.ffi.from_buffer(self.ctype, g) for g in grads]  # alive until the call returns
        for i, buffer in enumerate(buffers):
            self.grads[i] = buffer
        hyper, flag = update_hyper(self.op, lr)
        self.hyper[0:len(hyper)] = hyper
        self.function(self.kind, self.count, self.params, self.grads, *self.slots, self.sizes, self.steps,
                      self.hyper, flag)


def update_state(backend, key, ops):
    """The UpdateState of `ops` (cached under `key`: an update op, or a multi-tensor update node)."""
    state = backend.update_state.get(key)
    if state is None or not state.fresh():
        state = backend.update_state[key] = UpdateState(ops)
        state.fresh()
    return state


def update(backend, op, param, grad, lr, *slots):
    """One optimizer update (SGD, Adam, RMSProp, AdaGrad) of one Variable in one pass, in place."""
    update_state(backend, op, [op]).run([grad], lr)


# ---------------------------------------------------------------- the table
KERNELS = {
    **{op_type: Kernel(elementwise) for op_type in GENERATED},
    **{op_type: Kernel(reduce, accepts=reduced_axes) for op_type in REDUCE},
    **{op_type: Kernel(row_kernel, same_shape=True, accepts=None if name.startswith("layer") else along_last_axis)
       for op_type, name in ROW_KERNELS.items()},
    # numpy needs a dozen small calls for a cross-entropy: one pass in C wins at any size
    **dict.fromkeys(("SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad"),
                    Kernel(softmax_xent, floats=(0,), ndim=2, accepts=labels_fit, small=False)),
    "GatherGrad": Kernel(scatter_add, floats=(0,), accepts=integer_indices),
    "ScaledDotProductAttention": Kernel(attention, floats=(0, 1, 2), accepts=same_batch),
    "MatMul": Kernel(matmul, accepts=inner_dims_match, views=True),  # a transposed operand costs BLAS nothing
    "Conv": Kernel(conv, accepts=fits_conv), "ConvBiasAct": Kernel(conv, accepts=fits_conv_bias),
    "ConvBackInput": Kernel(conv_back_input, accepts=fits_conv),
    "ConvBackFilter": Kernel(conv_back_filter, accepts=fits_conv),
    "ConvTranspose": Kernel(conv_back_input, accepts=fits_conv),
    **{op_type: Kernel(max_pool, accepts=pool_geometry) for op_type in POOL_KERNELS},
    # parameter and gradient; in place at any size
    **{op_type: Kernel(update, floats=(0, 1), same_shape=True, small=False) for op_type in UPDATES},
    # one C call replaces a dozen numpy ones at any size
    **{op_type: Kernel(recurrence, accepts=recurrence_fits, small=False) for op_type in ("Recurrence",
                                                                                          "RecurrenceGrad")},
}


class CBackend(Backend):
    """Runs the ops of its kernel table in C; the rest with their numpy `compute`."""

    name = "c"
    kernels = KERNELS
    small_size = host_below = SMALL
    pool_bytes = None  # $TINYFLOW_POOL_MB, else 256 MiB
    fused = CFusedKernel  # compiled once a node has run a few times
    why_unavailable = staticmethod(native.why_not_built)  # '' when the C library was built, else how to build it

    def __init__(self):
        super().__init__()
        self.threads = native.configure_threads()
        self.gemm = (native.GEMM or native.choose_gemm())["name"]
        # optimizer update op -> its UpdateState; weak, as eager optimizers come and go while the eager backend stays
        self.update_state = weakref.WeakKeyDictionary()

    def __repr__(self):
        return f"<tinyflow backend 'c' threads={self.threads} gemm={self.gemm!r}>"

    def multi_update(self, node, values):
        """A MultiTensorUpdate's members in one C call; False when a gradient does not fit (then one by one)."""
        grads, members = [], node.members
        for member, span in zip(members, node.spans):
            grad, param = np.asarray(values[span.start + 1]), member.inputs[0]  # a 0-d parameter's may be a scalar
            if (grad.dtype != param.dtype or grad.dtype not in _SUFFIX
                    or grad.shape != param.value.shape or grad.size == 0):
                return False
            grads.append(grad if grad.flags.c_contiguous else np.ascontiguousarray(grad))
        update_state(self, node, members).run(grads, values[node.spans[0].start + 2])
        self.report.kernel_ops[node.op_type] += 1
        return True

    def close(self):
        """Empty the buffer pool and forget the update ops' pointers."""
        super().close()
        self.update_state.clear()
