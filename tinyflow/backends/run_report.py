"""`backend.report`: what ran where during a Session's last run, read as attributes or as a dict."""
from collections import Counter
from collections.abc import Mapping

from ..errors import BackendError


class ReportKeyError(BackendError, KeyError):
    """A key a run report does not have (a KeyError too, so `in` and `.get` work as on a dict)."""

    __str__ = BackendError.__str__  # the message as written, not KeyError's quoted repr of it


class RunReport(Mapping):
    """Which ops ran with a table kernel, which with numpy (no kernel, inputs refused, or small), and the bytes moved
    to and from a device in the last run; attributes or a dict (`report["kernel_ops"]`, `as_dict()` for json). Ops a
    plan routed to numpy once for all are summed only when read: a run should not pay for a report nobody reads."""

    KEYS = ("kernel_ops", "host_ops", "small_ops", "to_device", "to_host")

    def __init__(self):
        self.kernel_ops, self.host_calls, self.small_calls = Counter(), Counter(), Counter()
        self._static = []
        self.to_device = self.to_host = 0

    def __getitem__(self, key):
        if key not in self.KEYS:
            raise ReportKeyError(f"a run report has no {key!r}; its keys are {', '.join(self.KEYS)} "
                                 "(op type -> count for the *_ops, bytes for to_device and to_host)")
        return getattr(self, key)

    def __iter__(self):
        return iter(self.KEYS)

    def __len__(self):
        return len(self.KEYS)

    def as_dict(self):
        """A plain copy: {'kernel_ops': {op type: count}, 'host_ops': ..., 'to_device': bytes, ...}."""
        return {key: dict(value) if isinstance(value, Counter) else value for key, value in self.items()}

    def add_static(self, routes):
        """Count the ops a plan routed to numpy once for all: {(route, op type): how many}, route 'host'/'small'."""
        self._static.append(routes)
        if len(self._static) > 64:  # a loop's body plan runs at every iteration: fold its counts in now and then
            self.host_calls, self.small_calls = self.host_ops, self.small_ops
            self._static.clear()

    def _with_static(self, counts, route):
        total = Counter(counts)
        for routes in self._static:
            for (kind, op_type), count in routes.items():
                if kind == route:
                    total[op_type] += count
        return total

    # by op type: ops numpy ran as a fallback (no kernel, or inputs the kernel does not accept), and ops
    # numpy ran because their inputs were too small to be worth a kernel call
    host_ops = property(lambda self: self._with_static(self.host_calls, "host"))
    small_ops = property(lambda self: self._with_static(self.small_calls, "small"))

    def clear(self):
        """Start a new run (the counters emptied in place: new ones would cost microseconds a run)."""
        for counts in (self.kernel_ops, self.host_calls, self.small_calls, self._static):
            counts.clear()
        self.to_device = self.to_host = 0

    def __str__(self):
        host, small = self.host_ops, self.small_ops
        lines = [f"run: {sum(self.kernel_ops.values())} ops by the backend's kernels, "
                 f"{sum(host.values())} by numpy as a fallback, {sum(small.values())} by numpy "
                 f"as too small; {self.to_device / 1e6:.3f} MB uploaded, {self.to_host / 1e6:.3f} MB downloaded"]
        if host:
            lines.append("  fell back to numpy: " + ", ".join(f"{op} x{n}" for op, n in sorted(host.items())))
        return "\n".join(lines)
