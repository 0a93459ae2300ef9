"""The OpenCL backend: ops run as OpenCL kernels and their results stay on the device.

Within one Session.run, values flow between kernels as device arrays; only feeds
(uploaded once per run), fetches (downloaded at the end) and ops without an OpenCL
kernel (run by numpy on the host, a transfer each way) cross the bus. Variables
keep a device copy across runs (their *mirror*), synchronised with `.value` whenever
either side changes. The table at the bottom says what each kernel accepts;
`Backend.kernel` (base.py) checks it, uploads float inputs, falls back to numpy and
fills `backend.report` (which ops ran where, what crossed) once for every entry.
Devices, contexts and programs are in opencl_runtime.py.
"""
import logging
import weakref

import numpy as np

from ..errors import BackendError
from ..nodes import Constant, Variable
from ..ops.losses import check_labels
from ..shapes import reduced_shape
from . import opencl_runtime as rt
from .base import DECLINE, FLOATS, Backend, Kernel, source_kernel
from .fused import plan_layout
from .opencl_fused import OpenCLFusedKernel
from ..ops.elementwise_ops import GRADIENTS as GRADIENT_OPS, OPS as ELEMENTWISE_OPS
from ..ops.expressions import OPENCL_HELPERS, spell, takes_conditions
from .kernel_codes import (LAYOUT_KINDS, PATTERN, REDUCE, along_last_axis, broadcast_layout, conv_geometry, fits_conv,
                           fits_pool, inner_dims_match, labels_fit, pool_geometry, reduced_axes, transposed_input_shape)

log = logging.getLogger("tinyflow.opencl")


class DeviceMirror:
    """A Variable's device copy; `host_stale` / `device_stale` say which side changed last."""

    def __init__(self, backend, array):
        self.runtime, self.array = backend.runtime, array
        self.host_stale = self.device_stale = False
        self.backend = backend

    def download(self):
        """The device copy as a host array (counted in the backend's transfer report)."""
        self.backend.report.to_host += self.array.nbytes
        return self.array.get()


