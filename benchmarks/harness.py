"""Measuring side by side: interleaved repeats, medians and spread, and what the process runs on.

Machines are shared and noisy, so every candidate of a table is timed in turn in each
repeat (never all repeats of one, then the other), and tables report the median, the
interquartile spread and ratios of medians. The facts that decide a measurement (threads,
which OpenMP runtime the process loaded, the machine's load) are read from the process
itself, not assumed.
"""
import ctypes
import os
import sys
import time

import numpy as np

# every library's own thread-count variable: OpenMP (tinyflow's C kernels, the reference loops,
# PyTorch), OpenBLAS / MKL / Accelerate (numpy's matmul), numexpr, and tinyflow's own setting
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "TINYFLOW_NUM_THREADS")
OPENMP_RUNTIMES = ("libgomp", "libiomp", "libomp")


def configure_threads(threads):
    """Give every library the same thread count (before the libraries load; PyTorch also needs set_num_threads)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)


SETTLE_SECONDS = 0.010  # the least settle: longer than a wake-up, a few calls of the larger units


def other_threads_cpu_seconds():
    """{thread id: CPU seconds so far} of every thread of this process but the calling one (Linux's /proc; {}
    elsewhere). A thread that ends while it is read is left out."""
    import threading
    me, times = threading.get_native_id(), {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return times
    for tid in tids:
        if int(tid) == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:  # first field: ns on a CPU
                times[tid] = int(f.read().split()[0]) * 1e-9
        except OSError:
            continue
    return times


def spin_after(region, quiet=0.1, rounds=5):
    """CPU seconds the busiest other thread burns after one call of `region` (median of `rounds`): an OpenMP
    runtime's threads spin-waiting for the next parallel region, each for about as long. 0 where /proc cannot
    tell."""
    region()
    time.sleep(quiet)
    spins = []
    for _ in range(rounds):
        before = other_threads_cpu_seconds()
        region()
        time.sleep(quiet)
        after = other_threads_cpu_seconds()
        spins.append(max([after[tid] - before[tid] for tid in after if tid in before], default=0.0))
    return float(np.median(spins))


def settle_for(spin):
    """How long each timed call is preceded by untimed calls of the same candidate, given `spin` (spin_after).

    A spinning thread that shares a CPU with one of the next candidate's threads takes twice its CPU time in
    wall time to run out; with a margin, 2.5 times."""
    return max(SETTLE_SECONDS, 2.5 * spin)


def await_compiles():
    """Steady state: the fused kernels that tinyflow's warm-up runs started compiling in the background are ready
    (runs never wait for them; the cold-cache table times the first runs)."""
    compiler = sys.modules.get("tinyflow.backends.compiler")
    if getattr(compiler, "wait_for_compiles", None) is not None:  # (older tinyflow compiled at once)
        compiler.wait_for_compiles()


def interleaved(candidates, repeats=21, warmup=2, settle=SETTLE_SECONDS):
    """{name: array of seconds} for callables timed in turn, `repeats` rounds after `warmup` rounds.

    Each round runs the candidates in a new random order (fixed seed), so slow drifts of the machine
    (load, clock) reach every candidate alike. Before its timed call a candidate runs untimed for
    `settle` seconds (at least once): what the previous candidate left running then hits those calls,
    and the timed one sees the candidate in its own steady state, as in a training loop. Without it,
    a candidate following an OpenMP one shares a core with that runtime's spinning threads (libgomp's
    spin for about 7 ms of CPU after each region, so 10-14 ms of wall time beside a busy thread; W6's
    tinyflow c right after the fused loop: 5.6, 5.6, 3.9, then 3.8 ms), while an OpenMP candidate following
    another reuses the spinning team and pays nothing; settle_for(spin_after(...)) outlasts the spin.
    settle=0 for collectives: every process must make the same number of calls.
    """
    times = {name: [] for name in candidates}
    names = list(candidates)
    rng = np.random.default_rng(2025)
    for round_ in range(warmup + repeats):
        if round_ == warmup:
            await_compiles()
        for name in rng.permutation(names):
            fn = candidates[name]
            if settle:
                settled = time.perf_counter() + settle
                fn()
                while time.perf_counter() < settled:
                    fn()
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            if round_ >= warmup:
                times[name].append(elapsed)
    return {name: np.array(t) for name, t in times.items()}


def summary(seconds):
    """(median, interquartile range) in seconds."""
    q1, median, q3 = np.percentile(seconds, [25, 50, 75])
    return float(median), float(q3 - q1)


def load_average():
    """The machine's 1-minute load average (None where the OS does not tell)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def load_note():
    """A line describing the machine's background load (1-minute load average vs cores)."""
    load = load_average()
    if load is None:
        return "load average unavailable"
    return f"1-min load average {load:.2f} on {os.cpu_count()} cores"


def loaded_libraries(*fragments):
    """Paths of the shared libraries this process has loaded whose file name contains one of `fragments`."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:  # not Linux
        return []
    return sorted(p for p in paths if any(f in os.path.basename(p).lower() for f in fragments))


def openmp_runtimes():
    """The OpenMP runtime files loaded in this process (one libgomp serves every -fopenmp library in it)."""
    return loaded_libraries(*OPENMP_RUNTIMES) or ["none loaded"]


def blas_threads():
    """The thread count numpy's OpenBLAS reports, or None when it cannot be asked."""
    for path in loaded_libraries("openblas"):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                     "openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(lib, name):
                return getattr(lib, name)()
    return None


def fmt_time(seconds):
    """Seconds as a short human string."""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def print_table(title, header, rows, groups=None):
    """A plain-text table under `title` (None: none); `groups` [(label, number of columns), ...] adds a line of
    labels spanning columns."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    if title is not None:
        print(f"\n{title}")
    if groups:
        cells, start = [], 0
        for label, span in groups:
            width = sum(widths[start:start + span]) + 2 * (span - 1)
            cells.append(label.center(width, "-") if label else " " * width)
            start += span
        print("  ".join(cells).rstrip())
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
