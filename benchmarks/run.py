"""tinyflow against numpy by hand, PyTorch and hand-written C loops, under both import orders.

    python benchmarks/run.py [--threads 2] [--repeats 15] [--only W1a,W4,K] [--skip-opencl] [--quick]
                             [--orders both|torch-first|tinyflow-first]

Every table runs in two fresh processes: one imports torch before tinyflow, the other after
(which OpenMP runtime serves the process depends on it). Within a process the candidates are
timed in turn in every repeat (interleaved, in a random order each round, each timed call after untimed
calls of the same candidate for longer than OpenMP's threads spin); tables give medians, the
interquartile range and ratios of medians in that process. For tinyflow the worse of the two
orders counts. README.md explains the references and how to read the tables.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import THREAD_VARIABLES, configure_threads, fmt_time, load_average, print_table  # noqa: E402
import reference  # noqa: E402
from tables import CHILD_RESULT, KEYS, NO_TORCH, ORDERS, TORCH_ALONE  # noqa: E402

N = 10_000_000  # elements of the memory-bound tables: far beyond the caches, in --quick too
# issue 25's goals: (table, row, measure, bound); "ratio" must be <= bound, "triad" >= bound; a commit as the bound
# means "no worse than that commit", which only timing both versions in one harness checks (benchmarks/against.py)
ROUND_START = "e593f85"  # main when issue 25 was filed
GOALS = [
    ("W1a", "tinyflow c", "ratio", 0.25), ("W1b", "tinyflow c", "ratio", 0.11),
    ("W2a", "tinyflow c", "ratio", 1.3), ("W2b", "tinyflow c", "ratio", 1.1),
    ("W3", "tinyflow c", "ratio", 1.05), ("W4", "tinyflow c", "ratio", 1.3), ("W4", "tinyflow c", "triad", 0.65),
    ("W5", "tinyflow c", "ratio", 0.5), ("W6", "tinyflow c", "ratio", ROUND_START),
]
INFORMATIVE = [("W4", "fused C loop", "triad"), ("W4", "fused C loop (second copy)", "ratio"),
               ("W6", "fused C loop (second copy)", "ratio"),
               ("W5", "tinyflow c", "alone"), ("E1", "tinyflow c", "ratio"), ("E2", "tinyflow c", "ratio"),
               ("J1", "tfl.jit.to_static", "ratio"), ("J2", "tfl.jit.to_static", "ratio")]
REFERENCES = {"W1a": "numpy by hand", "W1b": "numpy by hand", "W2a": "numpy by hand", "W2b": "numpy by hand",
              "W3": "numpy by hand", "W4": "fused C loop", "W5": "pytorch eager", "W6": "fused C loop",
              "E1": "pytorch eager", "E2": "pytorch eager", "J1": "eager step", "J2": "eager step"}
TORCH_REFERENCED = [key for key, ref in REFERENCES.items() if ref == "pytorch eager"]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for tinyflow, OpenMP, BLAS and PyTorch alike (default 2)")
    parser.add_argument("--repeats", type=int, help="interleaved repeats per table (default 15; 5 with --quick)")
    parser.add_argument("--only", default="", help=f"comma-separated tables out of {','.join(KEYS)},FUSION")
    parser.add_argument("--skip-opencl", action="store_true", help="leave the OpenCL backend out")
    parser.add_argument("--quick", action="store_true",
                        help="for development (about a minute): 5 repeats, no OpenCL, every table of one import "
                             "order in one process")
    parser.add_argument("--orders", choices=("both", "torch-first", "tinyflow-first"), default="both")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # internal: tables to time in this process
    parser.add_argument("--child-order", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.repeats is None:
        args.repeats = 5 if args.quick else 15
    if args.quick:
        args.skip_opencl, args.warmup = True, 1
    wanted = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in KEYS + ("FUSION",)]
    if unknown:
        parser.error(f"unknown table(s) {', '.join(unknown)}: choose from {', '.join(KEYS)}, FUSION")
    args.keys = [k for k in KEYS if not wanted or k in wanted]
    args.fusion = not wanted or "FUSION" in wanted
    return args


def spawn(keys, order, args):
    """Run the tables `keys` in a new process importing in `order`; its result dict, or {'error': ...}."""
    command = [sys.executable, os.path.abspath(__file__), "--child", ",".join(keys), "--child-order", order,
               "--threads", str(args.threads), "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(CHILD_RESULT):
            return json.loads(line[len(CHILD_RESULT):])
    return {"order": order, "error": f"the process exited with {done.returncode}:\n{done.stderr[-3000:]}"}


def _short(path):
    return "site-packages/" + path.split("site-packages/", 1)[1] if "site-packages/" in path else path


def _describe(process, section):
    threads = ", ".join(f"{library} {count if count is not None else 'n/a'}"
                        for library, count in process["threads"].items() if library != "requested")
    start, end = section["load"]
    load = f"{start:.2f} -> {end:.2f}" if start is not None else "unavailable"
    return (f"OpenMP {', '.join(_short(p) for p in process['openmp'])}; threads: {threads}; "
            f"OpenMP or BLAS threads spin {process['spin'] * 1e3:.1f} ms of CPU after a region, so "
            f"{process['settle'] * 1e3:.0f} ms of untimed calls before each timed one; load {load} over the table's {section['seconds']:.0f} s")


def _cells(row, bandwidth):
    if row is None:
        return ["", "", ""] + (["", ""] if bandwidth else [])
    cells = [fmt_time(row["median"]), f"±{fmt_time(row['iqr'])}",
             f"{row['ratio']:.2f}x" if row["ratio"] is not None else "n/a"]
    if bandwidth:
        cells += [f"{row['gbps']:.1f}" if row["gbps"] else "", f"{row['triad']:.0%}" if row["triad"] else ""]
    return cells


def worse(values, measure):
    """(value, order) of the worse of {order: value}: the larger ratio, the smaller share of triad."""
    present = {o: v for o, v in values.items() if v is not None}
    if not present:
        return None, None
    pick = min if measure == "triad" else max
    order = pick(present, key=present.get)
    return present[order], order


def fmt_measure(value, measure):
    """A ratio or share of triad as the tables print it."""
    if value is None:
        return "n/a"
    return f"{value:.0%}" if measure == "triad" else f"{value:.2f}x"


def add_alone_ratios(per_order):
    """Rows of each import order get "alone": their time over PyTorch's reference timed in a process of its own."""
    if TORCH_ALONE not in per_order:
        return
    alone = {row["name"]: row for row in per_order[TORCH_ALONE][0]["rows"]}.get("pytorch eager")
    for order, (section, _) in per_order.items():
        for row in section["rows"]:
            row["alone"] = row["median"] / alone["median"] if alone and order != TORCH_ALONE else None