class OpenCLBackend(Backend):
    """Runs ops with the kernels of ckernels/opencl on one OpenCL device; numpy for the rest."""

    name = "opencl"

    @classmethod
    def is_available(cls):
        """True when pyopencl, a device and the kernel sources are all there."""
        return rt.why_unavailable() == ""

    @classmethod
    def why_unavailable(cls):
        """What is missing and how to get it."""
        return rt.why_unavailable()

    def __init__(self, spec="opencl"):
        if not self.is_available():
            raise BackendError(f"the OpenCL backend is not available: {rt.why_unavailable()}")
        super().__init__()
        index, _, _, device = rt.choose_device(spec)
        self.runtime = rt.DeviceRuntime.for_device(index, device)
        self.lock = self.runtime.lock  # one queue and one set of kernel objects per device, whoever runs them
        self._uploads = {}
        self._constants = weakref.WeakKeyDictionary()  # a dropped plan's constants go with it (to_static retraces)

    def __repr__(self):
        return f"<tinyflow backend 'opencl' device {self.runtime.index}: {self.runtime.describe()}>"

    # ------------------------------------------------------------ runs and transfers
    def begin_run(self):
        """Reset the per-run report and the cache of uploaded feeds."""
        if self.report.kernel_ops or self.report.host_ops:
            log.debug("%s", self.report)
        super().begin_run()
        self._uploads.clear()

    def fused_kernel(self, node):
        """The node's members as one generated OpenCL kernel (built once it has run a few times)."""
        return OpenCLFusedKernel(node, self)

    def compute(self, op, values):
        """One eager op: its inputs uploaded for it alone, its value downloaded."""
        self.begin_run()
        return super().compute(op, values)

    def float_dtypes(self):
        """float32, and float64 when the device has cl_khr_fp64."""
        return FLOATS if self.runtime.has_fp64 else FLOATS[:1]

    def adopt(self, value):
        """Device arrays stay as they are; anything else becomes a numpy array."""
        return value if isinstance(value, (rt.cl_array.Array, np.ndarray)) else np.asarray(value)

    def prepare(self, value):
        """A float input as a device array (uploaded once per run)."""
        return self.device(value)

    def host_kernel(self, op):
        """Ops without an OpenCL kernel: numpy on downloaded inputs."""
        return lambda *values: self.on_host(op, values)

    def on_host(self, op, values):
        """The op's numpy compute on downloaded inputs; the result stays on the host."""
        return op.compute(*[self.to_host(v) for v in values])

    def to_host(self, value):
        """Download a device array (fetches cross once, at the end of the run)."""
        if isinstance(value, rt.cl_array.Array):
            self.report.to_host += value.nbytes
            return value.get()
        return value

    def device(self, value):
        """A device array for a kernel input: uploaded once per run if it is a host array."""
        if isinstance(value, rt.cl_array.Array):
            return value
        value = np.asarray(value)
        key = id(value)
        if key not in self._uploads:
            self.report.to_device += value.nbytes
            self._uploads[key] = (value, self.runtime.upload(value))  # keep `value` alive: ids are reused
        return self._uploads[key][1]

    def variable(self, var):
        """The Variable's device copy, created or refreshed when the host side is newer."""
        mirror = var.device_mirror
        if mirror is None or mirror.runtime is not self.runtime:
            value = var.value  # downloads from another device first if that copy was newer
            self.report.to_device += value.nbytes
            mirror = DeviceMirror(self, self.runtime.upload(value))
            var.attach_mirror(mirror)
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
            return lambda: self._constant(node)
        return source_kernel(node)

    def _constant(self, node):
        if node not in self._constants:
            self._constants[node] = self.runtime.upload(node.value)
        return self._constants[node]

    def launch(self, name, dtype, size, *args):
        """Run kernel `name` of the `dtype` program over `size` work-items."""
        self.runtime.kernel(name, dtype)(self.runtime.queue, (int(size),), None, *args)

    def empty(self, shape, dtype):
        """An uninitialised device array."""
        return self.runtime.empty(shape, dtype)

    def close(self):
        """Drop the cached device copies of Constants and this run's uploads."""
        self._constants.clear()
        self._uploads.clear()


def _scalar(dtype, value):
    return np.dtype(dtype).type(value)


# ---------------------------------------------------------------- elementwise: the table's ops, generated
def elementwise_source(single):
    """One OpenCL kernel per op of the elementwise table (ops/elementwise.py), one work-item per value:
        __kernel void ew_Relu(__global const T *x0, __global T *out, const long cols, const int kinds) {
            const long i = get_global_id(0), r = i / cols, c = i - r * cols;
            const T a0 = x0[tf_at(kinds, 0, i, r, c)];
            const T t0 = ((a0 != a0 || a0 > 0.0f) ? a0 : 0.0f);
            out[i] = t0;
        }
    """
    lines = [OPENCL_HELPERS, "long tf_at(int kinds, int k, long i, long r, long c) {",
             "    int kind = (kinds >> (2 * k)) & 3;",
             f"    return kind == {LAYOUT_KINDS['full']} ? i : kind == {LAYOUT_KINDS['row']} ? c : "
             f"kind == {LAYOUT_KINDS['col']} ? r : 0;", "}"]
    for cls in [*ELEMENTWISE_OPS.values(), *GRADIENT_OPS.values()]:
        if cls.dtype_rule(np.float32) != np.float32 or takes_conditions(cls.expression):
            continue  # comparisons, where: booleans stay with numpy
        names = {x: f"a{k}" for k, x in enumerate(cls.input_names)}
        names.update({a: a for a in cls.attributes})
        statements, result = spell(cls.expression, names.__getitem__, single, opencl=True)
        params = [*(f"__global const T *x{k}" for k in range(len(cls.input_names))), "__global T *out",
                  "const long cols", "const int kinds", *(f"const T {a}" for a in cls.attributes)]
        lines += [f"__kernel void ew_{cls.op_type}({', '.join(params)}) {{",
                  "    const long i = get_global_id(0), r = i / cols, c = i - r * cols;",
                  *[f"    const T a{k} = x{k}[tf_at(kinds, {k}, i, r, c)];" for k in range(len(cls.input_names))],
                  *[f"    {line}" for line in statements], f"    out[i] = {result};", "}"]
    return "\n".join(lines) + "\n"


