"""The OpenCL backend: ops run as OpenCL kernels and their results stay on the device.

Within one Session.run, values flow between kernels as device arrays; only feeds
(uploaded once per run), fetches (downloaded at the end) and ops without an OpenCL
kernel (run by numpy on the host, a transfer each way) cross the bus. Variables
keep a device copy across runs, synchronised with `.value` whenever either side
changes. `backend.report` says, after each run, which ops ran where and what crossed.
"""
import logging
from collections import Counter

import numpy as np

from ..errors import BackendError
from ..ops.losses import check_labels as _check_labels
from ..nodes import Constant, Placeholder, Variable
from ..shapes import reduced_shape
from . import opencl_runtime as rt
from .base import Backend, source_kernel
from .kernel_codes import BINARY, REDUCE, UNARY, broadcast_layout

log = logging.getLogger("tinyflow.opencl")

_BINARY, _UNARY, _REDUCE = BINARY, UNARY, REDUCE
_ACTIVATIONS = {"Sigmoid": "sigmoid", "Tanh": "tanh_", "Relu": "relu", "Softplus": "softplus"}
_BACKWARD = {"SigmoidGrad": "sigmoid_back", "TanhGrad": "tanh_back", "ReluGrad": "relu_back"}
_ROWS = {"Softmax": "softmax", "LogSoftmax": "log_softmax", "SoftmaxGrad": "softmax_back",
         "LogSoftmaxGrad": "log_softmax_back"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class DeviceMirror:
    """A Variable's device copy; `host_stale` / `device_stale` say which side changed last."""

    def __init__(self, backend, array):
        self.runtime, self.array = backend.runtime, array
        self.host_stale = self.device_stale = False
        self._backend = backend

    def download(self):
        """The device copy as a host array (counted in the backend's transfer report)."""
        self._backend.report.to_host += self.array.nbytes
        return self.array.get()


class RunReport:
    """Which ops ran on the device and which on the host, and the bytes moved, in the last run."""

    def __init__(self):
        self.device_ops, self.host_ops = Counter(), Counter()
        self.to_device = self.to_host = 0

    def __str__(self):
        lines = [f"OpenCL run: {sum(self.device_ops.values())} ops on the device, {sum(self.host_ops.values())} "
                 f"on the host; {self.to_device / 1e6:.3f} MB uploaded, {self.to_host / 1e6:.3f} MB downloaded"]
        if self.host_ops:
            lines.append("  on the host (no OpenCL kernel): " +
                         ", ".join(f"{op} x{n}" for op, n in sorted(self.host_ops.items())))
        return "\n".join(lines)


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
        index, _, _, device = rt.choose_device(spec)
        self.runtime = rt.DeviceRuntime.for_device(index, device)
        self.report = RunReport()
        self._uploads = {}
        self._constants = {}
        self.kernels = self._kernel_table()

    def __repr__(self):
        return f"<tinyflow backend 'opencl' device {self.runtime.index}: {self.runtime.describe()}>"

    # ------------------------------------------------------------ runs and transfers
    def begin_run(self):
        """Reset the per-run report and the cache of uploaded feeds."""
        if self.report.device_ops or self.report.host_ops:
            log.debug("%s", self.report)
        self.report = RunReport()
        self._uploads.clear()

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
        mirror = var._mirror
        if mirror is None or mirror.runtime is not self.runtime:
            value = var.value  # downloads from another device first if that copy was newer
            self.report.to_device += value.nbytes
            mirror = var._mirror = DeviceMirror(self, self.runtime.upload(value))
        elif mirror.device_stale:
            self.report.to_device += var._value.nbytes
            mirror.array.set(np.ascontiguousarray(var._value))
            mirror.device_stale = False
        mirror._backend = self
        return mirror.array

    # ------------------------------------------------------------ kernels
    def kernel(self, op):
        """The callable for `op`: an OpenCL kernel if the table has one, else numpy on the host."""
        if isinstance(op, Variable) and op.dtype in self._device_dtypes():
            return lambda: self.variable(op)
        if isinstance(op, Constant) and op.dtype in self._device_dtypes():
            return lambda: self._constant(op)
        if isinstance(op, (Variable, Constant, Placeholder)):
            return source_kernel(op)
        fn = self.kernels.get(op.op_type)
        if fn is None:
            return lambda *values: self._on_host(op, values)
        return lambda *values: fn(op, *values)

    def _device_dtypes(self):
        return _FLOATS if self.runtime.has_fp64 else _FLOATS[:1]

    def _constant(self, node):
        if node not in self._constants:
            self._constants[node] = self.runtime.upload(node.value)
        return self._constants[node]

    def _on_host(self, op, values):
        """Run the op's numpy compute (downloading device inputs); the result stays on the host."""
        self.report.host_ops[op.op_type] += 1
        return op.compute(*[self.to_host(v) for v in values])

    def _device_ok(self, *values):
        """True when every value is a non-empty float array of one dtype the device handles."""
        dtype = values[0].dtype
        return dtype in self._device_dtypes() and all(v.dtype == dtype and v.size > 0 for v in values)

    def _launch(self, name, dtype, size, *args):
        """Run kernel `name` of the `dtype` program over `size` work-items."""
        self.runtime.kernel(name, dtype)(self.runtime.queue, (int(size),), None, *args)

    def _scalar(self, dtype, value):
        return np.dtype(dtype).type(value)

    def _counted(self, op):
        self.report.device_ops[op.op_type] += 1

    def _kernel_table(self):
        table = {t: self._binary for t in _BINARY}
        table.update({t: self._unary for t in _UNARY})
        table.update({t: self._activation for t in _ACTIVATIONS})
        table.update({t: self._backward for t in _BACKWARD})
        table.update({t: self._reduce for t in _REDUCE})
        table.update({t: self._rows for t in _ROWS})
        table.update({"LeakyRelu": self._leaky_relu, "LeakyReluGrad": self._leaky_relu_back,
                      "MatMul": self._matmul, "Transpose": self._transpose, "Reshape": self._reshape,
                      "ReshapeLike": self._reshape, "Identity": self._identity, "SumToShapeOf": self._sum_to_shape,
                      "SoftmaxCrossEntropy": self._xent, "SoftmaxCrossEntropyGrad": self._xent_back,
                      "Conv2D": self._conv2d, "Conv2DBackInput": self._conv2d_back_input,
                      "Conv2DBackFilter": self._conv2d_back_filter,
                      "MaxPool2D": self._maxpool, "MaxPool2DGrad": self._maxpool_back,
                      "MaxPool2DGather": self._maxpool_gather, "ExpandReduced": self._expand_reduced,
                      "BroadcastLike": self._broadcast_like, "OnesLike": self._fill(1), "ZerosLike": self._fill(0),
                      "Group": self._group, "AddN": self._add_n, "StopGradient": self._identity})
        from .opencl_optim import OPTIMIZER_KERNELS
        table.update({t: (lambda fn: lambda op, *v: fn(self, op, *v))(fn) for t, fn in OPTIMIZER_KERNELS.items()})
        return table

    # elementwise -------------------------------------------------------------
    def _pairwise(self, code, a, b):
        """a (op code) b on the device for a broadcasting pattern the kernel knows, else None."""
        layout = broadcast_layout(tuple(a.shape), tuple(b.shape)) if self._device_ok(a, b) else None
        if layout is None:
            return None
        pattern, rows, cols, out_shape = layout
        a, b = self.device(a), self.device(b)
        out = self.runtime.empty(out_shape, a.dtype)
        self._launch("binary", a.dtype, rows * cols, np.int32(code), np.int32(pattern), a.data, b.data, out.data,
                     np.int64(cols))
        return out

    def _binary(self, op, a, b):
        out = self._pairwise(_BINARY[op.op_type], a, b)
        if out is None:
            return self._on_host(op, (a, b))
        self._counted(op)
        return out

    def _map(self, op, name, inputs, *trailing):
        """A one-work-item-per-element kernel `name(*inputs, out, *trailing)` over inputs of one shape."""
        if not self._device_ok(*inputs) or any(i.shape != inputs[0].shape for i in inputs):
            return self._on_host(op, inputs)
        inputs = [self.device(i) for i in inputs]
        out = self.runtime.empty(inputs[0].shape, inputs[0].dtype)
        self._launch(name, out.dtype, out.size, *[i.data for i in inputs], out.data, *trailing)
        self._counted(op)
        return out

    def _unary(self, op, x):
        if not self._device_ok(x):
            return self._on_host(op, (x,))
        x = self.device(x)
        out = self.runtime.empty(x.shape, x.dtype)
        self._launch("unary", x.dtype, x.size, np.int32(_UNARY[op.op_type]), x.data, out.data)
        self._counted(op)
        return out

    def _activation(self, op, x):
        return self._map(op, _ACTIVATIONS[op.op_type], [x])

    def _backward(self, op, y, g):
        return self._map(op, _BACKWARD[op.op_type], [y, g])

    def _leaky_relu(self, op, x):
        return self._map(op, "leaky_relu", [x], self._scalar(x.dtype, op.alpha))

    def _leaky_relu_back(self, op, x, g):
        return self._map(op, "leaky_relu_back", [x, g], self._scalar(x.dtype, op.alpha))

    def _fill(self, number):
        def kernel(op, x):
            if not self._device_ok(x):
                return self._on_host(op, (x,))
            self._counted(op)
            out = self.runtime.empty(x.shape, x.dtype)
            out.fill(number)
            return out
        return kernel

    def _add_n(self, op, *xs):
        """A running sum with the binary kernel; numpy if some pair broadcasts in a way it does not know."""
        total = xs[0]
        for x in xs[1:]:
            total = self._pairwise(0, total, x)
            if total is None:
                return self._on_host(op, xs)
        self._counted(op)
        return self.device(total)

    def _group(self, op, *values):
        self._counted(op)
        return None

    def _broadcast(self, op, a, shape, scale, inputs):
        """a broadcast to `shape` times `scale` with the broadcast_scale kernel, or numpy if the pattern is new."""
        layout = broadcast_layout(tuple(a.shape), tuple(shape)) if self._device_ok(a) and int(np.prod(shape)) else None
        if layout is None or layout[0] not in (0, 2, 4, 6):
            return self._on_host(op, inputs)
        pattern, rows, cols, _ = layout
        a = self.device(a)
        out = self.runtime.empty(tuple(shape), a.dtype)
        self._launch("broadcast_scale", a.dtype, rows * cols, np.int32(pattern), a.data, out.data, np.int64(cols),
                     self._scalar(a.dtype, scale))
        self._counted(op)
        return out

    def _expand_reduced(self, op, grad, x):
        axes = tuple(range(len(x.shape))) if op.axes is None else op.axes
        kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        if not self._device_ok(grad):
            return self._on_host(op, (grad, x))
        scale = 1.0 / max(count, 1) if op.mean else 1.0
        return self._broadcast(op, self.device(grad).reshape(kept), x.shape, scale, (grad, x))

    def _broadcast_like(self, op, value, like):
        return self._broadcast(op, value, like.shape, 1.0, (value, like))

    # shapes ------------------------------------------------------------------
    def _identity(self, op, x):
        self._counted(op)
        return x

    def _reshape(self, op, x, *like):
        if not self._device_ok(x):
            return self._on_host(op, (x,) + like)
        shape = like[0].shape if like else op.target
        self._counted(op)
        return self.device(x).reshape(shape)

    def _permute(self, x, axes):
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
        out = self.runtime.empty(out_shape, x.dtype)
        self._launch("permute", x.dtype, x.size, x.data, out.data, rt.cl.cltypes.make_long4(*dims),
                     rt.cl.cltypes.make_long4(*strides))
        return out

    def _transpose(self, op, x):
        if not self._device_ok(x) or len(x.shape) > 4:
            return self._on_host(op, (x,))
        self._counted(op)
        return self._permute(self.device(x), op.axes)

    def _reduce_axes(self, x, axes, keepdims, code):
        """Reduce a run of adjacent axes of a device array with the `reduce` kernel."""
        outer = int(np.prod(x.shape[:axes[0]], dtype=np.int64))
        n = int(np.prod(x.shape[axes[0]:axes[-1] + 1], dtype=np.int64))
        inner = int(np.prod(x.shape[axes[-1] + 1:], dtype=np.int64))
        out = self.runtime.empty(reduced_shape(x.shape, axes, keepdims), x.dtype)
        self._launch("reduce", x.dtype, outer * inner, np.int32(code), x.data, out.data, np.int64(n), np.int64(inner))
        return out

    def _reduce(self, op, x):
        axes = tuple(range(len(x.shape))) if op.axes is None else op.axes
        if not self._device_ok(x) or not axes or list(axes) != list(range(axes[0], axes[-1] + 1)):
            return self._on_host(op, (x,))
        self._counted(op)
        return self._reduce_axes(self.device(x), axes, op.keepdims, _REDUCE[op.op_type])

    def _sum_to_shape(self, op, grad, like):
        """Unbroadcasting: free when shapes match, the reduce kernel for leading broadcast axes."""
        if grad.shape == like.shape:
            self._counted(op)
            return grad
        lead = len(grad.shape) - len(like.shape)
        if lead > 0 and grad.shape[lead:] == like.shape and self._device_ok(grad):
            self._counted(op)
            return self._reduce_axes(self.device(grad), tuple(range(lead)), False, 0)
        return self._on_host(op, (grad, like))

    # softmax family ----------------------------------------------------------
    def _rows(self, op, *arrays):
        x = arrays[0]
        if not self._device_ok(*arrays) or op.axis % len(x.shape) != len(x.shape) - 1 \
                or any(a.shape != x.shape for a in arrays):
            return self._on_host(op, arrays)
        arrays = [self.device(a) for a in arrays]
        out = self.runtime.empty(x.shape, x.dtype)
        cols = x.shape[-1]
        self._launch(_ROWS[op.op_type], x.dtype, x.size // cols, *[a.data for a in arrays], out.data, np.int64(cols))
        self._counted(op)
        return out

    def _xent_inputs_ok(self, logits, labels):
        return (self._device_ok(logits) and len(logits.shape) == 2 and labels.shape == logits.shape[:1]
                and np.dtype(labels.dtype).kind in "iu")

    def _labels(self, labels, cols):
        host = np.ascontiguousarray(self.to_host(labels), dtype=np.int64)
        _check_labels(host, cols)
        return self.device(host)

    def _xent(self, op, logits, labels):
        if not self._xent_inputs_ok(logits, labels):
            return self._on_host(op, (logits, labels))
        logits, labels = self.device(logits), self._labels(labels, logits.shape[1])
        losses = self.runtime.empty((logits.shape[0],), logits.dtype)
        self._launch("softmax_xent", logits.dtype, logits.shape[0], logits.data, labels.data, losses.data,
                     np.int64(logits.shape[1]))
        self._counted(op)
        return self._reduce_axes(losses, (0,), False, 1)  # the mean over rows

    def _xent_back(self, op, logits, labels, grad):
        if not self._xent_inputs_ok(logits, labels) or grad.size != 1:
            return self._on_host(op, (logits, labels, grad))
        logits, labels = self.device(logits), self._labels(labels, logits.shape[1])
        scale = self._scalar(logits.dtype, float(np.asarray(self.to_host(grad)).reshape(())) / logits.shape[0])
        out = self.runtime.empty(logits.shape, logits.dtype)
        self._launch("softmax_xent_back", logits.dtype, logits.shape[0], logits.data, labels.data, scale, out.data,
                     np.int64(logits.shape[1]))
        self._counted(op)
        return out

    # matmul, convolution, pooling --------------------------------------------
    def matmul(self, a, b):
        """a (m x k) @ b (k x n) on the device with the tiled `matmul` kernel."""
        m, k = a.shape
        n = b.shape[1]
        out = self.runtime.empty((m, n), a.dtype)
        tile = 16
        global_size = (-(-n // tile) * tile, -(-m // tile) * tile)
        self.runtime.kernel("matmul", a.dtype)(self.runtime.queue, global_size, (tile, tile), a.data, b.data,
                                               out.data, np.int64(m), np.int64(n), np.int64(k))
        return out

    def _matmul(self, op, a, b):
        if not self._device_ok(a, b) or len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
            return self._on_host(op, (a, b))
        self._counted(op)
        return self.matmul(self.device(a), self.device(b))

    def _geometry(self, x_shape, kernel, stride, padding):
        n, c, h, w = x_shape
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
        ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
        if ho < 1 or wo < 1:
            return None
        return (rt.cl.cltypes.make_long8(n, c, h, w, kh, kw, sh, sw), rt.cl.cltypes.make_long4(ph, pw, ho, wo),
                (n, c, h, w, kh, kw, ho, wo))

    def _im2col(self, x, geometry):
        g, p, (n, c, _, _, kh, kw, ho, wo) = geometry
        cols = self.runtime.empty((n * ho * wo, c * kh * kw), x.dtype)
        self._launch("im2col", x.dtype, cols.size, x.data, cols.data, g, p)
        return cols

    def _conv_ok(self, x, w, *more):
        return (self._device_ok(x, w, *more) and len(x.shape) == 4 and len(w.shape) == 4
                and x.shape[1] == w.shape[1])

    def _conv2d(self, op, x, w):
        geometry = self._geometry(x.shape, w.shape[2:], op.stride, op.padding) if self._conv_ok(x, w) else None
        if geometry is None:
            return self._on_host(op, (x, w))
        x, w = self.device(x), self.device(w)
        n, ho, wo = geometry[2][0], geometry[2][6], geometry[2][7]
        filters = self._permute(w.reshape(w.shape[0], -1), (1, 0))  # (C·kH·kW, O)
        rows = self.matmul(self._im2col(x, geometry), filters)  # (N·Ho·Wo, O)
        self._counted(op)
        return self._permute(rows.reshape(n, ho, wo, w.shape[0]), (0, 3, 1, 2))

    def _conv2d_back_input(self, op, g, w, x):
        geometry = self._geometry(x.shape, w.shape[2:], op.stride, op.padding) if self._conv_ok(x, w, g) else None
        if geometry is None or g.shape != (x.shape[0], w.shape[0]) + geometry[2][6:]:
            return self._on_host(op, (g, w, x))
        g, w = self.device(g), self.device(w)
        rows = self._permute(g, (0, 2, 3, 1)).reshape(-1, w.shape[0])  # (N·Ho·Wo, O)
        cols = self.matmul(rows, w.reshape(w.shape[0], -1))  # (N·Ho·Wo, C·kH·kW)
        dx = self.runtime.empty(x.shape, g.dtype)
        self._launch("col2im", g.dtype, dx.size, cols.data, dx.data, geometry[0], geometry[1])
        self._counted(op)
        return dx

    def _conv2d_back_filter(self, op, x, g, w):
        geometry = self._geometry(x.shape, w.shape[2:], op.stride, op.padding) if self._conv_ok(x, w, g) else None
        if geometry is None or g.shape != (x.shape[0], w.shape[0]) + geometry[2][6:]:
            return self._on_host(op, (x, g, w))
        x, g = self.device(x), self.device(g)
        rows = self._permute(g, (1, 0, 2, 3)).reshape(w.shape[0], -1)  # (O, N·Ho·Wo)
        self._counted(op)
        return self.matmul(rows, self._im2col(x, geometry)).reshape(w.shape)

    def _pool(self, op, name, x, other, out_is_input_shape):
        geometry = self._geometry(x.shape, op.kernel, op.stride, op.padding) \
            if self._device_ok(x, *other) and len(x.shape) == 4 else None
        pooled = None if geometry is None else x.shape[:2] + geometry[2][6:]
        if geometry is None or (other and other[0].shape != (pooled if name == "maxpool_back" else x.shape)):
            return self._on_host(op, (x,) + tuple(other))
        arrays = [self.device(a) for a in (x,) + tuple(other)]
        out = self.runtime.empty(x.shape if out_is_input_shape else pooled, x.dtype)
        self._launch(name, x.dtype, out.size, *[a.data for a in arrays], out.data, geometry[0], geometry[1])
        self._counted(op)
        return out

    def _maxpool(self, op, x):
        return self._pool(op, "maxpool", x, (), False)

    def _maxpool_back(self, op, x, g):
        return self._pool(op, "maxpool_back", x, (g,), True)

    def _maxpool_gather(self, op, x, h):
        return self._pool(op, "maxpool_gather", x, (h,), False)
