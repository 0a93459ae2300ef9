"""The C backend: the cffi kernels of ckernels/ for the hot ops, numpy for everything else.

Every entry of the kernel table validates before calling C: float32/float64
inputs of one dtype, shapes the kernel handles, contiguous buffers (copied when
not), freshly allocated outputs. Anything else falls back to the op's numpy
`compute`, so no input reachable from the public API can crash the interpreter.
"""
import math
import os

import numpy as np

from . import native
from ..ops.losses import check_labels as _check_labels
from ..shapes import is_fully_known, reduced_shape
from .base import Backend
from .kernel_codes import BINARY, REDUCE, UNARY, broadcast_layout, window_geometry
from .buffer_pool import POOL

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}

# Below this many elements in every input, numpy's own loop beats a call into C (cffi and the
# checks cost a few microseconds; measured by benchmarks/kernels.py); in-place optimizer updates
# are the exception, as they save a copy at any size.
SMALL = 4096
_CTYPE = {"f32": "float[]", "f64": "double[]"}


def _suffix(*arrays):
    """'f32' or 'f64' when every array is a non-empty float array of that one dtype, else None."""
    dtype = arrays[0].dtype
    if dtype not in _SUFFIX or any(a.dtype != dtype or a.size == 0 for a in arrays):
        return None
    return _SUFFIX[dtype]


def _buf(array, suffix):
    """A C pointer to a contiguous array's data (the caller keeps the array alive)."""
    return native.ffi.from_buffer(_CTYPE[suffix], array)


def _fn(name, suffix):
    return getattr(native.lib, f"{name}_{suffix}")


def contiguous(array, dtype=None):
    """The array itself if C-contiguous (and of `dtype`), else a contiguous copy; keeps 0-d shapes."""
    if array.flags.c_contiguous and (dtype is None or array.dtype == dtype):
        return array
    return np.array(array, dtype=dtype, order="C")


def _contiguous(*arrays):
    return [contiguous(a) for a in arrays]


def _array(value):
    return value if isinstance(value, np.ndarray) else np.asarray(value)


# ---------------------------------------------------------------- elementwise
_BINARY, _UNARY = BINARY, UNARY


def binary_kernel(op, a, b):
    """a (op) b for the broadcasting patterns the C kernel knows."""
    a, b = _array(a), _array(b)
    suffix = _suffix(a, b)
    layout = broadcast_layout(a.shape, b.shape) if suffix else None
    if layout is None:
        return op.compute(a, b)
    pattern, rows, cols, out_shape = layout
    a, b = _contiguous(a, b)
    out = POOL.empty(out_shape, a.dtype)
    _fn("tf_binary", suffix)(_BINARY[op.op_type], pattern, _buf(a, suffix), _buf(b, suffix), _buf(out, suffix),
                             rows, cols)
    return out


def unary_kernel(op, x):
    """Elementwise math of one input."""
    x = _array(x)
    suffix = _suffix(x)
    if suffix is None:
        return op.compute(x)
    (x,) = _contiguous(x)
    out = POOL.empty(x.shape, x.dtype)
    _fn("tf_unary", suffix)(_UNARY[op.op_type], _buf(x, suffix), _buf(out, suffix), x.size)
    return out


def _same_shape_kernel(name, *attributes):
    """A kernel `name(*inputs, out, n, *op_attributes)` over inputs of one shape (activations, `_back`s)."""
    def kernel(op, *arrays):
        arrays = [_array(a) for a in arrays]
        suffix = _suffix(*arrays)
        if suffix is None or any(a.shape != arrays[0].shape for a in arrays):
            return op.compute(*arrays)
        arrays = _contiguous(*arrays)
        out = POOL.empty(arrays[-1].shape, arrays[-1].dtype)
        _fn(name, suffix)(*[_buf(a, suffix) for a in arrays], _buf(out, suffix), out.size,
                          *[getattr(op, attr) for attr in attributes])
        return out
    return kernel


# ---------------------------------------------------------------- reductions
_REDUCE = REDUCE