rt.GENERATED_SOURCES.append(elementwise_source)


def elementwise(backend, op, *arrays):
    """An op of the elementwise table on the device; inputs broadcast as full arrays, rows, columns or scalars."""
    shapes = tuple(tuple(a.shape) for a in arrays)
    out_shape = np.broadcast_shapes(*shapes)
    kinds, _, cols = plan_layout(shapes, out_shape)
    if not all(k in LAYOUT_KINDS for k in kinds) or 0 in out_shape:
        return DECLINE
    dtype = arrays[0].dtype
    out = backend.empty(out_shape, dtype)
    backend.launch(f"ew_{op.op_type}", dtype, out.size, *[backend.device(a).data for a in arrays], out.data,
                   np.int64(cols), np.int32(sum(LAYOUT_KINDS[k] << 2 * i for i, k in enumerate(kinds))),
                   *[_scalar(dtype, getattr(op, a)) for a in op.attributes])
    return out


def fill(number):
    """OnesLike / ZerosLike on the device."""
    def run(backend, op, x):
        out = backend.empty(x.shape, x.dtype)
        out.fill(number)
        return out
    return run


def add_n(backend, op, *xs):
    """A running sum with Add's kernel; numpy if some pair broadcasts in a way it does not know."""
    total = xs[0]
    for x in xs[1:]:
        total = elementwise(backend, ELEMENTWISE_OPS["Add"], total, x)
        if total is DECLINE:
            return DECLINE
    return total


def group(backend, op, *values):
    """Group only orders its inputs: nothing to compute."""
    return None


def broadcast_scaled(backend, a, shape, scale):
    """a broadcast to `shape` times `scale` with the broadcast_scale kernel, or DECLINE if the pattern is new."""
    layout = broadcast_layout(tuple(a.shape), tuple(shape)) if int(np.prod(shape)) else None
    if layout is None or layout[0] not in (PATTERN["TF_SAME_SHAPE"], PATTERN["TF_A_SCALAR"], PATTERN["TF_A_ROW"],
                                           PATTERN["TF_A_COLUMN"]):
        return DECLINE
    pattern, rows, cols, _ = layout
    out = backend.empty(tuple(shape), a.dtype)
    backend.launch("broadcast_scale", a.dtype, rows * cols, np.int32(pattern), a.data, out.data, np.int64(cols),
                   _scalar(a.dtype, scale))
    return out


def expand_reduced(backend, op, grad, x):
    """The gradient of a reduction: grad broadcast back over the reduced axes (divided by their size for means)."""
    axes = tuple(range(len(x.shape))) if op.axes is None else op.axes
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    scale = 1.0 / max(count, 1) if op.mean else 1.0
    return broadcast_scaled(backend, grad.reshape(kept), x.shape, scale)


def broadcast_like(backend, op, value, like):
    """value broadcast to like's shape."""
    return broadcast_scaled(backend, value, like.shape, 1.0)


# ---------------------------------------------------------------- shapes
def identity(backend, op, x):
    """The input itself (no copy on the device)."""
    return x


def reshape(backend, op, x, *like):
    """A reshaped view of the device array."""
    return x.reshape(like[0].shape if like else op.target)


