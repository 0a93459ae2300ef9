"""Compiling generated C with cffi at run time, and the disk cache of the compiled kernels (`tinyflow cache`).

`load` finds a kernel in memory, else in the disk cache, else compiles it in a private temporary folder inside the cache
and renames it into place, so two processes compiling the same kernel both succeed. An unwritable cache: the kernel is
compiled for this process only; no working compiler: `load` returns None and callers use numpy (each with one warning).
Per kernel, `tf_fused_<key>-<sha256 prefix><EXT_SUFFIX>` is the library named by its bytes (never rewritten) and
`tf_fused_<key>.json` its entry (that file's name, size and sha256, and what built it); quarantine/ holds the files that
failed verification. <key> hashes all the library depends on (source, compiler, flags, CPU, cffi, Python ABI), so a
folder shared by machines never gives one CPU a kernel built for another. A writer renames the library into place, then
the entry; a reader checks the library's size and sha256 against its entry before loading it: loading (dlopen) a
truncated library kills the process with SIGBUS (a damaged file is moved aside with one warning)."""
import contextlib
import functools
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings

from . import native

SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
QUARANTINE = "quarantine"
ENTRY_FORMAT = 2  # part of the key: a cache written by another layout is never read
# the fields of /proc/cpuinfo naming a CPU and what it can execute (not its clock, core number or microcode)
CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags",  # x86
              "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "Features",  # ARM
              "cpu", "isa", "uarch")  # POWER, RISC-V
# environment variables the compiler driver (distutils, under cffi) reads besides $CC
COMPILER_VARIABLES = ("CFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED")
DEFAULT_FLAGS = ["-O3", "-std=gnu99", "-fno-strict-aliasing", "-fno-trapping-math", "-fno-math-errno", "-fopenmp-simd"]

# what happened in this process: the tests and the benchmark's compile-cost report read it
# (load_seconds includes verifying the file; uncached: compiled for this process only; quarantined: files set aside)
STATS = {"compiled": 0, "loaded_from_disk": 0, "compile_seconds": 0.0, "load_seconds": 0.0, "failed": 0,
         "uncached": 0, "quarantined": 0}
_loaded = {}  # kernel key -> module, or None: it cannot be compiled
_pending = set()  # Futures of the work on the background thread not done yet
_lock = threading.Lock()
_warned = []


class FusionWarning(UserWarning):
    """Fused kernels run with numpy because they could not be compiled."""


class KernelCacheWarning(UserWarning):
    """The kernel cache had a damaged file (set aside, kernel rebuilt) or cannot be written (kernels uncached)."""


def compile_flags():
    """The C library's flags (ckernels/build_ckernels.py) minus sanitizers, plus -march=native: a kernel compiled
    at run time runs on the machine that compiles it (the CPU is part of the cache key)."""
    flags = [f for f in native.build_flags().split() if not f.startswith("-fsanitize")] or list(DEFAULT_FLAGS)
    if "-O1" in flags:  # a sanitizer build asks for -O1; kernels here are for speed
        flags.remove("-O1")
    if not any(f.startswith(("-march=", "-mcpu=")) for f in flags) and _accepts_native():
        flags.append("-march=native")
    # no a*b+c contracted into one FMA rounding: a fused kernel computes what its ops compute one by one
    return flags + ([] if "-ffp-contract=off" in flags else ["-ffp-contract=off"])


