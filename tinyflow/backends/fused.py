"""Running a fused elementwise node (passes/fusion.py) with one generated kernel on the C or OpenCL backend.

Tiered: the first $TINYFLOW_FUSION_JIT_AFTER runs (default 2) use the backend's kernels member by member (a node
that runs once or twice is not worth a compile); then the kernel for the input shapes is generated (c_codegen.py)
and built, or found in the disk cache, on a background thread while the members' kernels go on running; the first
run after it is ready calls it (a run never waits for the compiler).

Each input is read, the output viewed as (outer, inner), as "full", "scalar", "row" (repeated over the leading axes:
index c), "col" (repeated along the trailing axes: index r), "col%n" (n values in the middle axes, as a conv bias
(1, C, 1, 1) against (N, C, H, W): index r % n), or "expand" (a broadcast none of these fits: expanded first)."""
import functools
import math
import os

import numpy as np

from . import compiler, native
from .c_codegen import c_declaration, c_source, opencl_source
from .kernel_codes import layout_code

_SMALL = "small"  # marks input shapes whose output is below the backend's small-array threshold
PENDING = "pending"  # marks input shapes whose kernel is being generated and compiled in the background
# A C call with its Python glue (~3 µs) costs about two small numpy loops (~1.3 µs each): fused groups of
# at most two members on tiny arrays (a quarter of the backend's small size) run their members with numpy.
NUMPY_MAX_MEMBERS = 2
CTYPE = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]"}  # cffi buffer types


def classify(shape, out_shape):
    """(kind, period) of one input: period is the row length or the column's inner stride."""
    size = math.prod(shape)
    if size == 1:
        return "scalar", 1
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if padded == tuple(out_shape):
        return "full", 0
    sized = [i for i, d in enumerate(padded) if d != 1]
    lo, hi = sized[0], sized[-1] + 1
    if padded[lo:hi] != tuple(out_shape[lo:hi]) or any(d == 1 for d in out_shape[lo:hi]):
        return "other", 0
    if all(d == 1 for d in out_shape[hi:]):
        return "row", size
    kind = "col" if all(d == 1 for d in out_shape[:lo]) else f"col%{size}"
    return kind, math.prod(out_shape[hi:])


