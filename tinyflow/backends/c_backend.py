"""The C backend: the cffi kernels (loaded by native.py) of ckernels/ for the hot ops, numpy for everything else.

The table at the bottom says, per op type, what each C kernel accepts; `Backend.kernel`
(base.py) checks it before every call, so C only ever sees float32/float64 inputs of
one dtype, non-empty and contiguous, of shapes the kernel handles, and writes into
fresh (or recycled, never shared) output buffers. Anything else runs the op's numpy
`compute`, so no input reachable from the public API can crash the interpreter.
"""
import math
import os
import weakref

import numpy as np

from ..ops.losses import check_labels
from ..shapes import reduced_shape
from . import native
from .base import Backend, Kernel
from .buffer_pool import BufferPool
from .c_fused import CFusedKernel
from .fused import plan_layout
from ..ops.elementwise_ops import GRADIENTS as GRADIENT_OPS, OPS as ELEMENTWISE_OPS
from ..ops.expressions import fingerprint, text
from .base import DECLINE
from .kernel_codes import (LAYOUT_KINDS, REDUCE, along_last_axis, conv_geometry, fits_conv, fits_pool, inner_dims_match, labels_fit,
                           pool_geometry, reduced_axes, transposed_input_shape)

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_CTYPE = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]"}

# Below this many elements in every input, numpy's own loop beats a call into C (cffi and the
# checks cost a few microseconds; measured by benchmarks/kernels.py); in-place optimizer updates
# (which save a copy) and the cross-entropy (a dozen numpy calls) are the exceptions, at any size.
SMALL = 4096


def _buf(array):
    """A C pointer to a contiguous float array's data, or NULL for None (the caller keeps the array alive)."""
    return native.ffi.NULL if array is None else native.ffi.from_buffer(_CTYPE[array.dtype], array)


def _fn(name, array):
    """The C function `name` for the dtype of `array` (name_f32 or name_f64)."""
    return getattr(native.lib, f"{name}_{_SUFFIX[array.dtype]}")


def _int64(labels):
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    return labels, native.ffi.from_buffer("int64_t[]", labels)


# ---------------------------------------------------------------- elementwise: the table's generated kernels
def _generated_kernels():
    """op type -> its number among the library's generated elementwise kernels (ckernels/elementwise_codegen.py),
    for the ops of this tinyflow whose expression the library was built from (their fingerprints agree)."""
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


def elementwise(backend, op, *arrays):
    """An op of the elementwise table by its generated kernel; inputs broadcast as full arrays, rows, columns
    or scalars (else numpy computes it)."""
    shapes = tuple(a.shape for a in arrays)
    out_shape = np.broadcast_shapes(*shapes)
    kinds, rows, cols = plan_layout(shapes, out_shape)
    if not all(k in LAYOUT_KINDS for k in kinds) or len(arrays) > 4:
        return DECLINE
    out = backend.pool.empty(out_shape, arrays[0].dtype)
    pointers = [_buf(a) for a in arrays] + [native.ffi.NULL] * (4 - len(arrays))
    attributes = native.ffi.new("double[]", [getattr(op, a) for a in op.attributes]) if op.attributes \
        else native.ffi.NULL
    _fn("tf_elementwise", out)(GENERATED[op.op_type], *pointers, _buf(out), rows, cols,
                               sum(LAYOUT_KINDS[k] << 2 * i for i, k in enumerate(kinds)), attributes)
    return out


GENERATED = _generated_kernels()


def flat_kernel(op_type, dtype=np.float32):
    """`run(*input pointers, out pointer, n)`: the generated kernel of op_type on n contiguous values (for
    tests and benchmarks that time the kernel itself; attributes take their defaults)."""
    function, number = _fn("tf_elementwise", np.empty(0, dtype)), GENERATED[op_type]
    defaults = ELEMENTWISE_OPS.get(op_type, GRADIENT_OPS.get(op_type)).attributes
    attributes = native.ffi.new("double[]", list(defaults.values())) if defaults else native.ffi.NULL

    def run(*pointers):
        *inputs, out, n = pointers
        return function(number, *inputs, *[native.ffi.NULL] * (4 - len(inputs)), out, 1, n, 0, attributes)
    return run


