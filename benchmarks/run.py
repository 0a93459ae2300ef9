"""tinyflow against numpy by hand and PyTorch eager on six workloads, side by side in one run.

    python benchmarks/run.py [--threads 2] [--repeats 15] [--only W1,W4] [--skip-opencl]

Each table times its candidates in turn within every repeat (interleaved) and reports medians,
the interquartile range, and ratios of medians. Targets are checked on the default backend (c).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import configure_threads, fmt_time, interleaved, load_note, print_table, summary  # noqa: E402

# (key, title, factory name, args, reference candidate, target ratio for tinyflow c); a sub-millisecond
# unit of work is timed as INNER[key] consecutive units per sample (times are per unit), so that
# one thread wake-up after switching candidates does not decide the result
INNER = {"W1": 5, "W1b": 5, "W2": 3, "W2b": 10, "E1": 5, "E2": 3}
# pocl's worker threads stay busy after an OpenCL candidate and slow whatever runs next, so the
# OpenCL rows are measured in their own interleaving, against the same reference
SEPARATE = ("tinyflow opencl",)
WORKLOADS = [
    ("W1", "chain of 1,000 adds on 4x4, forward", "w1_chain", (False,), "numpy by hand", 2.5),
    ("W1b", "chain of 1,000 adds on 4x4, forward + backward", "w1_chain", (True,), "numpy by hand", 2.5),
    ("W2", "Boston MLP 13-64-64-1 (relu, MSE, Adam), one epoch at batch 32", "w2_boston", (False,),
     "numpy by hand", 2.0),
    ("W2b", "Boston MLP 13-64-64-1, one full-batch step", "w2_boston", (True,), "numpy by hand", 1.5),
    ("W3", "MLP 784-1024-1024-10 (softmax cross-entropy, SGD), one step at batch 256", "w3_wide_mlp", (),
     "numpy by hand", 1.05),
    ("W4", "c * sigmoid(a*x + b) over 10M floats", "w4_fused_sigmoid", (), "fused C loop", 4.0),
    ("W5", "digits convnet (conv 1->8 3x3, relu, max-pool 2, linear 128->10), one epoch at batch 64, Adam",
     "w5_convnet", (), "pytorch eager", 1.0),
    ("W6", "Adam step over 10M parameters", "w6_adam", (), "fused C loop", 1.2),
    ("E1", "eager: chain of 1,000 adds on 4x4, forward + backward (tinyflow rows: eager Tensors)",
     "e1_chain_eager", (), "pytorch eager", 1.0),
    ("E2", "eager: Boston MLP 13-64-64-1 (relu, MSE, Adam), one epoch at batch 32 (tinyflow rows: eager)",
     "e2_boston_eager", (), "pytorch eager", 1.0),
]

# issue 15's goals for the graph optimiser (ratios of tinyflow c to the same references)
GOALS_OPTIMISER = {"W1": 0.5, "W1b": 0.3, "W2": 1.5, "W4": 1.3, "W5": 0.7}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated workload keys, e.g. W1,W4 (J1,J2: to_static)")
    parser.add_argument("--skip-opencl", action="store_true", help="leave the OpenCL backend out")
    args = parser.parse_args()
    configure_threads(args.threads)
    if args.skip_opencl:
        os.environ["TINYFLOW_BENCH_SKIP_OPENCL"] = "1"

    import numpy as np
    import workloads
    import tinyflow as tfl
    if args.skip_opencl:
        workloads.tinyflow_backends = lambda: [b for b in tfl.backends.available() if b != "opencl"]
    torch_note = "not installed (pip install torch==2.13.0)"
    if workloads.torch is not None:
        workloads.torch.set_num_threads(args.threads)
        torch_note = f"{workloads.torch.__version__}, {workloads.torch.get_num_threads()} threads"
    print(f"tinyflow {tfl.__version__}, numpy {np.__version__}, PyTorch {torch_note}; {args.threads} threads for "
          f"OpenMP and BLAS; {args.repeats} interleaved repeats per table; medians")
    print(f"machine: {load_note()}")

    results = []
    wanted = {k.strip() for k in args.only.split(",") if k.strip()}
    for key, title, factory, factory_args, reference, target in WORKLOADS:
        if wanted and key not in wanted:
            continue
        candidates = getattr(workloads, factory)(*factory_args)
        inner = INNER.get(key, 1)
        if inner > 1:
            candidates = {name: (lambda fn: lambda: [fn() for _ in range(inner)])(fn) for name, fn in candidates.items()}
        if "pytorch eager" not in candidates:
            print(f"\n{key}: PyTorch rows: not installed (pip install torch==2.13.0)")
        separate = {name: candidates.pop(name) for name in SEPARATE if name in candidates}
        times = interleaved(candidates, repeats=args.repeats, warmup=2)
        stats = {name: tuple(v / inner for v in summary(t)) for name, t in times.items()}
        for name, fn in separate.items():  # ratio to the reference as measured alongside it
            pair = interleaved({reference: candidates[reference], name: fn}, repeats=max(args.repeats // 3, 3), warmup=1)
            scale = stats[reference][0] / (summary(pair[reference])[0] / inner)
            stats[name + " (separately)"] = tuple(v / inner * scale for v in summary(pair[name]))
        ref = stats.get(reference, (np.nan, 0))[0]
        rows = []
        for name, (median, iqr) in stats.items():
            rows.append([name, fmt_time(median), f"±{fmt_time(iqr)}", f"{median / ref:.2f}x" if ref == ref else "n/a"])
        unit = f", per unit of {inner} timed back to back" if inner > 1 else ""
        print_table(f"{key}: {title} (ratio to {reference}{unit})", ["candidate", "median", "IQR", "ratio"], rows)
        if "tinyflow c" in stats and ref == ref:
            ratio = stats["tinyflow c"][0] / ref
            verdict = "meets" if ratio <= target else "MISSES"
            print(f"target: tinyflow c <= {target}x {reference}: {ratio:.2f}x, {verdict} it")
            results.append((key, ratio, target))
    if results:
        print("\nsummary: " + "; ".join(f"{k} {r:.2f}x (target {t}x)" for k, r, t in results))
    if not wanted or wanted & {"J1", "J2"}:  # static vs dynamic training steps (tfl.jit.to_static)
        import jit_static
        jit_static.report(args.repeats)
    # graph optimiser (issue 15): its own goals on the same measurements, and what compiling costs
    goals = {k: g for k, g in GOALS_OPTIMISER.items() if any(k == key for key, _, _ in results)}
    if goals:
        print("optimiser goals: " + "; ".join(f"{k} {r:.2f}x (goal {goals[k]}x, {'met' if r <= goals[k] else 'MISSED'})"
                                              for k, r, _ in results if k in goals))
    if not wanted or "FUSION" in wanted:
        from fusion_cost import measure
        print("\nfused-kernel compile cost (c backend, fresh cache folder):")
        for name, seconds in measure().items():
            print(f"  {name:<45} {seconds * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
