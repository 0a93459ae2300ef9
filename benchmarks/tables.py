"""What each table measures, inside one child process whose import order run.py fixed.

A child imports torch and tinyflow in its order before anything else that could load an
OpenMP runtime, then loads the reference loops, times the tables it was given and prints
one line of JSON (CHILD_RESULT + data) for run.py to merge with the other order's.

A table yields sections; a section is {key, title, rows, focus, load, ...}, and a row is
{name, median, iqr, ratio, gbps, triad}: seconds per unit of work, the ratio to the row's
reference in the same run, and for memory-bound tables the bandwidth the row implies for
the bytes it must move and its share of the STREAM triad timed alongside.
"""
import json
import os
import platform
import sys
import time
import traceback
from typing import Callable, NamedTuple, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (blas_threads, configure_threads, interleaved, load_average, openmp_runtimes,  # noqa: E402
                     settle_for, spin_after, summary)

CHILD_RESULT = "TINYFLOW_BENCH_RESULT "
ORDERS = ("torch first", "tinyflow first")
NO_TORCH = "without torch"
# a third process for the tables whose reference is PyTorch: torch imported first and its rows
# alone timed, as a PyTorch user measures them (no other library's threads run in between)
TORCH_ALONE = "torch alone"
# pocl's worker threads stay busy after an OpenCL candidate and slow whatever runs next, so the
# OpenCL rows are timed in their own interleaving against the table's reference
SEPARATE = ("tinyflow opencl",)
TRIAD_BYTES = 12  # STREAM's count for a = b + s c in float32: read b and c, write a


class Context(NamedTuple):
    """What a table needs from its process: libraries as imported, the reference loops, run options."""
    tfl: object
    torch: Optional[object]
    reference: object
    threads: int
    repeats: int
    warmup: int
    n: int  # elements of the memory-bound tables
    torch_alone: bool  # time only the PyTorch rows
    settle: float  # seconds of untimed calls before each timed one (harness.interleaved, settle_for)


class Workload(NamedTuple):
    """A table of candidates doing the same unit of work, timed interleaved, as ratios to `reference`."""
    title: str
    build: Callable  # Context -> {candidate: zero-argument callable}
    reference: str
    focus: str = "tinyflow c"
    inner: int = 1  # sub-millisecond units are timed `inner` at a time, so one thread wake-up does not decide
    bytes_per_element: int = 0  # memory-bound tables: bytes each element must move (GB/s, share of triad)


def import_in_order(order):
    """Import torch and tinyflow in `order`; returns (tinyflow, torch or None)."""
    if order in ("torch first", TORCH_ALONE):
        import torch
        import tinyflow
    else:
        import tinyflow
        try:
            import torch
        except ImportError:
            torch = None
    return tinyflow, torch