def permute(backend, x, axes):
    """x (rank <= 4, on the device) with its axes permuted, by the `permute` kernel."""
    rank = len(x.shape)
    dims = (1,) * (4 - rank) + tuple(x.shape)
    out_shape = tuple(x.shape[a] for a in axes)
    out_strides = [0] * rank
    stride = 1
    for position in reversed(range(rank)):  # where input axis axes[position] lands in the output
        out_strides[axes[position]] = stride
        stride *= out_shape[position]
    strides = (0,) * (4 - rank) + tuple(out_strides)
    out = backend.empty(out_shape, x.dtype)
    backend.launch("permute", x.dtype, x.size, x.data, out.data, rt.cl.cltypes.make_long4(*dims),
                   rt.cl.cltypes.make_long4(*strides))
    return out


def transpose(backend, op, x):
    """Axes permuted by the op's `axes`."""
    return permute(backend, x, op.axes)


def rank_at_most_4(op, x):
    return len(x.shape) <= 4


# ---------------------------------------------------------------- reductions
def reduce_axes(backend, x, axes, keepdims, code):
    """Reduce a run of adjacent axes of a device array with the tree-summing `reduce` kernel."""
    outer = int(np.prod(x.shape[:axes[0]], dtype=np.int64))
    n = int(np.prod(x.shape[axes[0]:axes[-1] + 1], dtype=np.int64))
    inner = int(np.prod(x.shape[axes[-1] + 1:], dtype=np.int64))
    out = backend.empty(reduced_shape(x.shape, axes, keepdims), x.dtype)
    backend.launch("reduce", x.dtype, outer * inner, np.int32(code), x.data, out.data, np.int64(n), np.int64(inner))
    return out


def reduce(backend, op, x):
    """Sum, mean or max over a contiguous run of axes."""
    return reduce_axes(backend, x, reduced_axes(op, x), op.keepdims, REDUCE[op.op_type])


def sum_to_shape(backend, op, grad, like):
    """Unbroadcasting: free when shapes match, the reduce kernel for leading broadcast axes."""
    if grad.shape == like.shape:
        return grad
    lead = len(grad.shape) - len(like.shape)
    if lead > 0 and grad.shape[lead:] == like.shape:
        return reduce_axes(backend, grad, tuple(range(lead)), False, REDUCE["ReduceSum"])
    return DECLINE