@functools.lru_cache(maxsize=1024)
def plan_layout(shapes, out_shape):
    """(kinds, outer, inner): how to read each input; "full" also for inputs to expand first (shapes: tuples)."""
    total = math.prod(out_shape)
    found = [classify(s, out_shape) for s in shapes]
    periods = [p for k, p in found if k == "row"] + [p for k, p in found if k.startswith("col")]
    inner = periods[0] if periods else None
    # other broadcasts, and rows or columns of another period than `inner`, are expanded first
    kinds = [k if k in ("full", "scalar") or k != "other" and p == inner else "expand" for k, p in found]
    return (tuple(kinds), total // inner, inner) if inner else (tuple(kinds), 1, total)


@functools.lru_cache(maxsize=1024)
def elementwise_layout(shapes):
    """(output shape, kinds code or None, outer, inner) of a table op's inputs: remembered (costlier than small ops)."""
    out_shape = np.broadcast_shapes(*shapes)
    kinds, outer, inner = plan_layout(shapes, out_shape)
    return out_shape, layout_code(kinds), outer, inner


class FusedKernel:
    """The callable a plan step runs for a fused node: the members' kernels for its first runs, then per input shapes
    one generated kernel (a subclass's `build` makes it, its `launch` calls it)."""

    def __init__(self, node, backend):
        self.node, self.backend, self.runs = node, backend, 0
        value = os.environ.get("TINYFLOW_FUSION_JIT_AFTER", "2").strip()  # runs before the kernel is built
        self.threshold = int(value) if value.isdigit() else 2
        # the members by `backend`'s kernels, as a plan without fusion runs them (on the device for OpenCL):
        # a node that runs once or twice never pays a compile
        kernels = [backend.kernel(m) for m in node.members]
        self.unfused = lambda *inputs: node.run_members(inputs, kernels)
        self._by_shapes = {}  # input shapes -> (kernel, out_shape, kinds, outer, inner), or None, _SMALL, PENDING

    def __call__(self, *values):
        if self.runs < self.threshold:
            self.runs += 1
            return self.unfused(*values)
        arrays = self.inputs(values)
        shapes = None if arrays is None else tuple([a.shape for a in arrays])
        entry = self._by_shapes.get(shapes, False)
        if entry is False or entry is PENDING:  # new shapes, or asked again while their kernel compiles
            entry = self._by_shapes[shapes] = None if arrays is None else self._prepare(shapes)
        if entry is _SMALL:  # a C call costs more than numpy's few small loops
            return self.node.compute(*arrays)
        if entry is None or entry is PENDING:  # (PENDING: compiling in the background, the members run meanwhile)
            return self.unfused(*values)
        return self.launch(entry, arrays)

    def _prepare(self, shapes):
        """(kernel, out_shape, kinds, outer, inner) of these input shapes, or what `build` said instead; None when the
        members' kernels must run (an empty output, or inputs that do not broadcast: the members say which)."""
        try:
            out_shape = np.broadcast_shapes(*shapes, (1,) * len(self.node.shape))
        except ValueError:
            return None
        if 0 in out_shape:
            return None
        kinds, outer, inner = plan_layout(shapes, out_shape)
        kernel = self.build(out_shape, tuple("full" if k == "expand" else k for k in kinds))
        if kernel is None or isinstance(kernel, str):  # None, _SMALL or PENDING
            return kernel
        return kernel, out_shape, kinds, outer, inner


class CFusedKernel(FusedKernel):
    """A fused node on the C backend: a generated C loop on the library's thread pool."""

    def __init__(self, node, backend):
        super().__init__(node, backend)
        self.empty = backend.pool.empty
        self.small = backend.small_size // 4  # below it numpy may win (see NUMPY_MAX_MEMBERS)
        self._compiling = {}  # input kinds -> Future of their kernel (tiered runs)

    def inputs(self, values):
        """The values as numpy arrays, or None when one is not of the node's dtype."""
        # plain loops and no dtype.name (numpy computes it in Python): this runs once per step of every run
        arrays = [v if isinstance(v, np.ndarray) else np.asarray(v) for v in values]
        dtype = self.node.dtype
        for a in arrays:
            if a.dtype != dtype:
                return None
        return arrays

    def launch(self, entry, arrays):
        """The generated kernel on the arrays, into a buffer from the pool."""
        module, out_shape, kinds, outer, inner = entry
        dtype = self.node.dtype
        ctype, ptr = CTYPE[dtype], module.ffi.from_buffer
        pointers = []
        for a, kind in zip(arrays, kinds):
            if kind == "expand":
                a = np.broadcast_to(a, out_shape)
            pointers.append(ptr(ctype, a if a.flags.c_contiguous else np.ascontiguousarray(a)))
        out = self.empty(out_shape, dtype)
        module.lib.tf_fused(*pointers, ptr(ctype, out), outer, inner, module.parallel)
        return out

    def build(self, out_shape, generated):
        """The compiled module for inputs read as `generated`; _SMALL or None: numpy; PENDING: it compiles."""
        if math.prod(out_shape) < self.small and len(self.node.members) <= NUMPY_MAX_MEMBERS:
            return _SMALL
        node, future = self.node, self._compiling.get(generated)
        if future is None:  # the source is generated and compiled off the run's thread
            future = self._compiling[generated] = compiler.in_background(
                lambda: compiler.load(c_source(node, generated), c_declaration(node, generated)))
        if self.threshold and not future.done():  # tiered: the members run meanwhile
            return PENDING
        module = future.result()  # ($TINYFLOW_FUSION_JIT_AFTER=0: compiled before the first run)
        if module is not None and not hasattr(module, "parallel"):  # the C library's thread pool, shared by all
            address = native.ffi.cast("uintptr_t", native.ffi.addressof(native.lib, "tf_parallel_for"))
            module.parallel = module.ffi.cast("void *", int(address))
        return module


class OpenCLFusedKernel(FusedKernel):
    """A fused node on the OpenCL backend: a generated kernel, one work-item per element (device arrays in and out)."""

    def inputs(self, values):
        """The values when the device computes in their dtype, the node's, else None."""
        dtype = self.node.dtype
        on_device = dtype == np.float32 or dtype == np.float64 and self.backend.runtime.has_fp64
        return values if on_device and all(v.dtype == dtype for v in values) else None

    def launch(self, entry, values):
        """The generated kernel on the device arrays (a broadcast it cannot index is expanded on the host)."""
        backend, (kernel, out_shape, kinds, _, inner) = self.backend, entry
        args = []
        for value, kind in zip(values, kinds):
            if kind == "expand":
                value = np.ascontiguousarray(np.broadcast_to(backend.to_host(value), out_shape))
            args.append(backend.device(value).data)
        out = backend.runtime.empty(out_shape, self.node.dtype)
        kernel(backend.runtime.queue, (int(out.size),), None, *args, out.data, np.int64(inner))
        backend.report.kernel_ops[self.node.op_type] += 1
        return out

    def build(self, out_shape, generated):
        """The built kernel for inputs read as `generated`."""
        return self.backend.runtime.kernel("tf_fused", self.node.dtype, opencl_source(self.node, generated))
