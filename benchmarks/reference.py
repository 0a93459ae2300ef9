"""The hand-written reference loops (reference_loops.c), compiled once per run with the best flags.

The first process of a run that needs them compiles the file into a temporary folder and
records the library's path in the environment (REFERENCE_LIB), so the child processes of
the run load that same build. Loading is separate from building on purpose: a child must
load the library only after it imported torch and tinyflow in the order it measures, since
the library links libgomp.so.1 and the first libgomp loaded serves the whole process.
"""
import atexit
import os
import shutil
import subprocess
import tempfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_loops.c")
FLAGS = ("-O3", "-march=native", "-ffast-math", "-fopenmp")
LIBS = ("-lmvec", "-lm")  # -ffast-math vectorises expf into libmvec's functions
REFERENCE_LIB = "TINYFLOW_BENCH_REFERENCE_LIB"
REFERENCE_COMMAND = "TINYFLOW_BENCH_REFERENCE_COMMAND"

CDEF = """
int reference_omp_threads(void);
void reference_triad(float *a, const float *b, const float *c, float s, long n);
void reference_triad_serial(float *a, const float *b, const float *c, float s, long n);
void reference_fused_sigmoid(const float *x, float *out, long n, float a, float b, float c);
void reference_sigmoid(const float *x, float *y, long n);
void reference_sigmoid_back(const float *y, const float *g, float *out, long n);
void reference_relu(const float *x, float *y, long n);
void reference_relu_back(const float *y, const float *g, float *out, long n);
void reference_adam(float *p, const float *g, float *m, float *v, long n, float lr, float beta1, float beta2,
                    float eps, long t);
"""


def _compile(folder):
    """Compile reference_loops.c into `folder`; returns (library path, the command line used)."""
    compiler = os.environ.get("CC") or shutil.which("gcc") or "cc"
    path = os.path.join(folder, "reference_loops.so")
    base = [compiler, *FLAGS, "-shared", "-fPIC", SOURCE, "-o", path]
    for libs in (LIBS, ("-lm",)):  # a C library without libmvec (not glibc on x86-64): scalar expf
        done = subprocess.run(base + list(libs), capture_output=True, text=True)
        if done.returncode == 0:
            return path, " ".join([os.path.basename(compiler), *FLAGS, *libs])
    raise RuntimeError(f"cannot compile the reference loops ({' '.join(base)}):\n{done.stderr}")


def ensure_built():
    """The path of this run's reference library, compiled on first use and shared with child processes."""
    path = os.environ.get(REFERENCE_LIB)
    if path and os.path.exists(path):
        return path
    folder = tempfile.mkdtemp(prefix="tinyflow-bench-reference-")
    atexit.register(shutil.rmtree, folder, True)
    path, command = _compile(folder)
    os.environ[REFERENCE_LIB], os.environ[REFERENCE_COMMAND] = path, command
    return path


def command():
    """How the reference library of this run was compiled (after ensure_built)."""
    return os.environ.get(REFERENCE_COMMAND, "not built yet")


class ReferenceLoops:
    """The loaded library; `bind` turns a loop and its arrays into a zero-argument callable to time."""

    def __init__(self):
        from cffi import FFI
        self.ffi = FFI()
        self.ffi.cdef(CDEF)
        self.lib = self.ffi.dlopen(ensure_built())

    def bind(self, name, *args):
        """lib.<name>(*args) with numpy float32 arrays turned into pointers once, outside the timed call."""
        converted = [self.ffi.from_buffer("float[]", a) if hasattr(a, "__array_interface__") else a for a in args]
        fn = getattr(self.lib, name)
        return lambda: fn(*converted)

    def omp_threads(self):
        """The OpenMP thread count the loops run with."""
        return self.lib.reference_omp_threads()
