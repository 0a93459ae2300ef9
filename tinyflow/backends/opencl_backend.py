"""The OpenCL backend: ops run as OpenCL kernels (devices and programs: opencl_runtime.py), values stay on the device.

Only feeds (uploaded once per run), fetches and the inputs of ops without a kernel (numpy) cross the bus. Variables
keep a device copy across runs (their *mirror*), synchronised with `.value` whenever either side changes."""
import logging
import math
import weakref

import numpy as np

from ..errors import BackendError
from ..nodes import Constant, Variable
from ..ops.elementwise_ops import OPS as ELEMENTWISE_OPS
from ..ops.cross_entropy import check_labels
from ..shapes import reduced_shape
from . import opencl_runtime as rt
from .base import DECLINE, FLOATS, Backend, Kernel
from .c_codegen import device_ops
from .fused import OpenCLFusedKernel, elementwise_layout, plan_layout
from .kernel_codes import (ENUMS, POOL_KERNELS, REDUCE, ROW_KERNELS, UPDATES, along_last_axis, conv_geometry, fits_conv,
                           labels_fit, pool_geometry, pooled_shape, reduce_dims, reduced_axes, transposed_input_shape,
                           update_hyper)

log = logging.getLogger("tinyflow.opencl")


class DeviceMirror:
    """A Variable's device copy; `host_stale` / `device_stale` say which side changed last."""

    def __init__(self, backend, array):
        self.runtime, self.array, self.backend = backend.runtime, array, backend
        self.host_stale = self.device_stale = False

    def download(self):
        """The device copy as a host array (counted in the backend's transfer report)."""
        return self.backend.to_host(self.array)


class OpenCLBackend(Backend):
    """Runs ops with the kernels of ckernels/opencl on one OpenCL device; numpy for the rest."""

    name = "opencl"
    fused = OpenCLFusedKernel  # built once a node has run a few times

    why_unavailable = staticmethod(rt.why_unavailable)  # pyopencl, a device that compiles, the kernel sources

    def __init__(self, spec="opencl"):
        if not self.is_available():
            raise BackendError(f"the OpenCL backend is not available: {rt.why_unavailable()}")
        super().__init__()
        index, _, _, device = rt.choose_device(spec)
        self.runtime = rt.DeviceRuntime.for_device(index, device)
        self.lock = self.runtime.lock  # one queue and one set of kernel objects per device, whoever runs them
        self.empty = self.runtime.empty
        self._uploads = {}
        self._constants = weakref.WeakKeyDictionary()  # a dropped plan's constants go with it (to_static retraces)

    def __repr__(self):
        return f"<tinyflow backend 'opencl' device {self.runtime.index}: {self.runtime.describe()}>"

    def begin_run(self):
        """Reset the per-run report and the cache of uploaded feeds."""
        if self.report.kernel_ops or self.report.host_ops:
            log.debug("%s", self.report)
        super().begin_run()
        self._uploads.clear()

    def compute(self, op, values):
        """One eager op: its inputs uploaded for it alone, its value downloaded."""
        self.begin_run()
        return super().compute(op, values)

    def float_dtypes(self):
        """float32, and float64 when the device has cl_khr_fp64."""
        return FLOATS if self.runtime.has_fp64 else FLOATS[:1]

    def adopt(self, value):
        """Device arrays stay as they are; anything else becomes a numpy array."""
        return value if isinstance(value, (rt.pyopencl().array.Array, np.ndarray)) else np.asarray(value)

    def host_kernel(self, op):
        """Ops without an OpenCL kernel: numpy on downloaded inputs."""
        return lambda *values: self.on_host(op, values)

    def on_host(self, op, values):
        """The op's numpy compute on downloaded inputs; the result stays on the host."""
        return op.compute(*[self.to_host(v) for v in values])

    def to_host(self, value):
        """Download a device array (fetches cross once, at the end of the run)."""
        if isinstance(value, rt.pyopencl().array.Array):
            self.report.to_host += value.nbytes
            return value.get()
        return value

    def device(self, value):
        """A device array for a kernel input: uploaded once per run if it is a host array."""
        if isinstance(value, rt.pyopencl().array.Array):
            return value
        value = np.asarray(value)
        key = id(value)
        if key not in self._uploads:
            self.report.to_device += value.nbytes
            self._uploads[key] = (value, self.runtime.upload(value))  # keep `value` alive: ids are reused
        return self._uploads[key][1]

    prepare = device  # a float kernel input becomes a device array

    def variable(self, var):
        """The Variable's device copy, created or refreshed when the host side is newer."""
        mirror = var.device_mirror
        if mirror is None or mirror.runtime is not self.runtime:
            value = var.value  # downloads from another device first if that copy was newer
            self.report.to_device += value.nbytes
            mirror = DeviceMirror(self, self.runtime.upload(value))
            var.device_mirror = mirror
        elif mirror.device_stale:
            self.report.to_device += var.host_array.nbytes
            mirror.array.set(np.ascontiguousarray(var.host_array))
            mirror.device_stale = False
        mirror.backend = self
        return mirror.array

    def source_kernel(self, node):
        """Float Variables and Constants live on the device; other sources are host values."""
        if isinstance(node, Variable) and node.dtype in self.float_dtypes():
            return lambda: self.variable(node)
        if isinstance(node, Constant) and node.dtype in self.float_dtypes():
            def constant():
                if node not in self._constants:
                    self._constants[node] = self.runtime.upload(node.value)
                return self._constants[node]
            return constant
        return super().source_kernel(node)

    def launch(self, name, dtype, size, *args):
        """Run kernel `name` of the `dtype` program over `size` work-items."""
        self.runtime.kernel(name, dtype)(self.runtime.queue, (int(size),), None, *args)

    def close(self):
        """Drop the cached device copies of Constants and this run's uploads."""
        super().close()
        self._constants.clear()
        self._uploads.clear()


