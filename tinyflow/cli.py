"""The `tinyflow` command: `info`, `demo boston`, `launch -n 2 script.py`, `board runs/`, `cache info|clear`,
`onnx show model.onnx [-o graph.svg]`, `assignments make-student OUT/`, `grade assignmentN [path]`."""
import argparse
import json
import pathlib
import platform
import sys

import numpy as np


def info():
    """Print the version, the backends this machine can run, threads and build flags."""
    import tinyflow as tfl
    from tinyflow.backends import native
    print(f"tinyflow {tfl.__version__}  (Python {platform.python_version()}, numpy {np.__version__})")
    print(f"backends available: {', '.join(tfl.backends.available())}  (default: {tfl.backends.available()[0]})")
    if native.is_built():
        threads = native.thread_report()
        print(f"C kernel library: built, {threads['tinyflow']['threads']} thread(s) on "
              f"{threads['tinyflow']['runtime']} (TINYFLOW_NUM_THREADS, else OMP_NUM_THREADS)")
        print(f"  matrix products: {threads['tinyflow']['gemm']} (TINYFLOW_GEMM=tinyflow: the hand-written kernel)")
        print(f"  build flags: {native.build_flags()}")
        for other in threads["others"]:
            print(f"  also in this process: {other.get('user_api')} {other.get('internal_api') or ''} "
                  f"{other.get('version') or ''}, {other.get('num_threads', '?')} thread(s): {other['filepath']}")
        warning = oversubscription(threads)
        if warning:
            print(f"  {warning}")
    else:
        print(f"C kernel library: not built: {native.why_not_built()}")
    from tinyflow.backends import opencl_runtime
    found = opencl_runtime.devices()
    if found:
        print("OpenCL devices (choose with backend='opencl:N' or TINYFLOW_OPENCL_DEVICE=N):")
        for index, platform_name, device_name, device in found:
            fp64 = "float64" if "cl_khr_fp64" in device.extensions else "float32 only"
            broken = opencl_runtime.build_error(device)
            state = f"unusable, {broken}" if broken else f"{device.max_compute_units} compute units, {fp64}"
            print(f"  {index}: {platform_name} / {device_name} ({state})")
        if opencl_runtime.why_unavailable():
            print(f"  OpenCL backend not available: {opencl_runtime.why_unavailable()}")
    else:
        print(f"OpenCL: not available: {opencl_runtime.why_unavailable()}")
    try:
        import onnx
        print(f"ONNX: onnx {onnx.__version__} (import: opsets 1-{onnx.defs.onnx_opset_version()}, "
              f"{len(tfl.onnx.rules.IMPORTS)} ops; export: opset {tfl.onnx.OPSET})")
    except ImportError:
        print("ONNX: not available: the onnx package is not installed (pip install onnx)")
    try:
        print(f"MPI: {tfl.distributed.library_version()}  (tinyflow launch -n N script.py)")
    except tfl.TinyflowError as err:
        print(f"MPI: not available: {err}")


def oversubscription(threads):
    """A warning when the thread pools in this process (tinyflow's, BLAS, OpenMP) hold more threads than the
    process has cores, else ''. Their idle threads spin for a while after each call, so two pools sized for
    every core slow each other down (a kernel waits for a worker the OS gave to another pool's spinning one)."""
    from tinyflow.distributed.mpi import usable_cores
    cores = usable_cores()
    pools = [("tinyflow", threads["tinyflow"]["threads"])] + [
        (other.get("internal_api") or other.get("user_api"), other.get("num_threads") or 0) for other in threads["others"]]
    total = sum(count for _, count in pools)
    if total <= cores:
        return ""
    spelled = " + ".join(f"{name} {count}" for name, count in pools)
    return (f"oversubscribed: {total} pool threads ({spelled}) for {cores} core(s): the pools slow each other down; "
            "give BLAS one thread (OPENBLAS_NUM_THREADS=1, set before numpy is imported) or lower "
            "TINYFLOW_NUM_THREADS so that the pools add up to the cores")


def _human(size):
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024


def _files(n):
    return f"{n} file{'s' * (n != 1)}"


def cache(action="info"):
    """`tinyflow cache info`: where the fused-kernel cache is and what it holds; `clear`: empty it."""
    from tinyflow.backends import compiler as disk_cache
    if action == "clear":
        files, size, failures = disk_cache.clear()
        print(f"removed {_files(files)} ({_human(size)}) from {disk_cache.folder()}")
        for failure in failures:
            print(f"could not remove {failure}", file=sys.stderr)
        return 1 if failures else 0
    report = disk_cache.info()
    print(f"kernel cache: {report['folder']}" + ("" if report["exists"] else "  (empty: nothing compiled yet)"))
    others = report["kernels"] - report["this_machine"]
    print(f"  {report['kernels']} kernel{'s' * (report['kernels'] != 1)}, {_human(report['kernel_bytes'])}"
          + (f" ({report['this_machine']} for this machine, {others} for another CPU or compiler)" if others else ""))
    for part, what in (("quarantined", "damaged files moved aside"),
                       ("other", "unfinished builds, libraries without an entry")):
        if report[part]:
            print(f"  {part}: {_files(report[part])}, {_human(report[part + '_bytes'])} ({what})")
    total = report["kernel_bytes"] + report["quarantined_bytes"] + report["other_bytes"]
    print(f"  total: {_human(total)} in {_files(2 * report['kernels'] + report['quarantined'] + report['other'])}")
    print(f"  this machine: {report['cpu']}; compiler {report['compiler']}")
    print("  `tinyflow cache clear` empties it; TINYFLOW_CACHE_DIR moves it")
    return 0


