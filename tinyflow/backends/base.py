"""What every backend is: a name, an availability check, and a table of `Kernel`s keyed by op type.

`Backend.call` does the rest once for every backend: checks the entry's conditions, routes small inputs to numpy,
makes float inputs contiguous (or device arrays), falls back to the op's numpy `compute` for what the entry does not
accept, and counts what ran where in `backend.report`. The numpy backend is the empty table."""
import math
import threading

import numpy as np

from ..nodes import Constant, Placeholder, Variable
from ..shapes import is_fully_known
from .buffer_pool import BufferPool
from .run_report import RunReport

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# What a kernel's `run` returns when its inputs do not fit after all (a check too costly for `accepts`): numpy runs.
DECLINE = object()


class Kernel:
    """One table entry: `run(backend, op, *values)` and the inputs it accepts.

    floats:     positions of the inputs that must be non-empty float arrays of one dtype the backend handles
                (None: every input); they arrive contiguous / on the device.
    small:      inputs all smaller than the backend's `small_size` go to numpy instead.
    same_shape: those float inputs must have one shape.
    ndim:       the rank the first input must have.
    accepts:    `accepts(op, *values) -> bool`, any further condition (broadcast layout, axes...).
    views:      host kernels only: strided views arrive as they are, not copied (BLAS takes them as they are)."""

    __slots__ = ("run", "floats", "small", "same_shape", "ndim", "accepts", "views")

    def __init__(self, run, floats=None, small=True, same_shape=False, ndim=None, accepts=None, views=False):
        self.run, self.floats, self.small, self.same_shape = run, floats, small, same_shape
        self.ndim, self.accepts, self.views = ndim, accepts, views

    def __repr__(self):
        return f"<Kernel {getattr(self.run, '__name__', self.run)}>"