def tables():
    """{key: Workload or a function Context -> [section]}, in the order run.py prints them."""
    import jit_static  # the table modules import torch and tinyflow: only after the ordered imports
    import kernels
    import workloads as w

    def jit(key):
        return Workload(jit_static.TITLES[key], lambda ctx: jit_static.candidates(key, ctx.torch), jit_static.EAGER,
                        focus="tfl.jit.to_static")
    return {
        "W1a": Workload("chain of 1,000 adds on 4x4, forward", lambda ctx: w.w1_chain(False), "numpy by hand",
                        inner=5),
        "W1b": Workload("chain of 1,000 adds on 4x4, forward + backward", lambda ctx: w.w1_chain(True),
                        "numpy by hand", inner=5),
        "W2a": Workload("Boston MLP 13-64-64-1 (relu, MSE, Adam), one epoch at batch 32",
                        lambda ctx: w.w2_boston(False), "numpy by hand", inner=3),
        "W2b": Workload("Boston MLP 13-64-64-1, one full-batch step", lambda ctx: w.w2_boston(True),
                        "numpy by hand", inner=10),
        "W3": Workload("MLP 784-1024-1024-10 (softmax cross-entropy, SGD), one step at batch 256",
                       lambda ctx: w.w3_wide_mlp(), "numpy by hand"),
        "W4": Workload("c * sigmoid(a*x + b) over {n} floats", lambda ctx: w.w4_fused_sigmoid(ctx.reference, ctx.n),
                       "fused C loop", bytes_per_element=8),
        "W5": Workload("digits convnet (conv 1->8 3x3, relu, max-pool 2, linear 128->10), one epoch at batch 64, "
                       "Adam", lambda ctx: w.w5_convnet(), "pytorch eager"),
        "W6": Workload("Adam step over {n} parameters", lambda ctx: w.w6_adam(ctx.reference, ctx.n),
                       "fused C loop", bytes_per_element=28),
        "E1": Workload("eager: chain of 1,000 adds on 4x4, forward + backward (tinyflow rows: eager Tensors)",
                       lambda ctx: w.e1_chain_eager(), "pytorch eager", inner=5),
        "E2": Workload("eager: Boston MLP 13-64-64-1 (relu, MSE, Adam), one epoch at batch 32 (tinyflow rows: "
                       "eager Tensors)", lambda ctx: w.e2_boston_eager(), "pytorch eager", inner=3),
        "J1": jit("J1"),
        "J2": jit("J2"),
        "K": kernels.measure,
    }


KEYS = ("W1a", "W1b", "W2a", "W2b", "W3", "W4", "W5", "W6", "E1", "E2", "J1", "J2", "K")


def triad_candidates(reference, n):
    """The STREAM triad over n floats with the run's threads, and on one thread (memory-bound tables' yardstick)."""
    import numpy as np
    a, b, c = np.empty(n, np.float32), np.full(n, 1.0, np.float32), np.full(n, 2.0, np.float32)
    threads = reference.omp_threads()
    return {f"STREAM triad (OpenMP, {threads} thread{'s' if threads > 1 else ''})":
            reference.bind("reference_triad", a, b, c, 3.0, n),
            "STREAM triad (one thread, no OpenMP)": reference.bind("reference_triad_serial", a, b, c, 3.0, n)}


def rows_of(stats, reference_of, bytes_of=None, triad=None):
    """Rows for {name: (median, iqr)}: ratio to reference_of(name); GB/s and share of `triad` when bytes_of(name)."""
    rows = []
    triad_gbps = TRIAD_BYTES * triad[1] / stats[triad[0]][0] / 1e9 if triad else None
    for name, (median, iqr) in stats.items():
        ref = stats.get(reference_of(name))
        row = {"name": name, "median": median, "iqr": iqr, "ratio": median / ref[0] if ref else None,
               "gbps": None, "triad": None}
        moved = bytes_of(name) if bytes_of else 0
        if moved:
            row["gbps"] = moved / median / 1e9
            row["triad"] = row["gbps"] / triad_gbps
        rows.append(row)
    return rows