def print_section(per_order):
    """One table merged across the import orders: {order: (section, process)}."""
    section = next(iter(per_order.values()))[0]
    bandwidth = section["bandwidth"]
    print(f"\n{section['key']}: {section['title']} ({section['note']})")
    for order, (sec, process) in per_order.items():
        print(f"  {order}: {_describe(process, sec)}")
    names = []
    for sec, _ in per_order.values():
        names += [r["name"] for r in sec["rows"] if r["name"] not in names]
    by_name = {order: {r["name"]: r for r in sec["rows"]} for order, (sec, _) in per_order.items()}
    per = ["median", "IQR", "ratio"] + (["GB/s", "% triad"] if bandwidth else [])
    rows = [[name] + sum((_cells(by_name[o].get(name), bandwidth) for o in per_order), []) for name in names]
    print_table(None, ["candidate"] + per * len(per_order), rows,
                groups=[("", 1)] + [(f" {o} ", len(per)) for o in per_order])
    orders = [o for o in per_order if o != TORCH_ALONE]
    for focus in section["focus"]:
        lines = []
        for measure in ("ratio", "triad") if bandwidth else ("ratio", "alone"):
            values = {o: by_name[o].get(focus, {}).get(measure) for o in orders}
            value, order = worse(values, measure)
            if value is None:
                continue
            each = ", ".join(f"{fmt_measure(v, measure)} ({o})" for o, v in values.items())
            what = {"ratio": "ratio", "triad": "share of triad", "alone": "to pytorch eager timed alone"}[measure]
            lines.append(f"{what} {each}, worse {fmt_measure(value, measure)} ({order})")
        if lines:
            print(f"{focus}: " + "; ".join(lines))


def print_summary(results, orders, threads):
    """The goals table (worse import order counts) and the informative rows."""
    rows = []
    for key, row, measure, bound in GOALS + [(k, r, m, None) for k, r, m in INFORMATIVE]:
        values = {o: results.get(key, {}).get(o, {}).get(row, {}).get(measure) for o in orders}
        if all(v is None for v in values.values()):
            continue
        value, order = worse(values, measure)
        if bound is None:
            goal, verdict = "informative", ""
        elif isinstance(bound, str):
            goal, verdict = f"no worse than {bound}", f"against.py {bound}"
        elif measure == "ratio":
            goal, verdict = f"<= {bound}x", "met" if value <= bound else "MISSED"
        else:
            goal, verdict = f">= {bound:.0%}", "met" if value >= bound else "MISSED"
        what = {"ratio": f"{row} / {REFERENCES[key]}", "triad": f"{row}, share of triad",
                "alone": f"{row} / {REFERENCES[key]} timed alone"}[measure]
        rows.append([key, what] + [fmt_measure(values[o], measure) for o in orders] +
                    [f"{fmt_measure(value, measure)} ({order})", goal, verdict])
    if rows:
        print_table(f"Goals of issue 25 ({threads} threads, ratios within one process; the worse import order counts)",
                    ["table", "measure"] + list(orders) + ["worse", "goal", "verdict"], rows)


