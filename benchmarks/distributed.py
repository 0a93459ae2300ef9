"""Data parallelism on this machine: all_reduce bandwidth vs message size, a digits convnet epoch on 1 vs 2 processes.

    python benchmarks/distributed.py [--processes 2] [--repeats 15] [--rounds 3]

The script launches itself under `tinyflow launch` (mpirun). Part 1 times tfl.distributed.all_reduce
side by side with raw mpi4py and torch.distributed (gloo) when PyTorch is installed, interleaved
within each repeat; bus bandwidth is 2(p-1)/p · N / t, the bytes each process sends in a ring
all_reduce per second. Part 2 trains the digits convnet of `tinyflow demo digits` with
Model.fit(distributed=True) at a fixed global batch of 64 (strong scaling), alternating 1 and 2
processes over several rounds; the processes share the machine's cores (OpenMP threads = cores / processes).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SIZES = [256, 2048, 16 << 10, 128 << 10, 1 << 20, 8 << 20, 64 << 20]  # bytes of float32
GLOBAL_BATCH = 64


# ---------------------------------------------------------------- workers (run under mpirun)
def allreduce_worker(repeats, torch_file):
    """Rank 0 prints {size: {candidate: [seconds per all_reduce]}} as JSON."""
    import tinyflow as tfl
    from harness import interleaved
    d = tfl.distributed
    d.init(timeout=300)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    try:
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"file://{torch_file}", rank=d.rank(), world_size=d.world_size())
    except ImportError:
        dist = None
    results = {}
    for size in SIZES:
        x = np.ones(size // 4, np.float32)
        back_to_back = max(1, min(50, (1 << 20) // size))  # sub-millisecond calls timed several in a row
        candidates_for = {
            "tinyflow all_reduce": lambda: [d.all_reduce(x, "sum") for _ in range(back_to_back)],
            "mpi4py Allreduce": lambda: [comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM) for _ in range(back_to_back)],
        }
        if dist is not None:
            t = torch.from_numpy(x)
            candidates_for["torch.distributed gloo"] = lambda: [dist.all_reduce(t) for _ in range(back_to_back)]
        comm.Barrier()
        times = interleaved(candidates_for, repeats=repeats, warmup=2, settle=0)
        # a collective is as slow as its slowest process: take the max over ranks of each sample
        results[size] = {name: (d.all_reduce(t, "max") / back_to_back).tolist() for name, t in times.items()}
    if d.rank() == 0:
        print("RESULT " + json.dumps({"world": d.world_size(), "allreduce": results}), flush=True)


def epoch_worker(epochs):
    """Rank 0 prints the seconds of each of `epochs` timed epochs (after one warm-up epoch) as JSON."""
    import tinyflow as tfl
    d = tfl.distributed
    d.init(timeout=300)
    world = d.world_size()
    tfl.set_seed(0)
    X, y = tfl.data.load_digits()
    X = (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    net = tfl.nn.Sequential(tfl.nn.Conv2D(1, 16, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2),
                            tfl.nn.Flatten(), tfl.nn.Linear(16 * 4 * 4, 64, act="relu"), tfl.nn.Linear(64, 10))
    model = tfl.Model(net, "softmax_cross_entropy", tfl.optim.Adam(3e-3))
    fit = dict(batch_size=GLOBAL_BATCH // world, verbose=0, distributed=True)
    model.fit(X, y, epochs=1, **fit)  # builds the graph, warms caches
    seconds = []
    for _ in range(epochs):
        d.barrier()
        start = time.perf_counter()
        model.fit(X, y, epochs=1, **fit)
        seconds.append(d.all_reduce(np.array([time.perf_counter() - start]), "max")[0])
    if d.rank() == 0:
        print("RESULT " + json.dumps({"world": world, "seconds": seconds}), flush=True)


# ---------------------------------------------------------------- parent
def launch(n, *args, threads=None):
    """Run this script's worker in n processes (`threads` OpenMP threads each); the JSON rank 0 printed."""
    from tinyflow.distributed.mpi import command, environment
    env = environment(n)
    if threads is not None:
        env["OMP_NUM_THREADS"] = env["TINYFLOW_NUM_THREADS"] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    out = subprocess.run(command(n, [__file__, "--worker", *map(str, args)]), env=env, capture_output=True,
                         text=True, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"worker failed ({out.returncode}):\n{out.stdout}\n{out.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def fmt_bytes(n):
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3, help="alternating 1- and N-process epoch launches")
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per launch")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        return allreduce_worker(int(rest[0]), rest[1]) if kind == "allreduce" else epoch_worker(int(rest[0]))

    import tinyflow as tfl
    from harness import fmt_time, load_note
    from tinyflow.distributed.mpi import usable_cores
    p = args.processes
    print(f"tinyflow {tfl.__version__}, {tfl.distributed.library_version()}, {p} processes, "
          f"{args.repeats} interleaved repeats; medians over ranks' slowest")
    print(f"machine: {load_note()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        result = launch(p, "allreduce", args.repeats, os.path.join(tmp, "torch-rendezvous"))
    names = list(next(iter(result["allreduce"].values())))
    print(f"all_reduce (sum, float32) across {p} processes: median time and bus bandwidth 2(p-1)/p·N/t")
    print("size      " + "".join(f"{name:>34}" for name in names))
    for size, row in result["allreduce"].items():
        cells = []
        for name in names:
            t = float(np.median(row[name]))
            bus = 2 * (p - 1) / p * int(size) / t
            cells.append(f"{fmt_time(t):>12} {bus / 1e9:8.2f} GB/s {t / np.median(row[names[0]]):5.2f}x")
        print(f"{fmt_bytes(int(size)):<10}" + "".join(f"{c:>34}" for c in cells))
    print("(ratio: to tinyflow all_reduce)\n")

    cores = usable_cores()
    configs = [(1, 1), (1, cores), (p, max(1, cores // p))]  # (processes, threads each)
    configs = list(dict.fromkeys(configs))
    epochs = {config: [] for config in configs}
    for _ in range(args.rounds):
        for n, threads in configs:
            epochs[(n, threads)] += launch(n, "epoch", args.epochs, threads=threads)["seconds"]
    base = float(np.median(epochs[configs[0]]))
    print(f"digits convnet (1,797 images), one epoch of Model.fit(distributed=True), global batch {GLOBAL_BATCH}, "
          f"{args.rounds} rounds x {args.epochs} epochs, configurations interleaved")
    print(f"{'processes':<10}{'threads each':>13}{'batch/process':>14}{'epoch (median)':>16}{'IQR':>10}"
          f"{'speed-up':>10}")
    for (n, threads), seconds in epochs.items():
        q1, median, q3 = np.percentile(seconds, [25, 50, 75])
        print(f"{n:<10}{threads:>13}{GLOBAL_BATCH // n:>14}{fmt_time(median):>16}{fmt_time(q3 - q1):>10}"
              f"{base / median:>9.2f}x")
    print("(speed-up: to 1 process with 1 thread)")


if __name__ == "__main__":
    main()