# ---------------------------------------------------------------- reductions
def reduce(backend, op, x):
    """Sum, mean or max over a contiguous run of axes, collapsed into one middle axis."""
    axes = reduced_axes(op, x)
    outer = int(np.prod(x.shape[:axes[0]], dtype=np.int64))
    n = int(np.prod(x.shape[axes[0]:axes[-1] + 1], dtype=np.int64))
    inner = int(np.prod(x.shape[axes[-1] + 1:], dtype=np.int64))
    out = backend.pool.empty(reduced_shape(x.shape, axes, op.keepdims), x.dtype)
    _fn("tf_reduce", x)(REDUCE[op.op_type], _buf(x), _buf(out), outer, n, inner)
    return out


# ---------------------------------------------------------------- softmax family
def rows(name):
    """A row-wise kernel `name(*inputs, out, rows, cols)` along the last axis."""
    def run(backend, op, *arrays):
        x = arrays[0]
        out = backend.pool.empty(x.shape, x.dtype)
        cols = x.shape[-1]
        _fn(name, x)(*[_buf(a) for a in arrays], _buf(out), x.size // cols, cols)
        return out
    run.__name__ = name
    return run


def softmax_xent(backend, op, logits, labels):
    """Fused mean softmax cross-entropy."""
    check_labels(labels, logits.shape[1])
    labels, labels_ptr = _int64(labels)
    loss = native.ffi.new("double *")
    scratch = backend.pool.empty(logits.shape, logits.dtype)
    status = _fn("tf_softmax_xent", logits)(_buf(logits), labels_ptr, logits.shape[0], logits.shape[1],
                                            _buf(scratch), loss)
    backend.pool.recycle(scratch)
    if status == -2:
        raise MemoryError(f"no memory for {logits.shape[0]} row losses of the softmax cross-entropy")
    return np.asarray(loss[0], dtype=logits.dtype)


def softmax_xent_back(backend, op, logits, labels, grad):
    """(softmax(logits) - onehot(labels)) * grad / N in one pass."""
    check_labels(labels, logits.shape[1])
    labels, labels_ptr = _int64(labels)
    out = backend.pool.empty(logits.shape, logits.dtype)
    _fn("tf_softmax_xent_back", logits)(_buf(logits), labels_ptr, logits.shape[0], logits.shape[1],
                                        float(np.asarray(grad).reshape(())), _buf(out))
    return out


# ---------------------------------------------------------------- indexing
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


# ---------------------------------------------------------------- layer normalization
def layer_norm(name):
    """LayerNorm (x) or its gradient (x, g) over x viewed as (rows, cols), cols the normalized axes."""
    def run(backend, op, x, *grad):
        out = backend.pool.empty(x.shape, x.dtype)
        cols = math.prod(x.shape[op.axis % x.ndim:])
        _fn(name, x)(_buf(x), *[_buf(g) for g in grad], _buf(out), x.size // cols, cols, op.eps)
        return out
    run.__name__ = name
    return run


# ---------------------------------------------------------------- matmul
def gemm(a, b, out=None):
    """a @ b for 2-D float arrays of one dtype with the hand-written C GEMM."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    out = np.empty((a.shape[0], b.shape[1]), a.dtype) if out is None else out
    if _fn("tf_gemm", a)(a.shape[0], b.shape[1], a.shape[1], _buf(a), _buf(b), _buf(out)) != 0:
        raise MemoryError("tf_gemm could not allocate its packing buffers")
    return out


def matmul_2d(backend, a, b):
    """a @ b for 2-D float arrays of one dtype: the hand-written GEMM if chosen, else BLAS writing into a
    recycled buffer, since a fresh output would cost page faults every step."""
    out = backend.pool.empty((a.shape[0], b.shape[1]), a.dtype)
    if backend.use_gemm:
        return gemm(a, b, out)
    return np.matmul(a, b, out=out)


def matmul(backend, op, a, b):
    """Matrix product of two matrices."""
    return matmul_2d(backend, a, b)


# ---------------------------------------------------------------- convolution and pooling (1-D and 2-D)
def _im2col(backend, x, geometry):
    """The windows of x as tap-major columns (C·K, N·P): row (channel, tap) holds that tap of every output pixel."""
    n, c, kh, kw, ho, wo = geometry[0], geometry[1], geometry[4], geometry[5], geometry[12], geometry[13]
    cols = backend.pool.empty((c * kh * kw, n * ho * wo), x.dtype)
    _fn("tf_im2col", x)(_buf(x), _buf(cols), *geometry)
    return cols


def _col2im(backend, cols, shape, geometry):
    out = backend.pool.empty(shape, cols.dtype)
    _fn("tf_col2im", cols)(_buf(cols), _buf(out), *geometry)
    return out


def _per_group(matrix, groups):
    """(G·R, M) rows as (G, R, M): a group's rows are one block of the filters, of im2col's rows, of the planes."""
    return matrix.reshape(groups, -1, matrix.shape[-1])


def _planes(backend, y):
    """(N, O, *spatial) as contiguous (O, N·P) rows: each channel's planes, image after image."""
    n, o = y.shape[:2]
    rows = backend.pool.empty((o, y.size // o), y.dtype)
    np.copyto(rows.reshape(o, n, -1), y.reshape(n, o, -1).transpose(1, 0, 2))
    return rows


def _channels_first(backend, rows, n, spatial):
    """(O, N·P) rows as a contiguous (N, O, *spatial) array; the adjoint of _planes."""
    o = rows.shape[0]
    out = backend.pool.empty((n, o) + tuple(spatial), rows.dtype)
    np.copyto(out.reshape(n, o, -1), rows.reshape(o, n, -1).transpose(1, 0, 2))
    return out


def _filters_times(backend, w, cols, groups):
    """The filters (O, C/G, *kernel) times tap-major columns (C·K, M), group by group: (O, M)."""
    filters = w.reshape(w.shape[0], -1)
    if groups == 1:
        return matmul_2d(backend, filters, cols)
    return np.matmul(_per_group(filters, groups), _per_group(cols, groups)).reshape(w.shape[0], -1)


def _filters_transposed_times(backend, w, rows, groups):
    """The adjoint of _filters_times: output-gradient planes (O, M) back to tap-major columns (C·K, M)."""
    filters = w.reshape(w.shape[0], -1)
    if groups == 1:
        return matmul_2d(backend, filters.T, rows)
    product = np.matmul(_per_group(filters, groups).transpose(0, 2, 1), _per_group(rows, groups))
    return product.reshape(-1, rows.shape[1])


def conv(backend, op, x, w):
    """Convolution as tap-major im2col then one matrix product per group, whose rows are the output planes."""
    geometry = conv_geometry(op, x.shape, w.shape)
    cols = _im2col(backend, x, geometry)
    rows = _filters_times(backend, w, cols, op.groups)
    backend.pool.recycle(cols)
    out = _channels_first(backend, rows, x.shape[0], (geometry[12], geometry[13])[-(x.ndim - 2):])
    backend.pool.recycle(rows)
    return out


def _back_through_filters(backend, g, w, shape, geometry, groups):
    """g's planes back through the filters, then col2im onto an array of `shape`."""
    rows = _planes(backend, g)
    cols = _filters_transposed_times(backend, w, rows, groups)
    backend.pool.recycle(rows)
    out = _col2im(backend, cols, shape, geometry)
    backend.pool.recycle(cols)
    return out


def conv_back_input(backend, op, g, w, x):
    """The input gradient: a matrix product per group then col2im."""
    return _back_through_filters(backend, g, w, x.shape, conv_geometry(op, x.shape, w.shape, g.shape), op.groups)


def conv_transpose(backend, op, x, w):
    """A transposed convolution: the input gradient of the convolution whose output gradient x is."""
    shape = transposed_input_shape(op, x, w)
    return _back_through_filters(backend, x, w, shape, conv_geometry(op, shape, w.shape, x.shape), op.groups)


def conv_back_filter(backend, op, x, g, w):
    """The filter gradient: the gradient's planes times im2col of the input, transposed, per group."""
    cols = _im2col(backend, x, conv_geometry(op, x.shape, w.shape, g.shape))
    rows = _planes(backend, g)
    if op.groups == 1:
        out = matmul_2d(backend, rows, cols.T).reshape(w.shape)
    else:
        out = np.matmul(_per_group(rows, op.groups), _per_group(cols, op.groups).transpose(0, 2, 1)).reshape(w.shape)
    backend.pool.recycle(rows)
    backend.pool.recycle(cols)
    return out


def max_pool(name):
    """Max pooling forward (x), backward (x, g) or gather (x, h) with the op's window."""
    def run(backend, op, x, *other):
        geometry = pool_geometry(op, x, *other)
        pooled = x.shape[:2] + (geometry[12], geometry[13])[-(x.ndim - 2):]
        out = backend.pool.empty(x.shape if name == "tf_maxpool_back" else pooled, x.dtype)
        _fn(name, x)(_buf(x), *[_buf(o) for o in other], _buf(out), *geometry)
        return out
    run.__name__ = name
    return run


# ---------------------------------------------------------------- fused optimizer updates, in place
# update op type -> (tf_update_kind, its slots in the kernel's s1, s2, s3 order, its hyper-parameters in the
# kernel's h order after lr, the hyper-parameter passed as the kernel's flag); see ckernels/src/optim.c
UPDATES = {
    "ApplySGD": ("TF_UPDATE_SGD", ("momentum_buffer",), ("momentum", "dampening", "weight_decay"), "nesterov"),
    "ApplyAdam": ("TF_UPDATE_ADAM", ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
                  ("beta1", "beta2", "eps", "weight_decay"), "decoupled"),
    "ApplyRMSProp": ("TF_UPDATE_RMSPROP", ("square_avg", "grad_avg", "momentum_buffer"),
                     ("alpha", "eps", "weight_decay", "momentum"), None),
    "ApplyAdaGrad": ("TF_UPDATE_ADAGRAD", ("state_sum",), ("lr_decay", "eps", "weight_decay"), None),
}


class UpdateState:
    """C pointer arrays to the parameters and slots of some update ops (one optimizer's, of one dtype).

    Kept while their Variables keep their arrays: making the pointers costs more than a small update.
    A Variable given a new array (assign, restore, numpy fallback) makes a fresh state.
    """

    def __init__(self, ops):
        ffi, first = native.ffi, ops[0]
        kind, slots, self.hyper_names, self.flag_name = UPDATES[first.op_type]
        self.op = first  # its hyper-parameters are read at each step: a user may change them between steps
        ctype = "double" if first.inputs[0].dtype == np.float64 else "float"
        self.variables = [var for op in ops for var in op.variables]
        self.arrays = [var.writable_value() for var in self.variables]
        self.count, self.kind = len(ops), getattr(native.lib, kind)
        self.function = getattr(native.lib, f"tf_update_multi_{_SUFFIX[self.arrays[0].dtype]}")
        arrays = iter(self.arrays)
        by_op = [dict(zip(("param",) + op.slot_names, arrays)) for op in ops]
        self.keep = [ffi.from_buffer("int64_t[]" if a.dtype.kind == "i" else f"{ctype}[]", a)
                     for a in self.arrays]  # the pointers below point into these (step counts are int64)
        pointer = dict(zip(map(id, self.arrays), self.keep))

        def pointers(name, ctype_name):
            return ffi.new(f"{ctype_name} *[]", [pointer[id(d[name])] if name in d else ffi.NULL for d in by_op])
        self.params = pointers("param", ctype)
        self.slots = [pointers(name, ctype) for name in (slots + (None, None))[:3]]
        self.steps = pointers("step", "int64_t")
        self.sizes = ffi.new("long[]", [d["param"].size for d in by_op])
        self.hyper = ffi.new("double[]", 1 + len(self.hyper_names))
        self.grads = ffi.new(f"{ctype} *[]", len(ops))
        self.ctype = f"{ctype}[]"

    def fresh(self):
        """Whether the Variables still hold the arrays the pointers point into (and mark device copies old)."""
        fresh = True
        for var, array in zip(self.variables, self.arrays):
            if var.value is not array:  # downloads first when an OpenCL session's copy is the newer one
                fresh = False
            mirror = var.device_mirror
            if mirror is not None:  # the kernel changes the host array in place: that copy is old afterwards
                mirror.device_stale = True
        return fresh

    def run(self, grads, lr):
        """One step of every update, in one C call; each grad is a contiguous array of its parameter's dtype."""
        buffers = [native.ffi.from_buffer(self.ctype, g) for g in grads]  # alive until the call returns
        for i, buffer in enumerate(buffers):
            self.grads[i] = buffer
        h = self.op.hyper
        self.hyper[0] = float(lr)
        for i, name in enumerate(self.hyper_names, 1):
            self.hyper[i] = float(h["betas"][name == "beta2"] if name in ("beta1", "beta2") else h[name])
        flag = int(bool(h[self.flag_name])) if self.flag_name else 0
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


def multi_update(backend, node, values):
    """A MultiTensorUpdate's members in one C call; False when a gradient does not fit (they then run one by one)."""
    grads, members = [], node.members
    for member, span in zip(members, node.spans):
        grad, param = np.asarray(values[span.start + 1]), member.inputs[0]  # a 0-d parameter's may be a scalar
        if (grad.dtype != param.dtype or grad.dtype not in _SUFFIX
                or grad.shape != param.value.shape or grad.size == 0):
            return False
        grads.append(grad if grad.flags.c_contiguous else np.ascontiguousarray(grad))
    update_state(backend, node, members).run(grads, values[node.spans[0].start + 2])
    backend.report.kernel_ops[node.op_type] += 1
    return True


# ---------------------------------------------------------------- the table

_UPDATE = dict(floats=(0, 1), same_shape=True, small=False)  # parameter and gradient; in place at any size

KERNELS = {
    **{op_type: Kernel(elementwise) for op_type in GENERATED},
    **{op_type: Kernel(reduce, accepts=reduced_axes) for op_type in REDUCE},
    "Softmax": Kernel(rows("tf_softmax"), accepts=along_last_axis),
    "LogSoftmax": Kernel(rows("tf_log_softmax"), accepts=along_last_axis),
    "SoftmaxGrad": Kernel(rows("tf_softmax_back"), same_shape=True, accepts=along_last_axis),
    "LogSoftmaxGrad": Kernel(rows("tf_log_softmax_back"), same_shape=True, accepts=along_last_axis),
    # numpy needs a dozen small calls for a cross-entropy: one pass in C wins at any size
    "SoftmaxCrossEntropy": Kernel(softmax_xent, floats=(0,), ndim=2, accepts=labels_fit, small=False),
    "SoftmaxCrossEntropyGrad": Kernel(softmax_xent_back, floats=(0,), ndim=2, accepts=labels_fit, small=False),
    "GatherGrad": Kernel(scatter_add, floats=(0,), accepts=integer_indices),
    "LayerNorm": Kernel(layer_norm("tf_layer_norm")),
    "LayerNormGrad": Kernel(layer_norm("tf_layer_norm_back"), same_shape=True),
    "MatMul": Kernel(matmul, ndim=2, accepts=inner_dims_match, views=True),  # a transposed operand costs BLAS nothing
    "Conv": Kernel(conv, accepts=fits_conv), "ConvBackInput": Kernel(conv_back_input, accepts=fits_conv),
    "ConvBackFilter": Kernel(conv_back_filter, accepts=fits_conv),
    "ConvTranspose": Kernel(conv_transpose, accepts=fits_conv),
    "MaxPool": Kernel(max_pool("tf_maxpool"), accepts=fits_pool),
    "MaxPoolGrad": Kernel(max_pool("tf_maxpool_back"), accepts=fits_pool),
    "MaxPoolGather": Kernel(max_pool("tf_maxpool_gather"), accepts=fits_pool),
    **{op_type: Kernel(update, **_UPDATE) for op_type in UPDATES},
}


class CBackend(Backend):
    """Runs the ops of its kernel table in C; the rest with their numpy `compute`."""

    name = "c"
    kernels = KERNELS
    small_size = host_below = SMALL

    @classmethod
    def is_available(cls):
        """True when the C library was built."""
        return native.is_built()

    @classmethod
    def why_unavailable(cls):
        """What is missing and how to get it."""
        return native.why_not_built()

    def __init__(self):
        super().__init__()
        self.threads = native.configure_threads()
        # BLAS through numpy is the fastest correct matmul; TINYFLOW_GEMM=tinyflow selects ours
        self.use_gemm = os.environ.get("TINYFLOW_GEMM", "blas").lower() == "tinyflow"
        self.pool = BufferPool()
        # optimizer update op -> its Variables' arrays and C pointers (see _state); weak, as eager optimizers come
        # and go while the eager backend stays
        self.update_state = weakref.WeakKeyDictionary()
        self.recycle = self.pool.recycle  # bound directly: the pool counts the references its caller holds

    def __repr__(self):
        return f"<tinyflow backend 'c' threads={self.threads} gemm={'tinyflow' if self.use_gemm else 'blas'}>"

    def begin_run(self):
        """Reset the run report and take back the fetched arrays of earlier runs that the caller dropped."""
        super().begin_run()
        self.pool.reclaim()

    def hand_out(self, values):
        """Lend the fetched arrays to the caller: dropped, they become output buffers again (no page faults)."""
        self.pool.lend(values)

    def may_recycle(self, shape):
        """Whether dropped values of this static shape may be big enough for the buffer pool."""
        return self.pool.worth_keeping(shape)

    def buffer_stats(self):
        """(buffers reused, buffers allocated) by the buffer pool so far."""
        return self.pool.reused, self.pool.allocated

    def fused_kernel(self, node):
        """The node's members as one generated C kernel (compiled once it has run a few times)."""
        return CFusedKernel(node, self)

    def multi_update(self, node, values):
        """Run a MultiTensorUpdate's members in one C call; False to have them run one by one."""
        return multi_update(self, node, values)

    def close(self):
        """Empty the buffer pool and forget the update ops' pointers."""
        self.pool.clear()
        self.update_state.clear()
