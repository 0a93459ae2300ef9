"""Running a fused node with its generated C kernel (tiered: numpy for the first runs, then C).

A plan node that runs once or twice (a test, a one-off evaluation) is not worth a
compile: its members run with the backend's own kernels (fused.py's member_runner). From run JIT_AFTER + 1 on, the kernel for the run's shapes is generated,
compiled (or found in the disk cache) and called. TINYFLOW_FUSION_JIT_AFTER
changes the number of numpy runs (0: compile at the first run).
"""
import math
import os

import numpy as np

from . import compiler
from .c_codegen import c_declaration, c_source
from .fused import member_runner, plan_layout

_CTYPE = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]"}
_SMALL = "small"  # marks input shapes whose output is below the backend's small-array threshold
# A C call with its Python glue (~3 µs) costs about two small numpy loops (~1.3 µs each): fused groups of
# at most two members on tiny arrays (a quarter of the backend's small size) run their members with numpy.
NUMPY_MAX_MEMBERS = 2


def jit_after():
    """How many runs of a fused node use numpy before its kernel is compiled."""
    value = os.environ.get("TINYFLOW_FUSION_JIT_AFTER", "2")
    return int(value) if value.strip().isdigit() else 2


class CFusedKernel:
    """The callable a plan step runs for a fused node on the C backend."""

    def __init__(self, node, backend):
        self.node, self.runs, self.threshold = node, 0, jit_after()
        self.unfused = member_runner(backend, node)
        self.empty = _allocator(backend)
        self.small = getattr(backend, "small_size", 0) // 4  # below it numpy may win (see NUMPY_MAX_MEMBERS)
        self._by_shapes = {}  # input shapes -> (call, out_shape, outer, inner, kinds) or None for numpy

    def __call__(self, *values):
        if self.runs < self.threshold:
            self.runs += 1
            return self.unfused(*values)
        # plain loops and no dtype.name (numpy computes it in Python): this runs once per step of every run
        arrays = [v if isinstance(v, np.ndarray) else np.asarray(v) for v in values]
        entry = self._by_shapes.get(tuple([a.shape for a in arrays]), False)
        if entry is False:
            entry = self._by_shapes[tuple([a.shape for a in arrays])] = self._prepare(arrays)
        if entry is _SMALL:  # a C call costs more than numpy's few small loops
            return self.node.compute(*arrays)
        dtype = self.node.dtype
        for a in arrays:
            if a.dtype != dtype:
                entry = None
        if entry is None:
            return self.unfused(*values)
        module, out_shape, outer, inner, kinds = entry
        ctype, ptr = _CTYPE[dtype], module.ffi.from_buffer
        pointers = []
        for a, kind in zip(arrays, kinds):
            if kind == "expand":
                a = np.broadcast_to(a, out_shape)
            pointers.append(ptr(ctype, a if a.flags.c_contiguous else np.ascontiguousarray(a)))
        out = self.empty(out_shape, dtype)
        module.lib.tf_fused(*pointers, ptr(ctype, out), outer, inner, module.parallel)
        return out

    def _prepare(self, arrays):
        """The compiled kernel and loop bounds for these inputs' shapes; None to use numpy."""
        shapes = tuple(a.shape for a in arrays)
        try:
            out_shape = np.broadcast_shapes(*shapes, (1,) * len(self.node.shape))
        except ValueError:
            return None  # numpy raises the error naming the member whose inputs do not match
        if 0 in out_shape:
            return None
        if math.prod(out_shape) < self.small and len(self.node.members) <= NUMPY_MAX_MEMBERS:
            return _SMALL
        kinds, outer, inner = plan_layout(shapes, out_shape)
        generated = tuple("full" if k == "expand" else k for k in kinds)
        module = compiler.load(c_source(self.node, generated), c_declaration(self.node, generated))
        if module is None:
            return None
        if not hasattr(module, "parallel"):  # the C library's thread pool, shared by every generated kernel
            module.parallel = module.ffi.cast("void *", native_pool_address())
        return module, out_shape, outer, inner, kinds


def native_pool_address():
    """The address of the C library's tf_parallel_for (0 without the library: kernels then run on one thread)."""
    from . import native
    if native.lib is None:
        return 0
    return int(native.ffi.cast("uintptr_t", native.ffi.addressof(native.lib, "tf_parallel_for")))


def _allocator(backend):
    """`empty(shape, dtype)` from the backend's buffer pool (its own, or the shared one of older backends)."""
    pool = getattr(backend, "pool", None)
    if pool is None:
        from .buffer_pool import POOL
        pool = POOL
    return pool.empty