# ---------------------------------------------------------------- elementwise: the table's ops, generated
def elementwise(backend, op, *arrays):
    """An op of the elementwise table on the device; inputs broadcast as full arrays, rows, columns or scalars."""
    out_shape, code, _, cols = elementwise_layout(tuple([tuple(a.shape) for a in arrays]))
    if code is None or 0 in out_shape:
        return DECLINE
    dtype = arrays[0].dtype
    out = backend.empty(out_shape, dtype)
    backend.launch(f"ew_{op.op_type}", dtype, out.size, *[backend.device(a).data for a in arrays], out.data,
                   np.int64(cols), np.int32(code), *[dtype.type(getattr(op, a)) for a in op.attributes])
    return out


def add_n(backend, op, *xs):
    """A running sum with Add's kernel; numpy if some pair broadcasts in a way it does not know."""
    total = xs[0]
    for x in xs[1:]:
        total = elementwise(backend, ELEMENTWISE_OPS["Add"], total, x)
        if total is DECLINE:
            return DECLINE
    return total


# how broadcast_scale reads its input, by fused.py's kind of it (other kinds: numpy)
_PATTERNS = {"full": "TF_SAME_SHAPE", "scalar": "TF_A_SCALAR", "row": "TF_A_ROW", "col": "TF_A_COLUMN"}


def broadcast_scaled(backend, a, shape, scale):
    """a broadcast to `shape` times `scale` with the broadcast_scale kernel, or DECLINE for a layout it cannot read."""
    shape = tuple(shape)
    (kind,), _, cols = plan_layout((tuple(a.shape),), shape)
    if kind not in _PATTERNS or len(a.shape) > len(shape) or 0 in shape:
        return DECLINE
    out = backend.empty(shape, a.dtype)
    backend.launch("broadcast_scale", a.dtype, out.size, np.int32(ENUMS["tf_broadcast_pattern"][_PATTERNS[kind]]),
                   a.data, out.data, np.int64(cols), a.dtype.type(scale))
    return out