def reduce_kernel(op, x):
    """Sum, mean or max over a contiguous run of axes, collapsed into one middle axis."""
    x = _array(x)
    axes = tuple(range(x.ndim)) if op.axes is None else op.axes
    suffix = _suffix(x)
    if suffix is None or not axes or list(axes) != list(range(axes[0], axes[-1] + 1)):
        return op.compute(x)
    outer = int(np.prod(x.shape[:axes[0]], dtype=np.int64))
    n = int(np.prod(x.shape[axes[0]:axes[-1] + 1], dtype=np.int64))
    inner = int(np.prod(x.shape[axes[-1] + 1:], dtype=np.int64))
    (x,) = _contiguous(x)
    out = POOL.empty(reduced_shape(x.shape, axes, op.keepdims), x.dtype)
    _fn("tf_reduce", suffix)(_REDUCE[op.op_type], _buf(x, suffix), _buf(out, suffix), outer, n, inner)
    return out


# ---------------------------------------------------------------- softmax family
def _rows_kernel(name):
    """A row-wise kernel `name(*inputs, out, rows, cols)` along the last axis."""
    def kernel(op, *arrays):
        arrays = [_array(a) for a in arrays]
        suffix = _suffix(*arrays)
        x = arrays[0]
        if suffix is None or op.axis % x.ndim != x.ndim - 1 or any(a.shape != x.shape for a in arrays):
            return op.compute(*arrays)
        arrays = _contiguous(*arrays)
        out = POOL.empty(arrays[0].shape, arrays[0].dtype)
        cols = x.shape[-1]
        _fn(name, suffix)(*[_buf(a, suffix) for a in arrays], _buf(out, suffix), x.size // cols, cols)
        return out
    return kernel


def _labels(labels, logits):
    """int64 contiguous labels after checking their range (ValueError naming the bad one)."""
    labels = contiguous(labels, np.int64)
    _check_labels(labels, logits.shape[1])
    return labels


def softmax_xent_kernel(op, logits, labels):
    """Fused mean softmax cross-entropy."""
    logits, labels = _array(logits), _array(labels)
    suffix = _suffix(logits)
    if suffix is None or logits.ndim != 2 or labels.shape != logits.shape[:1] or labels.dtype.kind not in "iu":
        return op.compute(logits, labels)
    (logits,) = _contiguous(logits)
    labels = _labels(labels, logits)
    loss = native.ffi.new("double *")
    scratch = POOL.empty(logits.shape, logits.dtype)
    _fn("tf_softmax_xent", suffix)(_buf(logits, suffix), native.ffi.from_buffer("int64_t[]", labels),
                                   logits.shape[0], logits.shape[1], _buf(scratch, suffix), loss)
    POOL.recycle(scratch)
    return np.asarray(loss[0], dtype=logits.dtype)


def softmax_xent_back_kernel(op, logits, labels, grad):
    """(softmax(logits) - onehot(labels)) * grad / N in one pass."""
    logits, labels, grad = _array(logits), _array(labels), _array(grad)
    suffix = _suffix(logits)
    if suffix is None or logits.ndim != 2 or labels.shape != logits.shape[:1] or grad.size != 1 \
            or labels.dtype.kind not in "iu":
        return op.compute(logits, labels, grad)
    (logits,) = _contiguous(logits)
    labels = _labels(labels, logits)
    out = POOL.empty(logits.shape, logits.dtype)
    _fn("tf_softmax_xent_back", suffix)(_buf(logits, suffix), native.ffi.from_buffer("int64_t[]", labels),
                                        logits.shape[0], logits.shape[1], float(grad.reshape(())), _buf(out, suffix))
    return out


# ---------------------------------------------------------------- matmul
def gemm(a, b):
    """a @ b for 2-D float arrays of one dtype with the hand-written C GEMM (None if it does not apply)."""
    suffix = _suffix(a, b)
    if suffix is None or a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        return None
    a, b = _contiguous(a, b)
    out = POOL.empty((a.shape[0], b.shape[1]), a.dtype)
    if _fn("tf_gemm", suffix)(a.shape[0], b.shape[1], a.shape[1], _buf(a, suffix), _buf(b, suffix),
                              _buf(out, suffix)) != 0:
        raise MemoryError("tf_gemm could not allocate its packing buffers")
    return out


def matmul_2d(a, b, use_gemm):
    """a @ b for 2-D float arrays of one dtype (None otherwise): the hand-written GEMM if chosen, else
    BLAS writing into a recycled buffer, since a fresh output would cost page faults every step."""
    if _suffix(a, b) is None or a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        return None
    if use_gemm:
        return gemm(a, b)
    return np.matmul(a, b, out=POOL.empty((a.shape[0], b.shape[1]), a.dtype))


# ---------------------------------------------------------------- convolution and pooling
def _geometry(x, kernel, stride, padding):
    return window_geometry(x.shape, kernel, stride, padding)


def _im2col(x, geometry, suffix):
    n, c, _, _, kh, kw, _, _, _, _, ho, wo = geometry
    cols = POOL.empty((n * ho * wo, c * kh * kw), x.dtype)
    _fn("tf_im2col", suffix)(_buf(x, suffix), _buf(cols, suffix), *geometry)
    return cols


def _conv_geometry(op, x, w, suffix, grad=None):
    """The geometry of a convolution the C path can run (inputs and gradient consistent), else None."""
    if suffix is None or x.ndim != 4 or w.ndim != 4 or x.shape[1] != w.shape[1]:
        return None
    geometry = _geometry(x, w.shape[2:], op.stride, op.padding)
    if geometry is None or (grad is not None and grad.shape != (x.shape[0], w.shape[0]) + geometry[10:]):
        return None
    return geometry


class CBackend(Backend):
    """Runs the ops of its kernel table in C; the rest with their numpy `compute`."""

    name = "c"

    @classmethod
    def is_available(cls):
        """True when the C library was built."""
        return native.is_built()

    @classmethod
    def why_unavailable(cls):
        """What is missing and how to get it."""
        return native.why_not_built()

    def kernel(self, op):
        """The callable for `op`: numpy's compute for small inputs, the C kernel of the table otherwise."""
        fn = self.kernels.get(op.op_type)
        if fn is None or getattr(op, "stateful", False):
            return super().kernel(op)
        compute = op.compute
        static = [op.shape] + [i.shape for i in op.inputs]
        if all(is_fully_known(shape) and math.prod(shape) < SMALL for shape in static):
            return compute  # small for sure: decided once, here, instead of at every run

        def run(*values):
            for value in values:
                if getattr(value, "size", 0) >= SMALL:
                    return fn(op, *values)
            return compute(*values)
        return run

    recycle = POOL.recycle  # values the plan drops go back to the buffer pool (see buffer_pool.py)

    def __init__(self):
        self.threads = native.configure_threads()
        # BLAS through numpy is the fastest correct matmul; TINYFLOW_GEMM=tinyflow selects ours
        self.use_gemm = os.environ.get("TINYFLOW_GEMM", "blas").lower() == "tinyflow"
        self.kernels = self._kernel_table()

    def __repr__(self):
        return f"<tinyflow backend 'c' threads={self.threads} gemm={'tinyflow' if self.use_gemm else 'blas'}>"

    def _kernel_table(self):
        table = {op_type: binary_kernel for op_type in _BINARY}
        table.update({op_type: unary_kernel for op_type in _UNARY})
        table.update({op_type: reduce_kernel for op_type in _REDUCE})
        table.update({
            "Sigmoid": _same_shape_kernel("tf_sigmoid"), "SigmoidGrad": _same_shape_kernel("tf_sigmoid_back"),
            "Tanh": _same_shape_kernel("tf_tanh"), "TanhGrad": _same_shape_kernel("tf_tanh_back"),
            "Relu": _same_shape_kernel("tf_relu"), "ReluGrad": _same_shape_kernel("tf_relu_back"),
            "LeakyRelu": _same_shape_kernel("tf_leaky_relu", "alpha"),
            "LeakyReluGrad": _same_shape_kernel("tf_leaky_relu_back", "alpha"),
            "Softplus": _same_shape_kernel("tf_softplus"),
            "Softmax": _rows_kernel("tf_softmax"), "LogSoftmax": _rows_kernel("tf_log_softmax"),
            "SoftmaxGrad": _rows_kernel("tf_softmax_back"), "LogSoftmaxGrad": _rows_kernel("tf_log_softmax_back"),
            "SoftmaxCrossEntropy": softmax_xent_kernel, "SoftmaxCrossEntropyGrad": softmax_xent_back_kernel,
            "MatMul": self._matmul_kernel,
            "Conv2D": self._conv2d, "Conv2DBackInput": self._conv2d_back_input,
            "Conv2DBackFilter": self._conv2d_back_filter,
            "MaxPool2D": _pool_kernel("tf_maxpool"), "MaxPool2DGrad": _pool_kernel("tf_maxpool_back"),
            "MaxPool2DGather": _pool_kernel("tf_maxpool_gather"),
        })
        from .c_optim import OPTIMIZER_KERNELS
        table.update(OPTIMIZER_KERNELS)
        return table

    def _matmul_kernel(self, op, a, b):
        a, b = _array(a), _array(b)
        out = matmul_2d(a, b, self.use_gemm)
        return op.compute(a, b) if out is None else out

    def _conv2d(self, op, x, w):
        x, w = _array(x), _array(w)
        suffix = _suffix(x, w)
        geometry = _conv_geometry(op, x, w, suffix)
        if geometry is None:
            return op.compute(x, w)
        x, w = _contiguous(x, w)
        n, ho, wo = geometry[0], geometry[10], geometry[11]
        out = matmul_2d(_im2col(x, geometry, suffix), w.reshape(w.shape[0], -1).T, self.use_gemm)
        return np.ascontiguousarray(out.reshape(n, ho, wo, -1).transpose(0, 3, 1, 2))

    def _conv2d_back_input(self, op, g, w, x):
        g, w, x = _array(g), _array(w), _array(x)
        suffix = _suffix(g, w)
        geometry = _conv_geometry(op, x, w, suffix, grad=g)
        if geometry is None:
            return op.compute(g, w, x)
        (w,) = _contiguous(w)
        rows = g.transpose(0, 2, 3, 1).reshape(-1, w.shape[0])  # (N·Ho·Wo, C_out)
        cols = matmul_2d(rows, w.reshape(w.shape[0], -1), self.use_gemm)
        dx = POOL.empty(x.shape, g.dtype)
        _fn("tf_col2im", suffix)(_buf(cols, suffix), _buf(dx, suffix), *geometry)
        return dx

    def _conv2d_back_filter(self, op, x, g, w):
        x, g, w = _array(x), _array(g), _array(w)
        suffix = _suffix(x, g)
        geometry = _conv_geometry(op, x, w, suffix, grad=g)
        if geometry is None:
            return op.compute(x, g, w)
        (x,) = _contiguous(x)
        rows = np.ascontiguousarray(g.transpose(1, 0, 2, 3).reshape(w.shape[0], -1))  # (C_out, N·Ho·Wo)
        return matmul_2d(rows, _im2col(x, geometry, suffix), self.use_gemm).reshape(w.shape)


def _pool_kernel(name):
    """Max pooling forward (x), backward (x, g) or gather (x, h) with the op's window."""
    def kernel(op, x, *other):
        x = _array(x)
        other = [_array(o) for o in other]
        suffix = _suffix(x, *other)
        geometry = _geometry(x, op.kernel, op.stride, op.padding) if suffix and x.ndim == 4 else None
        pooled_shape = None if geometry is None else x.shape[:2] + geometry[10:]
        if geometry is None or (name == "tf_maxpool_back" and other[0].shape != pooled_shape) \
                or (name == "tf_maxpool_gather" and other[0].shape != x.shape):
            return op.compute(x, *other)
        arrays = _contiguous(x, *other)
        out = POOL.empty(x.shape if name == "tf_maxpool_back" else pooled_shape, x.dtype)
        _fn(name, suffix)(*[_buf(a, suffix) for a in arrays], _buf(out, suffix), *geometry)
        return out
    return kernel