@functools.lru_cache(maxsize=None)
def _accepts_native():
    """Whether the C compiler takes -march=native (GCC and Clang on x86-64 and ARM do)."""
    compiler = sysconfig.get_config_var("CC") or "cc"
    try:
        result = subprocess.run(compiler.split() + ["-march=native", "-x", "c", "-c", "-o", os.devnull, "-"],
                                input="int tinyflow_probe;\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def load(source, cdef):
    """The cffi module (.ffi, .lib) of this C source: from memory, disk, or compiled now, else None."""
    flags = compile_flags()
    key = kernel_key(source, flags)
    module = _loaded.get(key)
    if module is not None:
        return module
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load_or_build(f"tf_fused_{key}", source, cdef, flags)
        return _loaded[key]


def in_background(work):
    """The Future of work() run on the one background thread (kernels are generated and compiled there one at a
    time: the runs keep the other cores); a run hands its compile over and goes on with what it ran before."""
    from concurrent.futures import Future
    future = Future()
    _pending.add(future)
    future.add_done_callback(_pending.discard)
    _background_jobs().put((future, work))
    return future


@functools.lru_cache(maxsize=None)
def _background_jobs():
    """The queue of the background thread, a daemon: a program that ends does not wait for the compiles it started
    (a ThreadPoolExecutor's thread would be joined at exit, after every queued compile)."""
    import queue
    jobs = queue.SimpleQueue()

    def serve():
        while True:
            future, work = jobs.get()
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 - the run that asks for the kernel sees it
                future.set_exception(exc)
    threading.Thread(target=serve, name="tinyflow-compile", daemon=True).start()
    return jobs


def wait_for_compiles():
    """Block until the background work handed over so far is done (tests, and benchmarks that time warm runs)."""
    for future in list(_pending):
        future.result()


def _load_or_build(name, source, cdef, flags):
    start = time.perf_counter()
    try:
        path = lookup(name)
        if path is not None:
            try:
                module = native.import_file(name, path)
            except Exception as exc:  # noqa: BLE001 - sound bytes that do not load (a library is gone)
                raise set_aside([path, entry_path(name)], f"it does not load ({type(exc).__name__}: {exc})") from None
            STATS["loaded_from_disk"] += 1
            STATS["load_seconds"] += time.perf_counter() - start
            return module
    except DamagedEntry as damaged:
        STATS["quarantined"] += 1
        warnings.warn(str(damaged), KernelCacheWarning, stacklevel=4)
    try:
        os.makedirs(folder(), exist_ok=True)
        return _build(name, source, cdef, flags, folder())
    except Exception as exc:  # noqa: BLE001 - no compiler, or a cache we cannot write: try without the cache
        cache_error = f"{type(exc).__name__}: {exc}"
    try:
        module = _build(name, source, cdef, flags, None)
    except Exception as exc:  # noqa: BLE001 - no compiler, or no space anywhere: numpy computes instead
        STATS["failed"] += 1
        _warn_once("numpy", f"tinyflow could not compile a fused kernel ({type(exc).__name__}: {exc}); fused ops "
                   "run with numpy instead (correct, but slower). Check that a C compiler (gcc) is installed and "
                   "the disk is not full, or turn fusion off with tfl.Session(optimize={'fusion': False}).",
                   FusionWarning)
        return None
    STATS["uncached"] += 1
    _warn_once("uncached", f"tinyflow cannot write its kernel cache {folder()} ({cache_error}); fused kernels "
               "are compiled for this process only (each new process compiles them again). Free some space, make "
               "the folder writable, or set TINYFLOW_CACHE_DIR to a writable folder.", KernelCacheWarning)
    return module


def _warn_once(kind, message, category):
    if kind not in _warned:
        _warned.append(kind)
        warnings.warn(message, category, stacklevel=5)


# A child process: cffi compiles by changing the process's working directory and environment, which every other
# thread here (and each program they start) would see. At nice 10 (gcc inherits it) the runs come first: on two cores,
# warm ResNet-18 runs at batch 8 during the 1,000-add chain's compile took 430 ms (median) against 260-310 after it;
# niced, 326-353 ms against 305-344, the compile taking 8.7 s instead of 2.5 while they kept the cores busy.
_COMPILE = """
import json, os, sys
if hasattr(os, "nice"):
    os.nice(10)
from cffi import FFI
spec = json.load(sys.stdin)
builder = FFI()
builder.cdef(spec["cdef"])
builder.set_source(spec["name"], spec["source"], extra_compile_args=spec["flags"], extra_link_args=spec["link"])
print(builder.compile(tmpdir=spec["folder"], verbose=False))
"""


class CompileError(Exception):
    """The compiler process failed; the message is the end of what it printed."""


def _build(name, source, cdef, flags, cache):
    """Compile in a child process in a private temporary folder (inside `cache`, then stored there with atomic
    renames; or in the system's temporary space, deleted once loaded: a loaded library stays mapped)."""
    scratch = tempfile.mkdtemp(prefix=f".{name}-" if cache else f"tinyflow-{name}-", dir=cache)
    try:
        start = time.perf_counter()
        spec = dict(name=name, source=source, cdef=cdef, flags=flags, folder=scratch,
                    link=["-fopenmp"] if "-fopenmp" in flags else [])
        done = subprocess.run([sys.executable, "-c", _COMPILE], input=json.dumps(spec), capture_output=True,
                              text=True)
        if done.returncode:
            raise CompileError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                               f"the compiler process ended with status {done.returncode}")
        path = done.stdout.strip().splitlines()[-1]
        STATS["compiled"] += 1
        STATS["compile_seconds"] += time.perf_counter() - start
        if cache:
            path = store(name, path, built_by(flags))
        return native.import_file(name, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------- the disk cache: its folder and key
class DamagedEntry(Exception):
    """A cached file failed verification; the message names it and says where it went."""


def folder():
    """Where compiled kernels live (created by the first compile that can write there)."""
    root = os.environ.get("TINYFLOW_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tinyflow")
    return os.path.join(root, "kernels")


def compiler_identity():
    """The C compiler cffi runs ($CC, else Python's), as its resolved path and first --version line."""
    return _compiler_identity(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")


@functools.lru_cache(maxsize=None)
def _compiler_identity(command):
    words = shlex.split(command) or ["cc"]
    path = shutil.which(words[0])
    if path is None:
        return f"{command} (not found)"
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        lines = (done.stdout or done.stderr).strip().splitlines()
        version = lines[0] if lines else f"--version gave status {done.returncode}"
    except (OSError, subprocess.SubprocessError) as exc:
        version = f"no version ({type(exc).__name__})"
    return f"{' '.join([os.path.realpath(path)] + words[1:])}: {version}"


@functools.lru_cache(maxsize=None)
def cpu_identity():
    """(the CPU's model name, a digest of its model and feature flags): kernels are built for one CPU."""
    fields = {}
    # (not Linux: what Python knows)
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
        for line in info:
            if not line.strip():
                break  # the first processor's block is enough
            name, _, value = line.partition(":")
            if name.strip() in CPU_FIELDS:
                fields[name.strip()] = " ".join(value.split())
    model = fields.get("model name") or fields.get("cpu") or platform.processor() or platform.machine()
    described = [platform.machine(), platform.processor(), model] + [f"{k}={v}" for k, v in sorted(fields.items())]
    return model, hashlib.sha256("\n".join(described).encode()).hexdigest()[:16]


def kernel_key(source, flags):
    """The hash naming a kernel: its source, flags, compiler, CPU, cffi version and Python ABI."""
    import cffi
    parts = [f"format {ENTRY_FORMAT}", source, " ".join(flags), compiler_identity(), cpu_identity()[1],
             cffi.__version__, SUFFIX] + [f"{v}={os.environ.get(v, '')}" for v in COMPILER_VARIABLES]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def built_by(flags):
    """What a new entry records about how its library was built (shown by `tinyflow cache info`)."""
    import cffi
    model, cpu = cpu_identity()
    return {"compiler": compiler_identity(), "flags": list(flags), "cpu": model, "cpu_id": cpu,
            "python_abi": SUFFIX, "cffi": cffi.__version__}


# ---------------------------------------------------------------- reading and writing entries
def entry_path(name):
    """Where kernel `name`'s entry (its library's name, size and sha256) is."""
    return os.path.join(folder(), name + ".json")


def lookup(name):
    """The path of kernel `name`'s verified library; None when not cached. DamagedEntry if it failed."""
    entry = entry_path(name)
    try:
        with open(entry, "rb") as f:
            raw = f.read(1 << 16)
    except OSError:  # absent, or unreadable: compiled again (and stored if the folder allows)
        return None
    try:
        record = json.loads(raw)
        file, size, digest = record["file"], record["size"], record["sha256"]
        named = re.fullmatch(re.escape(name) + r"-([0-9a-f]{16})" + re.escape(SUFFIX), file)
        if not (named and isinstance(size, int) and size >= 0 and re.fullmatch(r"[0-9a-f]{64}", digest)
                and digest.startswith(named.group(1))):
            raise ValueError("fields out of range")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise set_aside([entry], f"its entry is not a valid record of this kernel ({exc})") from None
    path = os.path.join(folder(), file)
    try:
        with open(path, "rb") as f:
            actual = os.fstat(f.fileno()).st_size
            data = f.read(size) if actual == size else b""
    except FileNotFoundError:  # cleared meanwhile (tinyflow cache clear): compiled again
        return None
    except OSError as exc:
        raise set_aside([path, entry], f"it cannot be read ({exc})") from None
    if actual != size or len(data) != size:
        raise set_aside([path, entry], f"its entry says {size} bytes, the file has {actual}")
    if hashlib.sha256(data).hexdigest() != digest:
        raise set_aside([path, entry], "its sha256 differs from its entry's (the bytes are damaged)")
    return path


def store(name, built, description):
    """Move the library just built at `built` (inside folder()) into place and record its entry; its path."""
    with open(built, "rb") as f:
        data = f.read()
        os.fsync(f.fileno())  # the bytes reach the disk before an entry vouches for them
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(folder(), f"{name}-{digest[:16]}{SUFFIX}")
    os.replace(built, path)
    entry = dict(file=os.path.basename(path), size=len(data), sha256=digest,
                 created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **description)
    _write_atomically(entry_path(name), json.dumps(entry, indent=1).encode())
    return path


def _write_atomically(path, data):
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def set_aside(paths, reason):
    """Move damaged cache files to quarantine/ (as far as the folder allows); the DamagedEntry to report."""
    target = os.path.join(folder(), QUARANTINE)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = False
    for path in paths:
        try:
            os.makedirs(target, exist_ok=True)
            os.replace(path, os.path.join(target, f"{os.path.basename(path)}.{stamp}-{os.getpid()}"))
            moved = True
        except FileNotFoundError:  # another process moved it first
            moved = True
        except OSError:  # a read-only cache: leave it, compile for this process
            pass
    outcome = (f"moved it to {target} and compiled the kernel again" if moved else
               "it cannot be moved aside (read-only folder?), so the kernel is compiled for this process only")
    return DamagedEntry(f"tinyflow's kernel cache file {paths[0]} failed verification: {reason}; {outcome}. "
                        "`tinyflow cache clear` empties the cache.")


# ---------------------------------------------------------------- `tinyflow cache info|clear`
def _ours(entry_name):
    """A file or folder this cache made (so `clear` never touches a user's own files in the folder)."""
    return entry_name.startswith(("tf_fused_", ".tf_fused_")) or entry_name == QUARANTINE


def _files(path):
    """(how many files, bytes) under path (a file or a folder)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return 1, os.lstat(path).st_size
    found = [os.path.join(d, f) for d, _, files in os.walk(path) for f in files]
    return len(found), sum(os.path.getsize(f) for f in found if os.path.exists(f))


def info():
    """What the cache holds: counts and bytes of kernels (for this machine or others), quarantined and other files."""
    where = folder()
    report = {"folder": where, "exists": os.path.isdir(where), "kernels": 0, "kernel_bytes": 0, "this_machine": 0,
              "cpu": cpu_identity()[0], "compiler": compiler_identity()}
    names = set(filter(_ours, os.listdir(where))) if report["exists"] else set()
    here = (cpu_identity()[1], compiler_identity())
    for name in sorted(n for n in names if n.startswith("tf_fused_") and n.endswith(".json")):
        try:
            with open(os.path.join(where, name), "rb") as f:
                entry = json.loads(f.read(1 << 16))
            size = sum(os.path.getsize(os.path.join(where, n)) for n in (name, entry["file"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # counted below with the other files
        names -= {name, entry["file"]}
        report["kernels"] += 1
        report["kernel_bytes"] += size
        report["this_machine"] += (entry.get("cpu_id"), entry.get("compiler")) == here
    for kind, found in (("quarantined", names & {QUARANTINE}), ("other", names - {QUARANTINE})):
        counts = [_files(os.path.join(where, name)) for name in found]
        report[kind], report[f"{kind}_bytes"] = sum(c for c, _ in counts), sum(b for _, b in counts)
    return report


def clear():
    """Delete every file the cache made (kernels, entries, quarantine, unfinished builds): (files, bytes, failures)."""
    where = folder()
    files, size, failures = 0, 0, []
    for name in filter(_ours, os.listdir(where) if os.path.isdir(where) else ()):
        path = os.path.join(where, name)
        try:
            count, nbytes = _files(path)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            files, size = files + count, size + nbytes
        except OSError as exc:
            failures.append(f"{path}: {exc.strerror or exc}")
    return files, size, failures
