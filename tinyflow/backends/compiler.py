"""Compile generated C with cffi at run time, cached on disk (kernel_cache.py: key, verification, quarantine).

`load` finds a kernel in memory, else in the disk cache (a damaged file is moved aside with one warning), else
compiles it in a private temporary folder inside the cache and renames it into place, so two processes compiling
the same kernel both succeed. A cache that cannot be written means the kernel is compiled for this process only,
with one warning; without a working compiler `load` returns None and callers use numpy, with one warning.
"""
import functools
import os
import shutil
import sysconfig
import tempfile
import threading
import time
import warnings

from . import kernel_cache as disk_cache, native

DEFAULT_FLAGS = ["-O3", "-std=gnu99", "-fno-strict-aliasing", "-fno-trapping-math", "-fno-math-errno", "-fopenmp-simd"]

# what happened in this process: the tests and the benchmark's compile-cost report read it
# (load_seconds includes verifying the file; uncached: compiled for this process only; quarantined: files set aside)
STATS = {"compiled": 0, "loaded_from_disk": 0, "compile_seconds": 0.0, "load_seconds": 0.0, "failed": 0,
         "uncached": 0, "quarantined": 0}
_loaded = {}
_lock = threading.Lock()
_warned = []
cache_dir = disk_cache.folder


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
    import subprocess
    compiler = sysconfig.get_config_var("CC") or "cc"
    try:
        result = subprocess.run(compiler.split() + ["-march=native", "-x", "c", "-c", "-o", os.devnull, "-"],
                                input="int tinyflow_probe;\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def load(source, cdef):
    """The cffi module (with .ffi and .lib) of this C source: from memory, from disk, or compiled now; None when it
    cannot be compiled (no compiler): the caller then computes with numpy."""
    flags = compile_flags()
    key = disk_cache.kernel_key(source, flags)
    module = _loaded.get(key)
    if module is not None:
        return module
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load_or_build(f"tf_fused_{key}", source, cdef, flags)
        return _loaded[key]


def _load_or_build(name, source, cdef, flags):
    start = time.perf_counter()
    try:
        path = disk_cache.lookup(name)
    except disk_cache.DamagedEntry as damaged:
        _warn_damaged(damaged)
        path = None
    if path is not None:
        try:
            module = native.import_file(name, path)
            STATS["loaded_from_disk"] += 1
            STATS["load_seconds"] += time.perf_counter() - start
            return module
        except Exception as exc:  # noqa: BLE001 - sound bytes that do not load here (a library it needs is gone)
            reason = f"it does not load ({type(exc).__name__}: {exc})"
            _warn_damaged(disk_cache.set_aside([path, disk_cache.entry_path(name)], reason))
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        return _build(name, source, cdef, flags, cache_dir())
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
    _warn_once("uncached", f"tinyflow cannot write its kernel cache {cache_dir()} ({cache_error}); fused kernels "
               "are compiled for this process only (each new process compiles them again). Free some space, make "
               "the folder writable, or set TINYFLOW_CACHE_DIR to a writable folder.", KernelCacheWarning)
    return module


def _warn_damaged(damaged):
    STATS["quarantined"] += 1
    warnings.warn(str(damaged), KernelCacheWarning, stacklevel=5)


def _warn_once(kind, message, category):
    if kind not in _warned:
        _warned.append(kind)
        warnings.warn(message, category, stacklevel=5)


def _build(name, source, cdef, flags, folder):
    """Compile in a private temporary folder (inside `folder`, then stored there with atomic renames; or in the
    system's temporary space, deleted after loading: a loaded library stays mapped) and load it."""
    from cffi import FFI
    scratch = tempfile.mkdtemp(prefix=f".{name}-" if folder else f"tinyflow-{name}-", dir=folder)
    try:
        start = time.perf_counter()
        builder = FFI()
        builder.cdef(cdef)
        builder.set_source(name, source, extra_compile_args=flags,
                           extra_link_args=["-fopenmp"] if "-fopenmp" in flags else [])
        path = builder.compile(tmpdir=scratch, verbose=False)
        STATS["compiled"] += 1
        STATS["compile_seconds"] += time.perf_counter() - start
        if folder:
            path = disk_cache.store(name, path, disk_cache.built_by(flags))
        return native.import_file(name, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