def measure_workload(key, table, ctx):
    """Time one Workload's candidates interleaved (OpenCL separately) and return its section."""
    candidates = table.build(ctx)
    if ctx.torch_alone:
        candidates = {name: fn for name, fn in candidates.items() if name.startswith("pytorch")}
    triad = None
    if table.bytes_per_element:
        for name, fn in triad_candidates(ctx.reference, ctx.n).items():
            candidates[name] = fn
            triad = triad or (name, ctx.n)
    inner = table.inner
    if inner > 1:
        candidates = {name: (lambda fn: lambda: [fn() for _ in range(inner)])(fn) for name, fn in candidates.items()}
    separate = {name: candidates.pop(name) for name in SEPARATE if name in candidates and table.reference in candidates}
    times = interleaved(candidates, repeats=ctx.repeats, warmup=ctx.warmup, settle=ctx.settle)
    stats = {name: tuple(v / inner for v in summary(t)) for name, t in times.items()}
    reference = table.reference if table.reference in stats else None
    for name, fn in separate.items():  # scaled to the reference as measured alongside it
        pair = interleaved({table.reference: candidates[table.reference], name: fn},
                           repeats=max(ctx.repeats // 3, 3), warmup=1, settle=ctx.settle)
        scale = stats[table.reference][0] / (summary(pair[table.reference])[0] / inner)
        stats[name + " (separately)"] = tuple(v / inner * scale for v in summary(pair[name]))

    def bytes_of(name):
        if name.startswith("STREAM triad"):
            return TRIAD_BYTES * ctx.n
        return table.bytes_per_element * ctx.n
    title = table.title.format(n=f"{ctx.n / 1e6:g}M")
    unit = f", per unit of {inner} timed back to back" if inner > 1 else ""
    note = f"ratio to {table.reference}{unit}" if reference else f"{table.reference}: not installed, no ratios"
    if table.bytes_per_element:
        note += (f"; GB/s for the {table.bytes_per_element} bytes per element each must move, and its share of the "
                 f"triad's (12 bytes per element)")
    return {"key": key, "title": title, "note": note, "focus": [table.focus],
            "bandwidth": bool(table.bytes_per_element),
            "rows": rows_of(stats, lambda name: reference, bytes_of if table.bytes_per_element else None, triad)}


def describe_process(tfl, torch, reference, threads):
    """Versions, the OpenMP runtime this process loaded, and the thread count each library will use."""
    import numpy as np
    from tinyflow.backends import native
    query = getattr(native.lib, "tf_max_threads", None) if native.is_built() else None
    tinyflow_threads = query() if query is not None else None
    return {
        "versions": {"tinyflow": f"{tfl.__version__} ({os.path.dirname(os.path.dirname(tfl.__file__))})",
                     "numpy": np.__version__,
                     "torch": torch.__version__ if torch is not None else None,
                     "python": platform.python_version()},
        "openmp": openmp_runtimes(),
        "threads": {"requested": threads, "tinyflow": tinyflow_threads, "torch": torch.get_num_threads() if torch
                    is not None else None, "BLAS": blas_threads(), "OpenMP": reference.omp_threads()},
    }


def run_child(keys, order, threads, repeats, warmup, n):
    """The child process: import in `order`, time the tables `keys`, print CHILD_RESULT + JSON."""
    configure_threads(threads)
    tfl, torch = import_in_order(order)
    if torch is not None:
        torch.set_num_threads(threads)
    import numpy as np
    import jit_static
    import workloads
    from reference import ReferenceLoops
    reference = ReferenceLoops()  # after the ordered imports: it links libgomp.so.1
    # the longer of an OpenMP region's spin and numpy's OpenBLAS's (its idle threads spin ~0.1 s of CPU after a
    # call): each candidate is timed with the others' pools idle, numpy's by-hand references included
    square = np.ones((512, 512), np.float32)
    spin = max(spin_after(next(iter(triad_candidates(reference, 1_000_000).values()))),
               spin_after(lambda: square @ square))
    ctx = Context(tfl, torch, reference, threads, repeats, warmup, n, order == TORCH_ALONE, settle_for(spin))
    process = describe_process(tfl, torch, reference, threads)
    process["spin"], process["settle"] = spin, ctx.settle
    sections = []
    available = tables()
    for key in keys:
        workloads.RNG = jit_static.RNG = np.random.default_rng(0)  # the same data whatever ran before
        tfl.eager.set_backend(None)  # eager tables leave their last backend on
        start, began = load_average(), time.perf_counter()
        try:
            table = available[key]
            new = measure_workload(key, table, ctx) if isinstance(table, Workload) else table(ctx)
        except Exception:  # noqa: BLE001 - one broken table must not hide the others' results
            new = {"key": key, "error": traceback.format_exc()}
        end, seconds = load_average(), time.perf_counter() - began
        for section in new if isinstance(new, list) else [new]:
            section["load"], section["seconds"] = [start, end], seconds
            sections.append(section)
    result = {"order": order, "process": process, "sections": sections}
    print(CHILD_RESULT + json.dumps(result), flush=True)
