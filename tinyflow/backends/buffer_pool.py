"""Reusing output buffers: arrays a plan drops come back as the outputs of later kernels.

Fresh large arrays cost page faults (the OS zero-fills each page on first touch), often more than the kernel that
fills them. Each C backend (so each Session) keeps the dropped values nobody else holds here, by shape and dtype,
bounded in bytes (the shape used longest ago goes first). Fetched values the caller drops (a benchmark loop) come
back too: the pool watches those it handed out (`lend`) for two runs and takes back (`reclaim`) the unreferenced."""
import math
import os
import sys
import threading
from collections import OrderedDict

import numpy as np

MIN_BYTES = 16 * 1024           # smaller arrays come from numpy's own cache cheaply
MAX_PER_SHAPE = 8
DEFAULT_MAX_BYTES = 256 << 20   # $TINYFLOW_POOL_MB overrides (0 disables the pool)


class BufferPool:
    """Free float arrays by (shape, dtype), at most `max_bytes` in all, least recently used shapes dropped first."""

    def __init__(self, max_bytes=None):
        if max_bytes is None:
            text = os.environ.get("TINYFLOW_POOL_MB", "").strip()
            max_bytes = int(text) << 20 if text.isdigit() else DEFAULT_MAX_BYTES
        self.max_bytes = int(max_bytes)
        self._free = OrderedDict()  # (shape, dtype) -> [arrays], least recently used first
        self._lock = threading.Lock()
        self.bytes = self.reused = self.allocated = 0
        self._lent = []  # (runs since handed out, array) of fetched arrays; see `lend`

    def empty(self, shape, dtype):
        """An uninitialised C-contiguous array: a recycled one if available."""
        dtype = np.dtype(dtype)
        if math.prod(shape) * dtype.itemsize < MIN_BYTES:  # never kept: skip the lock and the lookup
            return np.empty(shape, dtype)
        key = (tuple(shape), dtype)
        with self._lock:
            stack = self._free.get(key)
            if stack:
                array = stack.pop()
                self.bytes -= array.nbytes
                self._free.move_to_end(key)
                self.reused += 1
                return array
            self.allocated += 1
        return np.empty(key[0], key[1])

    def worth_keeping(self, shape):
        """Whether arrays of this static shape (None dims: unknown) may be large enough to be kept."""
        # (an unknown rank or size may be large; 8 bytes: float64 at most)
        return self.max_bytes > 0 and (shape is None or None in shape or math.prod(shape) * 8 >= MIN_BYTES)

    def recycle(self, value, references=3):
        """Keep `value` if it is a large float array owning its memory that nobody else holds (more than
        `references`, the caller's and this call's, means someone still uses it)."""
        if (type(value) is not np.ndarray or value.base is not None or value.nbytes < MIN_BYTES
                or value.nbytes > self.max_bytes or not value.flags.c_contiguous or not value.flags.writeable
                or value.dtype.kind != "f" or sys.getrefcount(value) > references):
            return
        key = (value.shape, value.dtype)
        with self._lock:
            stack = self._free.setdefault(key, [])
            self._free.move_to_end(key)
            if len(stack) >= MAX_PER_SHAPE:
                return
            stack.append(value)
            self.bytes += value.nbytes
            while self.bytes > self.max_bytes:  # evict the least recently used shape's buffers
                oldest, arrays = next(iter(self._free.items()))
                if arrays:  # (a shape whose buffers were all taken out keeps its empty stack)
                    self.bytes -= arrays.pop().nbytes
                if not arrays:
                    del self._free[oldest]

    def lend(self, values):
        """Remember the large arrays among fetched `values`: when the caller drops them, `reclaim` takes them back."""
        for value in values if self.max_bytes > 0 else ():
            if type(value) is np.ndarray and value.base is None and value.nbytes >= MIN_BYTES:
                self._lent.append((0, value))

    def reclaim(self):
        """Recycle the lent arrays only the pool still references (as each run starts); one the caller holds is
        watched one more run (a loop's `out = sess.run(...)` drops the previous one a run late), then forgotten."""
        lent, self._lent = self._lent, []
        while lent:
            runs, value = lent.pop()
            if sys.getrefcount(value) == 2:  # `value` here and getrefcount's argument: nobody else
                self.recycle(value)
            elif runs == 0:
                self._lent.append((1, value))

    def clear(self):
        """Drop every kept buffer."""
        with self._lock:
            self._free.clear()
            self._lent.clear()
            self.bytes = 0