# ---------------------------------------------------------------- softmax family
def rows(name):
    """A row-wise kernel `name(*inputs, out, cols)`, one work-item per row of the last axis."""
    def run(backend, op, *arrays):
        x = arrays[0]
        out = backend.empty(x.shape, x.dtype)
        cols = x.shape[-1]
        backend.launch(name, x.dtype, x.size // cols, *[a.data for a in arrays], out.data, np.int64(cols))
        return out
    run.__name__ = name
    return run


def layer_norm(name):
    """LayerNorm (x) or its gradient (x, g), one work-item per row of x viewed as (rows, normalized axes)."""
    def run(backend, op, x, *grad):
        out = backend.empty(x.shape, x.dtype)
        cols = int(np.prod(x.shape[op.axis % len(x.shape):], dtype=np.int64))
        backend.launch(name, x.dtype, x.size // cols, x.data, *[g.data for g in grad], out.data, np.int64(cols),
                       _scalar(x.dtype, op.eps))
        return out
    run.__name__ = name
    return run


def _labels(backend, labels, cols):
    host = np.ascontiguousarray(backend.to_host(labels), dtype=np.int64)
    check_labels(host, cols)
    return backend.device(host)


def softmax_xent(backend, op, logits, labels):
    """Per-row losses on the device, then their mean with the reduce kernel."""
    labels = _labels(backend, labels, logits.shape[1])
    losses = backend.empty((logits.shape[0],), logits.dtype)
    backend.launch("softmax_xent", logits.dtype, logits.shape[0], logits.data, labels.data, losses.data,
                   np.int64(logits.shape[1]))
    return reduce_axes(backend, losses, (0,), False, REDUCE["ReduceMean"])


def softmax_xent_back(backend, op, logits, labels, grad):
    """(softmax(logits) - onehot(labels)) * grad / N."""
    labels = _labels(backend, labels, logits.shape[1])
    scale = _scalar(logits.dtype, float(np.asarray(backend.to_host(grad)).reshape(())) / logits.shape[0])
    out = backend.empty(logits.shape, logits.dtype)
    backend.launch("softmax_xent_back", logits.dtype, logits.shape[0], logits.data, labels.data, scale, out.data,
                   np.int64(logits.shape[1]))
    return out


# ---------------------------------------------------------------- matmul, convolution, pooling
def matmul_2d(backend, a, b):
    """a (m x k) @ b (k x n) on the device with the tiled `matmul` kernel."""
    m, k = a.shape
    n = b.shape[1]
    out = backend.empty((m, n), a.dtype)
    tile = 16
    global_size = (-(-n // tile) * tile, -(-m // tile) * tile)
    backend.runtime.kernel("matmul", a.dtype)(backend.runtime.queue, global_size, (tile, tile), a.data, b.data,
                                              out.data, np.int64(m), np.int64(n), np.int64(k))
    return out


def matmul(backend, op, a, b):
    """Matrix product of two matrices."""
    return matmul_2d(backend, a, b)


def _long16(geometry):
    """A window geometry (kernel_codes.window_geometry) as the kernels take it."""
    return rt.cl.cltypes.make_long16(*geometry, 0, 0)


def _im2col(backend, x, geometry):
    n, c, kh, kw, ho, wo = geometry[0], geometry[1], geometry[4], geometry[5], geometry[12], geometry[13]
    cols = backend.empty((n * ho * wo, c * kh * kw), x.dtype)
    backend.launch("im2col", x.dtype, cols.size, x.data, cols.data, _long16(geometry))
    return cols


def _rows(backend, y):
    """(N, O, *spatial) on the device as (N·P, O) rows."""
    rank = len(y.shape)
    return permute(backend, y, (0,) + tuple(range(2, rank)) + (1,)).reshape(-1, y.shape[1])


def _col2im_of_rows(backend, rows, w, shape, geometry):
    cols = matmul_2d(backend, rows, w.reshape(w.shape[0], -1))  # (N·P, C·K)
    out = backend.empty(shape, rows.dtype)
    backend.launch("col2im", rows.dtype, out.size, cols.data, out.data, _long16(geometry))
    return out


def conv(backend, op, x, w):
    """Convolution as im2col then one matrix product."""
    geometry = conv_geometry(op, x.shape, w.shape)
    out_spatial = (geometry[12], geometry[13])[-(len(x.shape) - 2):]
    filters = permute(backend, w.reshape(w.shape[0], -1), (1, 0))  # (C·K, O)
    rows = matmul_2d(backend, _im2col(backend, x, geometry), filters)  # (N·P, O)
    rank = len(out_spatial)
    return permute(backend, rows.reshape((x.shape[0],) + out_spatial + (w.shape[0],)),
                   (0, rank + 1) + tuple(range(1, rank + 1)))


def conv_back_input(backend, op, g, w, x):
    """The input gradient: a matrix product then col2im."""
    return _col2im_of_rows(backend, _rows(backend, g), w, x.shape, conv_geometry(op, x.shape, w.shape, g.shape))


def conv_transpose(backend, op, x, w):
    """A transposed convolution: the input gradient of the convolution whose output gradient x is."""
    shape = transposed_input_shape(op, x, w)
    return _col2im_of_rows(backend, _rows(backend, x), w, shape, conv_geometry(op, shape, w.shape, x.shape))


def conv_back_filter(backend, op, x, g, w):
    """The filter gradient: the gradient's rows times im2col of the input."""
    geometry = conv_geometry(op, x.shape, w.shape, g.shape)
    rank = len(g.shape)
    grad_rows = permute(backend, g, (1, 0) + tuple(range(2, rank))).reshape(w.shape[0], -1)  # (O, N·P)
    return matmul_2d(backend, grad_rows, _im2col(backend, x, geometry)).reshape(w.shape)


def fits_ungrouped_conv(op, *arrays):
    """A 1-D or 2-D convolution op without groups (the device kernels multiply one matrix)."""
    return op.groups == 1 and fits_conv(op, *arrays)


def max_pool(name):
    """Max pooling forward (x), backward (x, g) or gather (x, h) with the op's window."""
    def run(backend, op, x, *other):
        geometry = pool_geometry(op, x, *other)
        pooled = x.shape[:2] + (geometry[12], geometry[13])[-(len(x.shape) - 2):]
        out = backend.empty(x.shape if name == "maxpool_back" else pooled, x.dtype)
        backend.launch(name, x.dtype, out.size, x.data, *[o.data for o in other], out.data, _long16(geometry))
        return out
    run.__name__ = name
    return run


# ---------------------------------------------------------------- fused optimizer updates, in place on the mirrors
def _device_slots(backend, op):
    """The device copies of the parameter ("param") and of each float slot, by slot name."""
    arrays = {"param": backend.variable(op.variables[0])}
    for name, slot in zip(op.slot_names, op.variables[1:]):
        if name != "step":  # the step counter stays a host scalar
            arrays[name] = backend.variable(slot)
    return arrays


def _optional(backend, arrays, name, dtype):
    """An optional slot's buffer and its flag (a one-element stand-in buffer when the slot is absent)."""
    if name not in arrays:
        return backend.empty((1,), dtype).data, np.int32(0)
    return arrays[name].data, np.int32(1)


def _learning_rate(backend, op, lr):
    """The learning rate as a float, without a download when it is a Constant (the usual case)."""
    node = op.inputs[2]
    return float(node.value) if isinstance(node, Constant) else float(np.asarray(backend.to_host(lr)).reshape(()))


def _update(backend, op, name, grad, *args):
    backend.launch(name, grad.dtype, grad.size, *args)
    for var in op.variables:
        if var.dtype != np.int64:
            var.mark_device_newer()


def _step(op):
    """Increment the op's step slot (a host Variable) and return the new count."""
    step_var = op.variables[1 + op.slot_names.index("step")]
    step_var.value = np.asarray(int(step_var.value) + 1)
    return int(step_var.value)


def sgd(backend, op, param, grad, lr, *slots):
    """SGD with momentum/Nesterov/weight decay on the device."""
    h, arrays, T = op.hyper, _device_slots(backend, op), grad.dtype.type
    first_step = int(_step(op) == 1) if h["momentum"] else 0
    _update(backend, op, "sgd", grad, arrays["param"].data, grad.data,
            *_optional(backend, arrays, "momentum_buffer", grad.dtype), T(_learning_rate(backend, op, lr)),
            T(h["momentum"]), T(h["dampening"]), T(h["weight_decay"]), np.int32(h["nesterov"]), np.int32(first_step))


def adam(backend, op, param, grad, lr, *slots):
    """Adam / AdamW (optionally AMSGrad) on the device."""
    h, arrays, T = op.hyper, _device_slots(backend, op), grad.dtype.type
    (beta1, beta2), step, lr = h["betas"], _step(op), _learning_rate(backend, op, lr)
    _update(backend, op, "adam", grad, arrays["param"].data, grad.data, arrays["exp_avg"].data,
            arrays["exp_avg_sq"].data, *_optional(backend, arrays, "max_exp_avg_sq", grad.dtype),
            T(lr), T(beta1), T(beta2), T(h["eps"]), T(h["weight_decay"]), np.int32(h["decoupled"]),
            T(lr / (1 - beta1 ** step)), T(np.sqrt(1 - beta2 ** step)))


def rmsprop(backend, op, param, grad, lr, *slots):
    """RMSProp (optionally centered, with momentum) on the device."""
    h, arrays, T = op.hyper, _device_slots(backend, op), grad.dtype.type
    _update(backend, op, "rmsprop", grad, arrays["param"].data, grad.data, arrays["square_avg"].data,
            *_optional(backend, arrays, "grad_avg", grad.dtype),
            *_optional(backend, arrays, "momentum_buffer", grad.dtype),
            T(_learning_rate(backend, op, lr)), T(h["alpha"]), T(h["eps"]), T(h["weight_decay"]), T(h["momentum"]))


def adagrad(backend, op, param, grad, lr, *slots):
    """AdaGrad with learning-rate decay on the device."""
    h, arrays, T = op.hyper, _device_slots(backend, op), grad.dtype.type
    clr = _learning_rate(backend, op, lr) / (1 + (_step(op) - 1) * h["lr_decay"])
    _update(backend, op, "adagrad", grad, arrays["param"].data, grad.data, arrays["state_sum"].data, T(clr),
            T(h["eps"]), T(h["weight_decay"]))


# ---------------------------------------------------------------- the table
_FIRST = dict(floats=(0,))  # only the first input is data; the others give shapes or labels
_UPDATE = dict(floats=(0, 1), same_shape=True)  # parameter (its device copy) and gradient

OpenCLBackend.kernels = {
    **{cls.op_type: Kernel(elementwise) for cls in [*ELEMENTWISE_OPS.values(), *GRADIENT_OPS.values()]
       if cls.dtype_rule(np.float32) == np.float32 and not takes_conditions(cls.expression)},
    **{op_type: Kernel(reduce, accepts=reduced_axes) for op_type in REDUCE},
    "LayerNorm": Kernel(layer_norm("layer_norm")),
    "LayerNormGrad": Kernel(layer_norm("layer_norm_back"), same_shape=True),
    "Softmax": Kernel(rows("softmax"), accepts=along_last_axis),
    "LogSoftmax": Kernel(rows("log_softmax"), accepts=along_last_axis),
    "SoftmaxGrad": Kernel(rows("softmax_back"), same_shape=True, accepts=along_last_axis),
    "LogSoftmaxGrad": Kernel(rows("log_softmax_back"), same_shape=True, accepts=along_last_axis),
    "SoftmaxCrossEntropy": Kernel(softmax_xent, floats=(0,), ndim=2, accepts=labels_fit),
    "SoftmaxCrossEntropyGrad": Kernel(softmax_xent_back, floats=(0,), ndim=2, accepts=labels_fit),
    "MatMul": Kernel(matmul, ndim=2, accepts=inner_dims_match),
    "Transpose": Kernel(transpose, accepts=rank_at_most_4),
    "Reshape": Kernel(reshape, **_FIRST), "ReshapeLike": Kernel(reshape, **_FIRST),
    "Identity": Kernel(identity), "StopGradient": Kernel(identity),
    "SumToShapeOf": Kernel(sum_to_shape, **_FIRST),
    "ExpandReduced": Kernel(expand_reduced, **_FIRST), "BroadcastLike": Kernel(broadcast_like, **_FIRST),
    "OnesLike": Kernel(fill(1)), "ZerosLike": Kernel(fill(0)),
    "AddN": Kernel(add_n), "Group": Kernel(group, floats=()),
    "Conv": Kernel(conv, accepts=fits_ungrouped_conv),
    "ConvBackInput": Kernel(conv_back_input, accepts=fits_ungrouped_conv),
    "ConvBackFilter": Kernel(conv_back_filter, accepts=fits_ungrouped_conv),
    "ConvTranspose": Kernel(conv_transpose, accepts=fits_ungrouped_conv),
    "MaxPool": Kernel(max_pool("maxpool"), accepts=fits_pool),
    "MaxPoolGrad": Kernel(max_pool("maxpool_back"), accepts=fits_pool),
    "MaxPoolGather": Kernel(max_pool("maxpool_gather"), accepts=fits_pool),
    "ApplySGD": Kernel(sgd, **_UPDATE), "ApplyAdam": Kernel(adam, **_UPDATE),
    "ApplyRMSProp": Kernel(rmsprop, **_UPDATE), "ApplyAdaGrad": Kernel(adagrad, **_UPDATE),
}
