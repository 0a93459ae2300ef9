"""Access to the compiled C kernel library (built by setup.py from ckernels/), if it was built."""
import os

# OpenMP threads that spin after a parallel region steal the cores numpy's BLAS threads need
# next: libgomp's default spin halved a matmul on 2 cores, and even a 10 µs spin cost a
# GEMM-bound training step 17%. So they sleep at once; waking them costs ~60 µs, which is why
# kernels go parallel only above TF_PARALLEL_MIN elements (ckernels/tinyflow_kernels.h). Must be
# set before libgomp loads; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# TINYFLOW_NUM_THREADS / OMP_NUM_THREADS above this are clamped to it (OpenMP takes a C int,
# and no machine tinyflow runs on has more cores).
MAX_THREADS = 1024


def _load():
    """The compiled module: TINYFLOW_CKERNELS_PATH (a special build, e.g. with sanitizers) or the installed one."""
    path = os.environ.get("TINYFLOW_CKERNELS_PATH")
    if path:
        import importlib.util
        try:
            spec = importlib.util.spec_from_file_location("tinyflow._ckernels", path)
            if spec is None or spec.loader is None:
                raise ImportError("not a Python extension module (the name must end in .so)")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            module.ffi, module.lib  # noqa: B018 - a module without them is not the kernel library
        except Exception as err:  # noqa: BLE001 - any broken file just makes the C backend unavailable
            raise ImportError(f"TINYFLOW_CKERNELS_PATH={path!r} is not a tinyflow kernel library: "
                              f"{type(err).__name__}: {err}") from None
        return module
    from .. import _ckernels
    return _ckernels


try:
    _module = _load()
    ffi, lib = _module.ffi, _module.lib
    IMPORT_ERROR = None
except ImportError as err:  # an install without a compiler, a source tree never built, a bad path
    ffi = lib = None
    IMPORT_ERROR = err


def is_built():
    """True when the C kernel library can be used."""
    return lib is not None


def why_not_built():
    """A sentence saying why the C library is missing and how to build it."""
    return (f"the C kernel library tinyflow._ckernels is not built ({IMPORT_ERROR or 'not loaded'}). "
            "Build it with `pip install -e .` from the repository root (needs a C compiler), or unset "
            "TINYFLOW_CKERNELS_PATH if it points at a wrong file.")


def configure_threads():
    """Apply TINYFLOW_NUM_THREADS (else OMP_NUM_THREADS, clamped to 1..MAX_THREADS) to the C library; returns
    the thread count. Values that are not whole numbers are ignored."""
    if lib is None:
        return 1
    wanted = (os.environ.get("TINYFLOW_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "").strip()
    if wanted.isdigit():
        lib.tf_set_num_threads(max(1, min(int(wanted), MAX_THREADS)))
    return lib.tf_max_threads()


def build_flags():
    """The compiler flags the C library was built with ('' when not built)."""
    return ffi.string(lib.tf_build_flags()).decode() if lib is not None else ""
