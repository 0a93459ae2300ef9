"""tinyflow at another commit against this checkout: the same tables, harness and reference loops, in turn.
    python benchmarks/against.py REV [--only W6] [--rounds 3] [--threads 2] [--repeats 15]

Why: a ratio to a reference moves with the harness (its reference loop, settle, import order) and with the
machine's state (this VM's memory bandwidth doubles and halves from minute to minute). "No worse than before"
is a claim about tinyflow alone; timing both versions with one harness, round after round, is how to check it.
REV's tinyflow is exported (git archive) and its C kernels built in a temporary folder; each round times the
tables with one version and then the other (alternating which goes first), each table in fresh processes of
both import orders as run.py does. It prints run.py's summary rows of those tables (the worse import order) per
round and their medians, and for a goal of run.py "no worse than REV" (W6's) whether the medians meet it.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference  # noqa: E402
import run  # noqa: E402
from harness import configure_threads, print_table  # noqa: E402
from tables import KEYS  # noqa: E402

REPO = os.path.dirname(HERE)


def commit_of(rev):
    """The short id of the commit `rev` names in this repository (None if it names none)."""
    found = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "--verify", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def build(commit, folder):
    """Export `commit` of this repository into `folder` and build its C kernels in place."""
    archive = subprocess.run(["git", "-C", REPO, "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=folder,
                           capture_output=True, text=True)
    if built.returncode:
        sys.exit(f"building {commit} failed:\n{built.stderr[-3000:]}")


def measure(keys, folder, args):
    """{(table, row, measure): (value, worse import order, [each order's value])} of the summary rows of `keys`,
    for `folder`'s tinyflow."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([folder] + ([before] if before else []))
    try:
        values = {}
        for key in keys:
            outcome = {order: run.spawn([key], order, args) for order in run.import_orders(args.orders)}
            for order, result in outcome.items():
                if "error" in result:
                    sys.exit(f"{key} ({order}) failed with {folder}:\n{result['error']}")
                where = result["process"]["versions"]["tinyflow"]
                if f"({folder})" not in where:  # the child imported another tinyflow than the one to time
                    sys.exit(f"{key} ({order}) timed tinyflow {where}, not the one in {folder}")
            rows = {order: {r["name"]: r for s in result["sections"] if s["key"] == key for r in s["rows"]}
                    for order, result in outcome.items()}
            for table, row, what, *_ in run.GOALS + run.INFORMATIVE:
                if table == key:
                    each = {o: rows[o].get(row, {}).get(what) for o in rows}
                    values[(key, row, what)] = (*run.worse(each, what), list(each.values()))
        return values
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def print_rounds(rounds, sides):
    """Print each summary row per round and side; {(side, row): median of the rounds}."""
    rows, medians = [], {}
    for line in rounds[0][next(iter(sides))]:
        table, row, what = line
        if all(r[name][line][0] is None for r in rounds for name in sides):
            continue  # a row of a process against.py does not run (W5's PyTorch timed alone)
        for name in sides:
            values = [r[name][line][0] for r in rounds]
            known = [v for v in values if v is not None]
            medians[name, line] = float(np.median(known)) if known else None
            rows.append([table, f"{row}, {what}", name] + [run.fmt_measure(v, what) for v in values] +
                        [run.fmt_measure(medians[name, line], what)])
    print_table("the summary rows of run.py, worse import order, each round (both versions timed in turn)",
                ["table", "row, measure", "tinyflow"] + [f"round {i + 1}" for i in range(len(rounds))] + ["median"],
                rows)
    return medians


def noise(rounds, table):
    """How far a candidate timed against its own second copy strays from 1.00x in `table` (median over the
    rounds, import orders and versions; 0 for tables without a second copy): two medians closer are level."""
    strays = [abs(value - 1) for r in rounds for values in r.values() for line, (_, _, each) in values.items()
              if line[0] == table and line[1].endswith("(second copy)") for value in each if value is not None]
    return float(np.median(strays)) if strays else 0.0


def print_verdicts(goals, medians, rounds, theirs, mine):
    """The verdict of each goal line (table, row, measure) "no worse than" the other version, from the medians."""
    for table, row, what in goals:
        line = (table, row, what)
        now, then = medians.get((mine, line)), medians.get((theirs, line))
        if now is None or then is None:
            print(f"{table} goal, {row}: no verdict, no value for {mine if now is None else theirs}")
            continue
        level = noise(rounds, table)
        worse_by = then / now - 1 if what == "triad" else now / then - 1  # as run.worse: a share of triad falls
        verdict = "met" if worse_by <= 0 else f"met (within the noise, {level:.0%})" if worse_by <= level \
            else "MISSED"
        print(f"{table} goal, {row} no worse than {theirs}: {run.fmt_measure(now, what)} against "
              f"{run.fmt_measure(then, what)} (medians of the rounds): {verdict}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the commit (or branch, tag) to time against this checkout")
    parser.add_argument("--only", default="W6", help=f"comma-separated tables out of {','.join(KEYS)} (default W6)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both versions in turn (default 3)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    args.warmup, args.orders = 2, "both"
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in keys if k not in KEYS]
    if unknown:
        parser.error(f"unknown table(s) {', '.join(unknown)}: choose from {', '.join(KEYS)}")
    configure_threads(args.threads)
    os.environ["TINYFLOW_BENCH_SKIP_OPENCL"] = "1"
    reference.ensure_built()
    folder = tempfile.mkdtemp(prefix="tinyflow-against-")
    try:
        commit = commit_of(args.rev)
        if commit is None:
            sys.exit(f"{args.rev} names no commit of {REPO}")
        # run.py's goals "no worse than" this commit, for the tables timed
        goals = [(table, row, what) for table, row, what, bound in run.GOALS
                 if table in keys and isinstance(bound, str) and commit_of(bound) == commit]
        build(commit, folder)
        theirs, mine = args.rev if args.rev == commit else f"{args.rev} ({commit})", "this checkout"
        sides = {theirs: folder, mine: REPO}
        print(f"reference loops: {reference.command()}; tables {', '.join(keys)}; {args.rounds} rounds; "
              f"machine load {run.load_text()} at the start")
        rounds = []
        for index in range(args.rounds):
            names = list(sides) if index % 2 == 0 else list(sides)[::-1]
            rounds.append({name: measure(keys, sides[name], args) for name in names})
            print(f"round {index + 1} done (load {run.load_text()})", flush=True)
        print_verdicts(goals, print_rounds(rounds, sides), rounds, theirs, mine)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
