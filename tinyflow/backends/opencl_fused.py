"""Running a fused node on the OpenCL backend: a generated `.cl` kernel, one work-item per element.

Programs are built once per device and source (pyopencl also keeps built binaries
in its own on-disk program cache). Tiered like the C kernel: the first runs use
the backend's own kernels (fused.py's member_runner), then the kernel is built. For `a*x + b` with a scalar `b`:
    __kernel void tf_fused(__global const T *x0, __global const T *x1, __global T *out, const long inner) {
        const long i = get_global_id(0);
        const T a0 = x0[i];
        const T a1 = x1[0];
        const T t0 = (a0 * 1.5f);
        const T t1 = (t0 + a1);
        out[i] = t1;
    }
"""
import numpy as np

from ..ops.expressions import OPENCL_HELPERS
from .c_codegen import body, load
from .c_fused import jit_after
from .fused import member_runner, plan_layout

_programs = {}


def opencl_source(node, kinds):
    """The OpenCL C of the kernel for `node` with inputs read as `kinds` (full/scalar/row/col)."""
    single = node.dtype == np.float32
    loads = {k: load(kind, k, f"x{k}[i]", f"x{k}[0]") for k, kind in enumerate(kinds)}
    statements, result = body(node, loads, single, " " * 4, opencl=True)
    params = "".join(f"__global const T *x{k}, " for k in range(len(kinds)))
    lines = [] if single else ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"]
    lines += [f"typedef {'float' if single else 'double'} T;",
              OPENCL_HELPERS,
              f"__kernel void tf_fused({params}__global T *out, const long inner) {{",
              "    const long i = get_global_id(0);"]
    if any(kind == "row" or kind.startswith("col") for kind in kinds):
        lines.append("    const long r = i / inner, c = i - r * inner;")
    lines += statements + [f"    out[i] = {result};", "}"]
    return "\n".join(lines) + "\n"


class OpenCLFusedKernel:
    """The callable a plan step runs for a fused node on the OpenCL backend (device arrays in and out)."""

    def __init__(self, node, backend):
        self.node, self.backend, self.runs, self.threshold = node, backend, 0, jit_after()
        self._by_shapes = {}
        self.unfused = member_runner(backend, node)

    def __call__(self, *values):
        backend, node = self.backend, self.node
        on_device = node.dtype == np.float32 or node.dtype == np.float64 and backend.runtime.has_fp64
        if self.runs < self.threshold or not on_device or any(v.dtype != node.dtype for v in values):
            self.runs += 1
            return self.unfused(*values)
        shapes = tuple(tuple(v.shape) for v in values)
        entry = self._by_shapes.get(shapes)
        if entry is None:
            entry = self._by_shapes[shapes] = self._prepare(shapes)
        if entry == "host":
            return self.unfused(*values)
        kernel, out_shape, inner, kinds = entry
        args = []
        for value, kind in zip(values, kinds):
            if kind == "expand":  # a broadcast the kernel does not index directly: expanded on the host
                value = np.ascontiguousarray(np.broadcast_to(backend.to_host(value), out_shape))
            args.append(backend.device(value).data)
        out = backend.runtime.empty(out_shape, node.dtype)
        kernel(backend.runtime.queue, (int(out.size),), None, *args, out.data, np.int64(inner))
        _count(backend.report, node.op_type)
        return out

    def _prepare(self, shapes):
        try:
            out_shape = np.broadcast_shapes(*shapes, (1,) * len(self.node.shape))
        except ValueError:
            return "host"  # the members' kernels raise the error naming the one whose inputs do not match
        if 0 in out_shape:
            return "host"
        kinds, _, inner = plan_layout(shapes, out_shape)
        source = opencl_source(self.node, tuple("full" if k == "expand" else k for k in kinds))
        return _program_kernel(self.backend.runtime, source), out_shape, inner, kinds


def _count(report, op_type):
    """Count a device op in the backend's run report (device_ops here, kernel_ops in table-driven backends)."""
    counter = getattr(report, "kernel_ops", None)
    (counter if counter is not None else report.device_ops)[op_type] += 1


def _program_kernel(runtime, source):
    """The built kernel of `source` on the runtime's device (built once per device and source)."""
    import warnings

    import pyopencl as cl
    key = (runtime.index, source)
    if key not in _programs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            program = cl.Program(runtime.context, source).build()
        _programs[key] = cl.Kernel(program, "tf_fused")
    return _programs[key]
