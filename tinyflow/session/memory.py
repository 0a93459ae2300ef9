"""Memory of one run: when each intermediate is computed and dropped, and the peak."""
import numpy as np

from ..nodes import Constant, Variable


def _buffers(value):
    """(key, bytes, owner) of each buffer a value holds (a view counts with its base; loop values hold many)."""
    if isinstance(value, tuple) or hasattr(value, "arrays"):
        return [buffer for part in (value if isinstance(value, tuple) else value.arrays()) for buffer in _buffers(part)]
    if isinstance(value, np.ndarray):
        while isinstance(value.base, np.ndarray):
            value = value.base
        return [(id(value), value.nbytes, value)]
    data = getattr(value, "base_data", None)  # an OpenCL device array
    return [] if data is None else [(data.int_ptr, data.size, value)]


class MemoryProfile:
    """Per step of a plan: bytes allocated, freed, alive during and after the step; and the peak."""

    def __init__(self, rows, fed_bytes, reused_buffers=0, new_buffers=0):
        self.rows, self.fed_bytes = rows, fed_bytes
        self.reused_buffers, self.new_buffers = reused_buffers, new_buffers  # from the backend's buffer pool
        # the high-water mark is during a step: its inputs are still alive when its output is born
        peak = max(rows, key=lambda r: r["during_bytes"]) if rows else None
        self.peak_bytes = peak["during_bytes"] if peak else fed_bytes
        self.peak_step = peak["position"] if peak else None

    def table(self):
        """A text table, one line per step, the peak marked."""
        lines = [f"{'step':>4}  {'node':<40} {'op':<16} {'new':>10} {'freed':>10} {'alive':>10}",
                 f"{'':>4}  {'(fed values)':<40} {'':<16} {_mb(self.fed_bytes):>10} {'':>10} {_mb(self.fed_bytes):>10}"]
        for r in self.rows:
            mark = "  <- peak" if r["position"] == self.peak_step else ""
            lines.append(f"{r['position']:>4}  {r['node'][:40]:<40} {r['op_type'][:16]:<16} {_mb(r['new_bytes']):>10} "
                         f"{_mb(r['freed_bytes']):>10} {_mb(r['live_bytes']):>10}{mark}")
        lines.append(f"peak: {_mb(self.peak_bytes)} alive while step {self.peak_step} runs; "
                     f"outputs from the buffer pool: {self.reused_buffers} reused, {self.new_buffers} newly allocated")
        return "\n".join(lines)

    __str__ = table


def _mb(n):
    return f"{n / 1e6:.3f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def memory_profile(session, fetches, feed_dict=None):
    """Run `fetches` once in `session`, recording each intermediate's birth, death and the bytes alive (views
    count with the array owning their memory; Variables and Constants not at all: their memory outlives the run)."""
    plan, checked = session.prepare(fetches, feed_dict)
    owners = {}  # id of owning buffer -> [bytes, references from live slots]

    def hold(value):
        new = 0
        for key, size, owner in _buffers(value):
            entry = owners.setdefault(key, [size, 0, owner])  # keep the owner alive: its key must stay unique
            entry[1] += 1
            new += size if entry[1] == 1 else 0
        return new

    def drop(value):
        freed = 0
        for key, _, _ in _buffers(value):
            entry = owners.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] == 0:
                    del owners[key]
                    freed += entry[0]
        return freed

    fed_bytes = sum(hold(v) for v in checked.values())
    live, rows = fed_bytes, []

    def observe(step, value, released):
        nonlocal live
        new = 0 if isinstance(step.node, (Variable, Constant)) else hold(value)  # (memory outliving the run)
        during = live + new
        freed = sum(drop(v) for v in released)
        live = during - freed
        rows.append(dict(position=len(rows), node=step.node.name, op_type=step.node.op_type,
                         new_bytes=new, freed_bytes=freed, during_bytes=during, live_bytes=live))

    reused, allocated = session.backend.buffer_stats()
    plan.run(checked, observer=observe)
    reused_after, allocated_after = session.backend.buffer_stats()
    return MemoryProfile(rows, fed_bytes, reused_after - reused, allocated_after - allocated)