def main(argv=None):
    """Entry point of the `tinyflow` console script."""
    parser = argparse.ArgumentParser(prog="tinyflow", description="tinyflow command line")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="show version, backends, threads and build flags")
    demo = sub.add_parser("demo", help="train a demo model: boston (regression) or digits (convnet)")
    demo.add_argument("name", choices=["boston", "digits"], help="which demo")
    demo.add_argument("--epochs", type=int, help="default: 200 (boston), 30 (digits)")
    demo.add_argument("--batch-size", type=int, help="default: 32 (boston), 64 (digits)")
    demo.add_argument("--backend", help="c or numpy (default: the best available)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", help="folder for the pictures (default: <name>-demo)")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")
    demo.add_argument("--export", metavar="DIR", help="boston: also write the trained MLP (tfl.jit and ONNX) into DIR")
    launch = sub.add_parser("launch", help="run a script in N processes under mpirun (data parallelism)")
    launch.add_argument("-n", "--np", type=int, required=True, help="number of processes")
    launch.add_argument("program", nargs=argparse.REMAINDER, help="script.py [args] (or -- -m package.module [args])")
    cache_parser = sub.add_parser("cache", help="the compiled fused-kernel cache: info (size, location) or clear")
    cache_parser.add_argument("action", nargs="?", default="info", choices=["info", "clear"])
    board = sub.add_parser("board", help="serve the curves Model.fit(log_dir=...) writes, live, in the browser")
    board.add_argument("logdir", help="the folder holding the runs (each fit's log_dir is a folder inside it)")
    board.add_argument("--port", type=int, help="default: 6006, or the next free port after it; 0: any free port")
    board.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)")
    assignments = sub.add_parser("assignments", help="teacher's tools for the assignments")
    tools = assignments.add_subparsers(dest="tool", required=True)
    make = tools.add_parser("make-student", help="write the student version (solutions replaced by stubs)")
    make.add_argument("out", help="new folder for the student version")
    make.add_argument("--source", help="the solutions folder (default: assignments/ of this checkout)")
    make.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    grade = sub.add_parser("grade", help="run an assignment's tests on a student's folder, score each test")
    grade.add_argument("assignment", help="assignmentN, or all")
    grade.add_argument("path", nargs="?", default=".", help="the student's folder (default: the current one)")
    grade.add_argument("--source", help="the teacher's assignments folder holding the official tests")
    grade.add_argument("--json", help="the JSON report's file (default: grade-<assignment>.json; '-': print it)")
    onnx_tools = sub.add_parser("onnx", help="look inside an ONNX model").add_subparsers(dest="tool", required=True)
    show = onnx_tools.add_parser("show", help="print a model's inputs, outputs, op counts, parameters (-o: draw it)")
    show.add_argument("model", help="the .onnx file")
    show.add_argument("-o", "--output", help="write the picture of the graph here (.svg, .png, .pdf)")
    args = parser.parse_args(argv)
    if args.command == "demo" and args.export and args.name != "boston":
        parser.error("--export is available for the boston demo")
    if args.command == "launch":  # its errors reach the caller
        from tinyflow.distributed.mpi import launch as run_launch
        return run_launch(args.np, args.program)
    from tinyflow.errors import TinyflowError
    try:
        return _run(args)
    except TinyflowError as err:  # a bad file, folder or port: the message, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 1 if args.command == "onnx" else 2


def _run(args):
    """Run the parsed command; returns the exit status."""
    import tinyflow as tfl
    from tinyflow import demos, teaching
    if args.command == "info":
        info()
    elif args.command == "cache":
        return cache(args.action)
    elif args.command == "demo":
        options = {k: v for k in ("epochs", "batch_size", "out", "export") if (v := getattr(args, k)) is not None}
        demo = getattr(demos, args.name)  # demos.boston or demos.digits
        demo(backend=args.backend, seed=args.seed, verbose=0 if args.quiet else 1, **options)
    elif args.command == "board":
        from tinyflow.board.server import main as serve_board
        return serve_board(args.logdir, host=args.host, port=args.port)
    elif args.command == "onnx":  # import the model, print its summary, draw it
        prog = tfl.onnx.load(args.model, graph=tfl.Graph())
        print(f"{args.model}: {prog.summary()}")
        if args.output:  # a VizError (no `dot`, a bad suffix) ends it with status 1, after the summary
            print(f"graph drawn to {tfl.viz.render(list(prog.outputs.values()), args.output)}")
    elif args.command == "assignments":
        written = teaching.make_student(args.out, source=args.source or teaching.SOURCE, force=args.force)
        print(f"wrote the student version ({len(written)} files) to {args.out}; hand it out, then grade with "
              f"`tinyflow grade assignmentN {args.out}`")
    else:  # grade: the score of each official test, and the JSON report
        source = args.source or teaching.SOURCE
        if not args.source and not (teaching.SOURCE / "tests").is_dir():
            source = args.path  # tinyflow installed without its checkout: a student grades with the handed-out tests
        report = teaching.grade(args.assignment, args.path, source=source)
        if args.json == "-":
            print(json.dumps(report, indent=2))
            return 0
        print(teaching.format_report(report))
        path = pathlib.Path(args.json or f"grade-{args.assignment}.json")
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"JSON report written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
