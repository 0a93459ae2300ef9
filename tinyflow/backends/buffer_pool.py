"""Reusing output buffers: arrays the plan drops come back as the outputs of later kernels.

Fresh large arrays cost page faults (the OS zero-fills every page on first touch), often
more than the kernel that fills them. When a plan drops a value that nobody else holds,
the C backend keeps the buffer here, by shape and dtype, and its kernels allocate from here.
"""
import sys
import threading

import numpy as np

MIN_BYTES = 16 * 1024           # smaller arrays come from numpy's own cache cheaply
MAX_PER_SHAPE = 8
MAX_TOTAL_BYTES = 1 << 30


class BufferPool:
    """Free float arrays by (shape, dtype), with a bound on how much memory waits here."""

    def __init__(self):
        self._free = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.reused = self.allocated = 0

    def empty(self, shape, dtype):
        """An uninitialised C-contiguous array: a recycled one if available."""
        key = (tuple(shape), np.dtype(dtype))
        with self._lock:
            stack = self._free.get(key)
            if stack:
                array = stack.pop()
                self._bytes -= array.nbytes
                self.reused += 1
                return array
            self.allocated += 1
        return np.empty(key[0], key[1])

    def recycle(self, value, references=3):
        """Keep `value` for reuse if it is a large float array owning its memory that nobody else holds.

        `references` is how many references the caller's frame and this call hold (a local
        variable, the argument, getrefcount's own): any more means someone still uses it.
        """
        if (type(value) is not np.ndarray or value.base is not None or value.nbytes < MIN_BYTES
                or not value.flags.c_contiguous or not value.flags.writeable or value.dtype.kind != "f"
                or sys.getrefcount(value) > references):
            return
        key = (value.shape, value.dtype)
        with self._lock:
            stack = self._free.setdefault(key, [])
            if len(stack) < MAX_PER_SHAPE and self._bytes + value.nbytes <= MAX_TOTAL_BYTES:
                stack.append(value)
                self._bytes += value.nbytes

    def clear(self):
        """Drop every kept buffer."""
        with self._lock:
            self._free.clear()
            self._bytes = 0


POOL = BufferPool()