def expand_reduced(backend, op, grad, x):
    """The gradient of a reduction: grad broadcast back over the reduced axes (divided by their size for means)."""
    axes = tuple(range(len(x.shape))) if op.axes is None else op.axes
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    count = math.prod(x.shape[a] for a in axes)
    return broadcast_scaled(backend, grad.reshape(kept), x.shape, 1.0 / max(count, 1) if op.mean else 1.0)


# ---------------------------------------------------------------- shapes
def permute(backend, x, axes):
    """x (rank <= 4, on the device) with its axes permuted, by the `permute` kernel."""
    rank = len(x.shape)
    out_shape = tuple(x.shape[a] for a in axes)
    # input axis axes[p] lands at output position p, whose step is the product of the output sizes after p
    out_strides = [math.prod(out_shape[p + 1:]) for p in np.argsort(axes)]
    out, long4 = backend.empty(out_shape, x.dtype), rt.pyopencl().cltypes.make_long4
    backend.launch("permute", x.dtype, x.size, x.data, out.data, long4(*(1,) * (4 - rank), *x.shape),
                   long4(*(0,) * (4 - rank), *out_strides))
    return out


# ---------------------------------------------------------------- reductions
def reduce_axes(backend, x, axes, keepdims, code):
    """Reduce a run of adjacent axes of a device array with the tree-summing `reduce` kernel."""
    outer, n, inner = reduce_dims(x.shape, axes)
    out = backend.empty(reduced_shape(x.shape, axes, keepdims), x.dtype)
    backend.launch("reduce", x.dtype, outer * inner, np.int32(code), x.data, out.data, np.int64(n), np.int64(inner))
    return out


def sum_to_shape(backend, op, grad, like):
    """Unbroadcasting: free when shapes match, the reduce kernel for leading broadcast axes."""
    if grad.shape == like.shape:
        return grad
    lead = len(grad.shape) - len(like.shape)
    if lead > 0 and grad.shape[lead:] == like.shape:
        return reduce_axes(backend, grad, tuple(range(lead)), False, REDUCE["ReduceSum"])
    return DECLINE