class Backend:
    """A named table of `Kernel`s by op type; ops it lacks, or inputs a kernel refuses, run the op's numpy `compute`."""

    name = "base"
    kernels = {}            # op type -> Kernel
    small_size = 0          # inputs all smaller than this go to numpy (for entries with small=True)
    host_below = 0          # eager ops on fewer elements compute with numpy at once, before any table lookup
    pool_bytes = 0          # the buffer pool's bound (None: $TINYFLOW_POOL_MB or 256 MiB; 0: no pool)
    fused = None            # the FusedKernel class running fused nodes with one generated kernel (None: numpy)

    def __init__(self):
        self.report = RunReport()
        self.lock = threading.RLock()  # held by Session.run: kernels and the report are not shared by threads
        # arrays a plan drops come back as kernel outputs; fetched arrays the caller drops too (`lend`)
        self.pool = BufferPool(self.pool_bytes)

    @classmethod
    def is_available(cls):
        """Whether this machine can run the backend."""
        return not cls.why_unavailable()

    @classmethod
    def why_unavailable(cls):
        """'' when this machine can run the backend, else what is missing and how to get it."""
        return ""

    @classmethod
    def register_kernel(cls, op_type, run, **accepts):
        """Add (or replace) the kernel of `op_type` in this backend's table, for sessions created afterwards.

        `run(backend, op, *values)` computes the op's value (numpy arrays on C, device arrays on OpenCL), or returns
        `DECLINE` to leave the inputs to the op's numpy `compute`; `accepts` are the `Kernel` conditions. Example:
            CBackend.register_kernel("FusedAddRelu", fused_add_relu, same_shape=True)
        """
        if "kernels" not in cls.__dict__:
            cls.kernels = dict(cls.kernels)  # a subclass gets its own table
        cls.kernels[op_type] = Kernel(run, **accepts)
        return cls.kernels[op_type]

    # ------------------------------------------------------------ dispatch
    def kernel(self, op):
        """The callable computing `op` from its input values: the table's kernel when it accepts them, else numpy."""
        if isinstance(op, (Variable, Constant, Placeholder)):
            return self.source_kernel(op)
        bind = getattr(op, "bind_kernel", None)
        if bind is not None:  # control flow: the kernel runs subgraphs on this same backend
            return bind(self)
        if self.static_route(op) is not None:
            return self.host_kernel(op)
        entry = self.kernels[op.op_type]
        return lambda *values: self.call(entry, op, values)

    def fused_kernel(self, node):
        """The callable computing a fused elementwise node (passes/fusion.py): a `fused` kernel, else numpy."""
        return node.compute if self.fused is None else self.fused(node, self)

    def compute(self, op, values):
        """op's value now, from host input values (eager mode): the table's kernel when it accepts them, else numpy."""
        entry = self.kernels.get(op.op_type)
        out = op.compute(*values) if entry is None else self.to_host(self.call(entry, op, values))
        return out if out.__class__ is np.ndarray else np.asarray(out)

    def static_route(self, op, shapes=None):
        """'host' (no kernel) or 'small' (its [output, *input] shapes, by default the static ones, are known to be
        small) when numpy runs `op` for a whole plan; None: decided at each call."""
        if isinstance(op, (Variable, Constant, Placeholder)) or hasattr(op, "bind_kernel"):
            return None
        entry = self.kernels.get(op.op_type)
        if entry is None:
            return "host"
        shapes = shapes or [op.shape] + [i.shape for i in op.inputs]
        if entry.small and self.small_size and all(
                is_fully_known(shape) and math.prod(shape) < self.small_size for shape in shapes):
            return "small"
        return None

    def call(self, entry, op, values):
        """Run table entry `entry` for `op` on `values` if it accepts them, else the op's compute (counted)."""
        # plain loops, no generators: this runs for every table op of every step
        small = self.small_size
        if small and entry.small:
            for v in values:
                if getattr(v, "size", 0) >= small:
                    break
            else:
                self.report.small_calls[op.op_type] += 1
                return self.on_host(op, values)
        adopt = self.adopt
        values = [v if type(v) is np.ndarray else adopt(v) for v in values]  # every backend keeps numpy arrays
        positions = range(len(values)) if entry.floats is None else entry.floats
        if self._accepts(entry, op, values, positions):
            if not entry.views:
                for i in positions:
                    values[i] = self.prepare(values[i])
            result = entry.run(self, op, *values)
            if result is not DECLINE:
                self.report.kernel_ops[op.op_type] += 1
                return result
        self.report.host_calls[op.op_type] += 1
        return self.on_host(op, values)

    def _accepts(self, entry, op, values, positions):
        if positions:
            first = values[positions[0]]
            dtype, shape = first.dtype, first.shape
            if dtype not in self.float_dtypes():
                return False
            for i in positions:
                v = values[i]
                if v.dtype != dtype or v.size == 0 or entry.same_shape and v.shape != shape:
                    return False
        elif entry.floats != ():  # () declares an entry without data inputs (Group)
            return False
        if entry.ndim is not None and len(values[0].shape) != entry.ndim:
            return False
        return entry.accepts is None or bool(entry.accepts(op, *values))

    # ------------------------------------------------------------ what subclasses adapt
    def source_kernel(self, node):
        """The kernel reading a node without inputs; `.leaf` names the node, so compiled plans can read it inline."""
        # a Placeholder's default (Placeholders without one are checked before running)
        read = (lambda: node.value) if isinstance(node, (Variable, Constant)) else (lambda: node.default)
        read.leaf = node
        return read

    def float_dtypes(self):
        """The float dtypes this backend's kernels handle."""
        return FLOATS

    def adopt(self, value):
        """An input value as the array type kernels inspect (numpy scalars and Python numbers become arrays)."""
        return value if isinstance(value, np.ndarray) else np.asarray(value)

    def prepare(self, value):
        """A float input as a kernel needs it: a C-contiguous array (device backends: a device array)."""
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)

    def host_kernel(self, op):
        """The callable running `op`'s numpy compute when numpy is chosen once per plan."""
        return op.compute

    def on_host(self, op, values):
        """The op's numpy compute on the values (device backends download them first)."""
        return op.compute(*values)

    def begin_run(self):
        """Called by Session.run before a run: resets the run report, takes back the fetched arrays dropped since."""
        self.report.clear()
        self.pool.reclaim()

    def to_host(self, value):
        """A fetched value as a numpy array (backends holding device arrays download here)."""
        return value

    def buffer_stats(self):
        """(buffers reused, buffers allocated) by this backend's buffer pool so far."""
        return self.pool.reused, self.pool.allocated

    def close(self):
        """Release what the backend holds (buffers, device memory); called by Session.close."""
        self.pool.clear()

    def __repr__(self):
        return f"<tinyflow backend '{self.name}'>"


class NumpyBackend(Backend):
    """The readable reference: runs each op with its numpy `compute` method (an empty kernel table)."""

    name = "numpy"
    kernels = {}
    host_below = float("inf")  # eager ops compute with numpy at once