def parent(args):
    """Spawn the table processes, print merged tables, the compile cost and the summary."""
    began = time.perf_counter()
    orders = prepare(args)
    groups = ([args.keys] if args.keys else []) if args.quick else [[k] for k in args.keys]
    results, versions, failed = {}, None, False
    for index, group in enumerate(groups):
        spawned = orders + ((TORCH_ALONE,) if "torch first" in orders and set(group) & set(TORCH_REFERENCED) else ())
        turn = spawned[index % len(spawned):] + spawned[:index % len(spawned)]  # alternate which runs first
        outcome = {order: spawn(group if order != TORCH_ALONE else [k for k in group if k in TORCH_REFERENCED],
                                order, args) for order in turn}
        failed |= report(group, {order: outcome[order] for order in spawned}, results)
        versions = versions or next((r["process"]["versions"] for r in outcome.values() if "error" not in r), None)
    if args.fusion:
        from fusion_cost import measure
        print("\nfused-kernel compile cost (c backend, fresh cache folder, two fresh processes):")
        for name, seconds in measure().items():
            print(f"  {name:<45} {seconds * 1e3:8.2f} ms")
    print_summary(results, orders, args.threads)
    if versions:
        print("\nversions: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    print(f"run took {fmt_time(time.perf_counter() - began)}; 1-min load average at the end {load_text()}")
    return 1 if failed else 0


def prepare(args):
    """Set the threads for every process, build the reference loops, print the run's header; the import orders."""
    configure_threads(args.threads)
    if args.skip_opencl:
        os.environ["TINYFLOW_BENCH_SKIP_OPENCL"] = "1"
    reference.ensure_built()  # once per run; the processes load this build
    orders = import_orders(args.orders)
    print(f"--threads {args.threads}: {', '.join(THREAD_VARIABLES)} = {args.threads}, and "
          f"torch.set_num_threads({args.threads})")
    print(f"reference loops: {reference.command()}, built once for this run")
    if orders == (NO_TORCH,):
        print("PyTorch: not installed (pip install torch==2.13.0): no PyTorch rows, one import order")
    print(f"import orders: {', '.join(orders)} (a fresh process each); {args.repeats} interleaved repeats "
          f"per table, medians" + ("; --quick: one process per order for all tables, no OpenCL" if args.quick else ""))
    print(f"machine: {_cpu()}, {os.cpu_count()} cores; 1-min load average at the start {load_text()}")
    return orders


def import_orders(wanted):
    """The import orders to time ("both", "torch-first" or "tinyflow-first"); one without torch if it is missing."""
    if importlib.util.find_spec("torch") is None:
        return (NO_TORCH,)
    return ORDERS if wanted == "both" else (wanted.replace("-", " "),)


def report(group, outcome, results):
    """Print the tables of `group` from {order: child result}, adding their rows to `results`; True on a failure."""
    failed = False
    for order, result in outcome.items():
        if "error" in result:
            print(f"\n{', '.join(group)} ({order}) FAILED: {result['error']}")
            failed = True
    good = {order: result for order, result in outcome.items() if "error" not in result}
    keys = []
    for result in good.values():
        keys += [s["key"] for s in result["sections"] if s["key"] not in keys]
    for key in keys:
        per_order = {}
        for order, result in good.items():
            for section in result["sections"]:
                if section["key"] == key and "error" in section:
                    print(f"\n{key} ({order}) FAILED:\n{section['error']}")
                    failed = True
                elif section["key"] == key:
                    per_order[order] = (section, result["process"])
        if per_order:
            add_alone_ratios(per_order)
            print_section(per_order)
            for order, (section, _) in per_order.items():
                for row in section["rows"]:
                    results.setdefault(key, {}).setdefault(order, {})[row["name"]] = row
    return failed


def load_text():
    """The 1-minute load average, for the run's header and footer."""
    load = load_average()
    return f"{load:.2f}" if load is not None else "unavailable"


def _cpu():
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        import platform
        return platform.processor() or "unknown CPU"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        from tables import run_child
        run_child(args.child.split(","), args.child_order, args.threads, args.repeats, args.warmup, N)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