# ---------------------------------------------------------------- softmax family and layer normalization
def row_kernel(backend, op, x, *others):
    """The op's row kernel `<name>(*inputs, out, cols[, eps])`, one work-item per row of x's axes from op.axis on."""
    name = ROW_KERNELS[op.op_type]
    out = backend.empty(x.shape, x.dtype)
    cols = math.prod(x.shape[op.axis % len(x.shape):])
    eps = [x.dtype.type(op.eps)] if name.startswith("layer_norm") else []
    backend.launch(name, x.dtype, x.size // cols, x.data, *[a.data for a in others], out.data, np.int64(cols), *eps)
    return out


def softmax_xent(backend, op, logits, labels, *grad):
    """Row losses, then their mean by the reduce kernel; with `grad`: (softmax(logits) - onehot(labels)) * grad / N."""
    (n, cols), host = logits.shape, np.ascontiguousarray(backend.to_host(labels), dtype=np.int64)
    check_labels(host, cols)
    scale = [logits.dtype.type(float(np.asarray(backend.to_host(g)).reshape(())) / n) for g in grad]
    out = backend.empty(logits.shape if grad else (n,), logits.dtype)
    backend.launch("softmax_xent_back" if grad else "softmax_xent", logits.dtype, n, logits.data,
                   backend.device(host).data, *scale, out.data, np.int64(cols))
    return out if grad else reduce_axes(backend, out, (0,), False, REDUCE["ReduceMean"])


# ---------------------------------------------------------------- matmul, convolution, pooling
def matmul(backend, op, a, b):
    """a (m x k) @ b (k x n) on the device with the tiled `matmul` kernel."""
    (m, k), n, tile = a.shape, b.shape[1], 16
    out = backend.empty((m, n), a.dtype)
    backend.runtime.kernel("matmul", a.dtype)(backend.runtime.queue, (-(-n // tile) * tile, -(-m // tile) * tile),
                                              (tile, tile), a.data, b.data, out.data, np.int64(m), np.int64(n),
                                              np.int64(k))
    return out


def two_matrices(op, a, b):
    """a (m, k) and b (k, n): the tiled kernel's operands."""
    return len(b.shape) == 2 and a.shape[-1] == b.shape[0]


def _long16(geometry):
    """A window geometry (kernel_codes.window_geometry) as the kernels take it."""
    return rt.pyopencl().cltypes.make_long16(*geometry, 0, 0)


def _im2col(backend, x, geometry):
    """The windows of x as (N·P, C·K) rows."""
    n, c, kh, kw, ho, wo = geometry[0], geometry[1], geometry[4], geometry[5], geometry[12], geometry[13]
    cols = backend.empty((n * ho * wo, c * kh * kw), x.dtype)
    backend.launch("im2col", x.dtype, cols.size, x.data, cols.data, _long16(geometry))
    return cols


def conv_back_input(backend, op, y, w, x=None):
    """Input gradient of a conv (x gives the shape; a ConvTranspose is this): y's (N·P, O) rows @ filters, col2im."""
    shape = transposed_input_shape(op, y, w) if x is None else x.shape
    geometry = conv_geometry(op, shape, w.shape, y.shape)
    rows = permute(backend, y, (0,) + tuple(range(2, len(y.shape))) + (1,)).reshape(-1, y.shape[1])
    cols = matmul(backend, None, rows, w.reshape(w.shape[0], -1))  # (N·P, C·K)
    out = backend.empty(shape, rows.dtype)
    backend.launch("col2im", rows.dtype, out.size, cols.data, out.data, _long16(geometry))
    return out


def conv(backend, op, x, w):
    """Convolution as im2col then one matrix product."""
    geometry = conv_geometry(op, x.shape, w.shape)
    out_spatial = pooled_shape(x.shape, geometry)[2:]
    filters = permute(backend, w.reshape(w.shape[0], -1), (1, 0))  # (C·K, O)
    rows = matmul(backend, None, _im2col(backend, x, geometry), filters)  # (N·P, O)
    rank = len(out_spatial)
    return permute(backend, rows.reshape((x.shape[0],) + out_spatial + (w.shape[0],)),
                   (0, rank + 1) + tuple(range(1, rank + 1)))


def conv_back_filter(backend, op, x, g, w):
    """The filter gradient: the gradient's rows times im2col of the input."""
    geometry = conv_geometry(op, x.shape, w.shape, g.shape)
    grad_rows = permute(backend, g, (1, 0) + tuple(range(2, len(g.shape)))).reshape(w.shape[0], -1)  # (O, N·P)
    return matmul(backend, None, grad_rows, _im2col(backend, x, geometry)).reshape(w.shape)


def max_pool(backend, op, x, *other):
    """Max pooling forward (x), backward (x, g) or gather (x, h) with the op's window."""
    geometry = pool_geometry(op, x, *other)
    out = backend.empty(x.shape if op.op_type == "MaxPoolGrad" else pooled_shape(x.shape, geometry), x.dtype)
    backend.launch(POOL_KERNELS[op.op_type], x.dtype, out.size, x.data, *[o.data for o in other], out.data,
                   _long16(geometry))
    return out


# ---------------------------------------------------------------- fused optimizer updates, in place on the mirrors
def update(backend, op, param, grad, lr, *slots):
    """One optimizer update (SGD, Adam, RMSProp, AdaGrad) on the device copies of its Variables, in place."""
    kind, slot_names, _, _ = UPDATES[op.op_type]
    variables = dict(zip(("param",) + op.slot_names, op.variables))
    step = 0
    if "step" in variables:  # the step counter stays a host scalar
        step = int(variables["step"].value) + 1
        variables["step"].value = np.asarray(step)
    stand_in = backend.empty((1,), grad.dtype).data
    buffers = [backend.variable(variables[name]).data if name in variables else stand_in
               for name in (slot_names + (None, None))[:3]]
    if isinstance(op.inputs[2], Constant):  # the usual learning rate: read without a download
        lr = op.inputs[2].value
    hyper, flag = update_hyper(op, np.asarray(backend.to_host(lr)).reshape(()))
    backend.launch("update", grad.dtype, grad.size, np.int32(ENUMS["tf_update_kind"][kind]),
                   backend.variable(variables["param"]).data, grad.data, *buffers,
                   np.int32(sum(1 << k for k, name in enumerate(slot_names) if name in variables)), np.int64(step),
                   *[grad.dtype.type(h) for h in (hyper + [0.0] * 4)[:5]], np.int32(flag))
    for var in op.variables:
        if var.dtype != np.int64:
            var.mark_device_newer()


# ---------------------------------------------------------------- the table
def reshape(backend, op, x, *like):
    """A reshaped view of the device array."""
    return x.reshape(like[0].shape if like else op.target)


_FIRST = dict(floats=(0,))  # only the first input is data; the others give shapes or labels
_UNGROUPED = dict(accepts=lambda op, *arrays: op.groups == 1 and fits_conv(op, *arrays))  # kernels multiply one matrix

OpenCLBackend.kernels = {
    **{cls.op_type: Kernel(elementwise) for cls in device_ops()},
    **{op_type: Kernel(lambda backend, op, x: reduce_axes(backend, x, reduced_axes(op, x), op.keepdims,
                                                          REDUCE[op.op_type]), accepts=reduced_axes)
       for op_type in REDUCE},  # sum, mean or max over a contiguous run of axes
    **{op_type: Kernel(row_kernel, same_shape=True, accepts=None if name.startswith("layer") else along_last_axis)
       for op_type, name in ROW_KERNELS.items()},
    **dict.fromkeys(("SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad"),
                    Kernel(softmax_xent, floats=(0,), ndim=2, accepts=labels_fit)),
    "MatMul": Kernel(matmul, ndim=2, accepts=two_matrices),
    "Conv": Kernel(conv, **_UNGROUPED), "ConvBackInput": Kernel(conv_back_input, **_UNGROUPED),
    "ConvBackFilter": Kernel(conv_back_filter, **_UNGROUPED), "ConvTranspose": Kernel(conv_back_input, **_UNGROUPED),
    **{op_type: Kernel(max_pool, accepts=pool_geometry) for op_type in POOL_KERNELS},
    **{op_type: Kernel(update, floats=(0, 1), same_shape=True) for op_type in UPDATES},  # parameter, gradient
    "Transpose": Kernel(lambda backend, op, x: permute(backend, x, op.axes), accepts=lambda op, x: len(x.shape) <= 4),
    "Reshape": Kernel(reshape, **_FIRST), "ReshapeLike": Kernel(reshape, **_FIRST),
    **dict.fromkeys(("Identity", "StopGradient"), Kernel(lambda backend, op, x: x)),  # no copy on the device
    "SumToShapeOf": Kernel(sum_to_shape, **_FIRST), "ExpandReduced": Kernel(expand_reduced, **_FIRST),
    "BroadcastLike": Kernel(lambda backend, op, value, like: broadcast_scaled(backend, value, like.shape, 1.0),
                            **_FIRST),
    "OnesLike": Kernel(lambda backend, op, x: backend.empty(x.shape, x.dtype).fill(1)),
    "ZerosLike": Kernel(lambda backend, op, x: backend.empty(x.shape, x.dtype).fill(0)),
    "AddN": Kernel(add_n), "Group": Kernel(lambda backend, op, *values: None, floats=()),  # only orders its inputs
}
