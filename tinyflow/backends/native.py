"""Access to the compiled C kernel library (built by setup.py from ckernels/), if it was built."""
import functools
import importlib
import importlib.util
import os


def import_file(name, path):
    """The extension module `name` loaded from the file at `path`."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python extension module (the name must end in .so)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load():
    """The compiled module: TINYFLOW_CKERNELS_PATH (a special build, e.g. with sanitizers) or the installed one."""
    path = os.environ.get("TINYFLOW_CKERNELS_PATH")
    if path:
        try:
            module = import_file("tinyflow._ckernels", path)
            module.ffi, module.lib  # noqa: B018 - a module without them is not the kernel library
        except Exception as err:  # noqa: BLE001 - any broken file just makes the C backend unavailable
            raise ImportError(f"TINYFLOW_CKERNELS_PATH={path!r} is not a tinyflow kernel library: "
                              f"{type(err).__name__}: {err}") from None
        return module
    return importlib.import_module(f"{__package__.rpartition('.')[0]}._ckernels")  # tinyflow/_ckernels*.so


try:
    _module = _load()
    ffi, lib = _module.ffi, _module.lib
    IMPORT_ERROR = None
except ImportError as err:  # an install without a compiler, a source tree never built, a bad path
    ffi = lib = None
    IMPORT_ERROR = err


# TINYFLOW_NUM_THREADS / OMP_NUM_THREADS are clamped to this (tinyflow_kernels.h); one thread without the library
MAX_THREADS = lib.TF_MAX_THREADS if lib is not None else 1


def is_built():
    """True when the C kernel library can be used."""
    return lib is not None


def why_not_built():
    """'' when the C library is built, else a sentence saying why it is missing and how to build it."""
    return "" if lib is not None else (
        f"the C kernel library tinyflow._ckernels is not built ({IMPORT_ERROR or 'not loaded'}). "
        "Build it with `pip install -e .` from the repository root (needs a C compiler), or unset "
        "TINYFLOW_CKERNELS_PATH if it points at a wrong file.")


def configure_threads():
    """Apply TINYFLOW_NUM_THREADS (else OMP_NUM_THREADS; clamped to 1..MAX_THREADS); the count."""
    if lib is None:
        return 1
    wanted = (os.environ.get("TINYFLOW_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "").strip()
    if wanted.isdigit():
        lib.tf_set_num_threads(max(1, min(int(wanted), MAX_THREADS)))
    return lib.tf_max_threads()


GEMM = {}  # what computes the matrix products' tiles: its name and library file (choose_gemm, at the first C backend)


def choose_gemm(wanted=None):
    """Let the C library compute matrix products with numpy's OpenBLAS, one thread of it per tile on tinyflow's pool
    (TINYFLOW_GEMM=tinyflow, or a BLAS it cannot drive: the hand-written kernel); returns GEMM."""
    found = _numpy_openblas() if lib is not None else None
    controller, symbols, ilp64 = found or (None, [None] * 6, False)
    own = found is None or (wanted or os.environ.get("TINYFLOW_GEMM") or "blas").lower() == "tinyflow"
    if lib is not None:  # with the hand-written kernel, BLAS's thread count is still held while products run
        lib.tf_use_blas(*(ffi.NULL if address is None or (own and i < 4) else ffi.cast("void *", address)
                          for i, address in enumerate(symbols)), int(ilp64))
    GEMM.update(name="tinyflow's hand-written kernel (ckernels/src/gemm_generic.h)" if own else
                f"numpy's OpenBLAS {controller.version}, one thread per tile on tinyflow's pool",
                filepath=controller and controller.filepath)
    return GEMM


@functools.cache
def _numpy_openblas():
    """(controller, addresses of cblas_[sd]gemm, cblas_[sd]gemv, openblas_[gs]et_num_threads, ILP64?) of the OpenBLAS
    numpy loaded, or None. Only one threading on pthreads: with OpenMP its thread count is per calling thread."""
    import ctypes

    from threadpoolctl import ThreadpoolController
    for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
        if controller.threading_layer not in ("pthreads", "disabled"):
            continue
        library = ctypes.CDLL(controller.filepath)
        for prefix, suffix in ((p, s) for p in ("", "scipy_") for s in ("", "64_", "_64")):
            names = [f"{prefix}{name}{suffix}" for name in ("cblas_sgemm", "cblas_dgemm", "cblas_sgemv", "cblas_dgemv",
                                                            "openblas_get_num_threads", "openblas_set_num_threads")]
            if all(hasattr(library, name) for name in names + [f"{prefix}openblas_get_config{suffix}"]):
                config = getattr(library, f"{prefix}openblas_get_config{suffix}")
                config.restype = ctypes.c_char_p
                return controller, [ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in names], \
                    b"USE64BITINT" in config()
    return None


def thread_report():
    """Who runs threads here: tinyflow's pool, and the OpenMP and BLAS runtimes others loaded, as they share the
    cores (tinyflow's kernels never run on OpenMP: only OMP_NUM_THREADS counts, when TINYFLOW_NUM_THREADS is unset)."""
    from threadpoolctl import threadpool_info
    return {"tinyflow": {"runtime": "tinyflow thread pool (pthreads, ckernels/src/threads.c)",
                         "threads": configure_threads(), "workers started": lib.tf_pool_workers() if lib else 0,
                         "gemm": (GEMM or choose_gemm()).get("name")},
            "others": [{key: entry.get(key) for key in ("user_api", "internal_api", "filepath", "version",
                                                        "num_threads")}
                       for entry in threadpool_info() if entry["filepath"] != GEMM.get("filepath")]}


def build_flags():
    """The compiler flags the C library was built with ('' when not built)."""
    return ffi.string(lib.tf_build_flags()).decode() if lib is not None else ""
