"""What the collective contract check costs: tfl.distributed.all_reduce with and without it, and raw mpi4py.

    python benchmarks/collective_contracts.py [--processes 2] [--repeats 15]

Launches itself under `tinyflow launch`. For each message size, three candidates are timed in
turn (a random order each round, several calls back to back per sample): mpi4py's Allreduce, tinyflow's
all_reduce as shipped (the contract check, an allgather of 32 bytes per rank, then the payload),
and tinyflow's all_reduce with the check switched off in this process only. The last row is a
data-parallel training step (an MLP on 64 rows, DistributedOptimizer) with and without the check.
A collective is as slow as its slowest rank: each sample is the maximum over ranks.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

SIZES = [40, 4 << 10, 256 << 10, 4 << 20]  # bytes of float64


def worker(repeats):
    """Rank 0 prints {row: {candidate: [seconds per call]}} as JSON."""
    import tinyflow as tfl
    from harness import interleaved
    from tinyflow.distributed import collectives
    d = tfl.distributed
    d.init(timeout=300)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    checked = collectives.agree

    def unchecked(*args, **kwargs):
        return None

    def without_check(fn):
        def run():
            collectives.agree = unchecked
            try:
                fn()
            finally:
                collectives.agree = checked
        return run

    results = {}
    for size in SIZES:
        x = np.ones(size // 8)
        calls = max(1, min(200, (1 << 20) // size))

        def shipped():
            for _ in range(calls):
                d.all_reduce(x)
        candidates = {"mpi4py Allreduce": lambda: [comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM) for _ in range(calls)],
                      "tinyflow all_reduce": shipped, "tinyflow, check off": without_check(shipped)}
        comm.Barrier()
        times = interleaved(candidates, repeats=repeats, warmup=2, settle=0)
        results[f"all_reduce {size} B"] = {k: (d.all_reduce(t, "max") / calls).tolist() for k, t in times.items()}
    tfl.set_seed(0)
    net = tfl.nn.Sequential(tfl.nn.Linear(32, 64, act="relu"), tfl.nn.Linear(64, 10))
    x = tfl.Placeholder((None, 32), name="x")
    labels = tfl.Placeholder((None,), "int64", name="labels")
    loss = tfl.nn.softmax_cross_entropy(net(x), labels)
    train = d.DistributedOptimizer(tfl.optim.SGD(0.01)).minimize(loss)
    sess = tfl.Session()
    d.broadcast_variables()
    rng = np.random.default_rng(d.rank())
    feed = {x: rng.normal(size=(64, 32)).astype(np.float32), labels: rng.integers(0, 10, 64)}

    def steps():
        for _ in range(20):
            sess.run(train, feed)
    comm.Barrier()
    times = interleaved({"tinyflow step": steps, "tinyflow step, check off": without_check(steps)},
                        repeats=repeats, warmup=2, settle=0)
    results["MLP training step"] = {k: (d.all_reduce(t, "max") / 20).tolist() for k, t in times.items()}
    if d.rank() == 0:
        print("RESULTS " + json.dumps(results), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.repeats)
    from harness import load_note, summary
    from tinyflow.distributed.mpi import command, environment
    env = environment(args.processes)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    cmd = command(args.processes, [str(Path(__file__).resolve()), "--worker", "--repeats", str(args.repeats)])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    results = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULTS "))[8:])
    print(f"{args.processes} processes, {load_note()}; median per call (interquartile range)")
    for row, candidates in results.items():
        medians = {name: summary(np.array(t))[0] for name, t in candidates.items()}
        cells = [f"{name} {medians[name] * 1e6:8.1f} µs (±{summary(np.array(t))[1] * 1e6:.1f})"
                 for name, t in candidates.items()]
        base = medians.get("tinyflow, check off", medians.get("tinyflow step, check off"))
        shipped = medians.get("tinyflow all_reduce", medians.get("tinyflow step"))
        print(f"{row:<22} " + " | ".join(cells) + f" | check costs {(shipped - base) * 1e6:+.1f} µs")


if __name__ == "__main__":
    main()
