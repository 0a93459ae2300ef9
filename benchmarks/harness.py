"""Measuring side by side: interleaved repeats, medians and spread, the machine's load noted.

Machines are shared and noisy, so every candidate of a row is timed in turn in
each repeat (never all repeats of one, then the other), and rows report the
median and the interquartile spread, and ratios of medians.
"""
import os
import time

import numpy as np


def configure_threads(threads):
    """Give numpy's BLAS and tinyflow's OpenMP the same thread count (call before importing numpy users)."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TINYFLOW_NUM_THREADS"):
        os.environ[name] = str(threads)


def interleaved(candidates, repeats=21, warmup=2):
    """{name: array of seconds} for callables timed in turn, `repeats` rounds after `warmup` rounds.

    The order rotates every round, so no candidate always runs right after the same other one
    (a library whose threads stay busy after it returns would otherwise slow its successor).
    """
    times = {name: [] for name in candidates}
    names = list(candidates)
    for round_ in range(warmup + repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            fn = candidates[name]
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            if round_ >= warmup:
                times[name].append(elapsed)
    return {name: np.array(t) for name, t in times.items()}


def summary(seconds):
    """(median, interquartile range) in seconds."""
    q1, median, q3 = np.percentile(seconds, [25, 50, 75])
    return median, q3 - q1


def load_note():
    """A line describing the machine's background load (1-minute load average vs cores)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return "load average unavailable"
    return f"1-min load average {load:.2f} on {os.cpu_count()} cores"


def fmt_time(seconds):
    """Seconds as a short human string."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def print_table(title, header, rows):
    """A plain-text table."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(f"\n{title}")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
