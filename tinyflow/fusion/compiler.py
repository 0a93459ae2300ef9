"""Compile generated C with cffi at run time, cached on disk by a hash of the source and the flags.

The cache folder is $TINYFLOW_CACHE_DIR, else $XDG_CACHE_HOME/tinyflow, else
~/.cache/tinyflow. Each kernel is one shared library named by its hash. It is
built in a private temporary folder and moved into place with an atomic rename,
so two processes compiling the same kernel both succeed (the second rename
replaces an identical file) and a reader never sees half a file. A file that does
not load (truncated, corrupted) is rebuilt. Without a working compiler, `load`
returns None once per kernel and callers use numpy; a warning says why, once.
"""
import functools
import hashlib
import importlib.util
import os
import shutil
import sysconfig
import tempfile
import threading
import time
import warnings

DEFAULT_FLAGS = ["-O3", "-std=gnu99", "-fno-strict-aliasing", "-fno-trapping-math", "-fno-math-errno", "-fopenmp-simd"]

# what happened in this process: the tests and the benchmark's compile-cost report read it
STATS = {"compiled": 0, "loaded_from_disk": 0, "compile_seconds": 0.0, "load_seconds": 0.0, "failed": 0}
_loaded = {}
_lock = threading.Lock()
_warned = []


class FusionWarning(UserWarning):
    """Fused kernels run with numpy because they could not be compiled."""


def cache_dir():
    """The folder holding compiled kernels (created on demand)."""
    root = os.environ.get("TINYFLOW_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tinyflow")
    return os.path.join(root, "kernels")


def compile_flags():
    """The flags of the C kernel library (ckernels/build_ckernels.py), minus sanitizers, plus -march=native.

    A kernel compiled at run time runs on the machine that compiles it, so it may use all of this CPU's
    instructions (AVX-512, FMA...); the CPU is part of the cache key, so a cache shared between machines
    never hands one machine another's kernel.
    """
    from ..backends import native
    flags = [f for f in native.build_flags().split() if not f.startswith("-fsanitize")] or list(DEFAULT_FLAGS)
    if "-O1" in flags:  # a sanitizer build asks for -O1; kernels here are for speed
        flags.remove("-O1")
    if not any(f.startswith(("-march=", "-mcpu=")) for f in flags) and _accepts_native():
        flags.append("-march=native")
    # no a*b+c contracted into one FMA rounding: a fused kernel computes what its ops compute one by one
    return flags + ["-ffp-contract=off"]


@functools.lru_cache(maxsize=None)
def _accepts_native():
    """Whether the C compiler takes -march=native (GCC and Clang on x86-64 and ARM do)."""
    import subprocess
    compiler = sysconfig.get_config_var("CC") or "cc"
    try:
        result = subprocess.run(compiler.split() + ["-march=native", "-x", "c", "-c", "-o", os.devnull, "-"],
                                input="int tinyflow_probe;\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def kernel_key(source, flags):
    """The hash naming a kernel: its source, the flags, the cffi version and Python's ABI."""
    import cffi
    text = "\0".join([source, " ".join(flags), cffi.__version__, sysconfig.get_config_var("EXT_SUFFIX") or ""])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def load(source, cdef):
    """The cffi module (with .ffi and .lib) of this C source: from memory, from disk, or compiled now.

    None when it cannot be compiled (no compiler): the caller then computes with numpy.
    """
    flags = compile_flags()
    key = kernel_key(source, flags)
    module = _loaded.get(key)
    if module is not None:
        return module
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load_or_build(key, source, cdef, flags)
        return _loaded[key]


def _load_or_build(key, source, cdef, flags):
    name = f"tf_fused_{key}"
    folder = cache_dir()
    path = os.path.join(folder, name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    if os.path.exists(path):
        try:
            return _import(name, path, "loaded_from_disk", "load_seconds")
        except Exception:  # noqa: BLE001 - a corrupted or foreign file: rebuild it
            pass
    try:
        os.makedirs(folder, exist_ok=True)
        _build(name, source, cdef, flags, folder, path)
        return _import(name, path, None, None)
    except Exception as exc:  # noqa: BLE001 - no compiler, no write access: numpy computes instead
        STATS["failed"] += 1
        if not _warned:
            _warned.append(exc)
            warnings.warn(f"tinyflow could not compile a fused kernel ({type(exc).__name__}: {exc}); fused ops "
                          "run with numpy instead (correct, but slower). Install a C compiler (gcc) to speed "
                          "them up, or turn fusion off with tfl.Session(optimize={'fusion': False}).",
                          FusionWarning, stacklevel=4)
        return None


def _build(name, source, cdef, flags, folder, path):
    """Compile in a private temporary folder, then rename into place (atomic on one file system)."""
    from cffi import FFI
    start = time.perf_counter()
    builder = FFI()
    builder.cdef(cdef)
    builder.set_source(name, source, extra_compile_args=flags,
                       extra_link_args=["-fopenmp"] if "-fopenmp" in flags else [])
    scratch = tempfile.mkdtemp(prefix=f".{name}-", dir=folder)
    try:
        built = builder.compile(tmpdir=scratch, verbose=False)
        os.replace(built, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    STATS["compiled"] += 1
    STATS["compile_seconds"] += time.perf_counter() - start


def _import(name, path, counter, seconds):
    start = time.perf_counter()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if counter:
        STATS[counter] += 1
        STATS[seconds] += time.perf_counter() - start
    return module


def forget_loaded():
    """Drop the kernels loaded in this process (tests use it to exercise the disk cache)."""
    _loaded.clear()
    _warned.clear()
