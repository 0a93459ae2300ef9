"""Assignment 5 — a C kernel through cffi, with a parity test.

tinyflow's C backend is a table: op type -> a Python function that checks its inputs and calls
C. You write the C code (assignment5_kernel.c), the Python wrappers that make calling it safe
(a wrong dtype or a non-contiguous view must never reach C: that would be a crash or silent
garbage), and the tests check parity with the op's numpy `compute` on every kind of input.
`build` and `backend_with` are given. Check yourself with `pytest tests -m assignment5`.
"""
import glob
import importlib.util
import os

import numpy as np

import tinyflow as tfl
from tinyflow.backends import NumpyBackend

C_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assignment5_kernel.c")
DECLARATIONS = """
void leaky_relu_f32(const float *x, float *y, long n, float alpha);
void leaky_relu_back_f32(const float *x, const float *g, float *dx, long n, float alpha);
"""


def build(folder):
    """Compile assignment5_kernel.c with cffi in `folder` and return the module (with .ffi and .lib). Given."""
    from cffi import FFI
    builder = FFI()
    builder.cdef(DECLARATIONS)
    with open(C_SOURCE, encoding="utf-8") as f:
        builder.set_source("assignment5_kernels", f.read(), extra_compile_args=["-O2"])
    builder.compile(tmpdir=folder)
    library = glob.glob(os.path.join(folder, "assignment5_kernels*.so"))[0]
    spec = importlib.util.spec_from_file_location("assignment5_kernels", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leaky_relu_kernel(kernels, op, x):
    """The forward kernel for a LeakyRelu op (alpha is op.alpha): C for float32, the op's numpy compute otherwise."""
    # BEGIN SOLUTION
    # HINT: if x.dtype is not float32 return op.compute(x); else make x contiguous (np.ascontiguousarray),
    #   allocate out = np.empty_like(x), call kernels.lib.leaky_relu_f32 with
    #   kernels.ffi.from_buffer("float[]", array) for x and out, x.size and op.alpha, return out
    if x.dtype != np.float32:
        return op.compute(x)
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    kernels.lib.leaky_relu_f32(kernels.ffi.from_buffer("float[]", x), kernels.ffi.from_buffer("float[]", out),
                               x.size, op.alpha)
    return out
    # END SOLUTION


def leaky_relu_back_kernel(kernels, op, x, grad):
    """The backward kernel for a LeakyReluGrad op (inputs x and grad, same shape): C only when both are float32."""
    # BEGIN SOLUTION
    # HINT: like the forward kernel, but both inputs must be float32 and of the same shape, else op.compute(x,
    #   grad); make both contiguous
    if x.dtype != np.float32 or grad.dtype != np.float32 or x.shape != grad.shape:
        return op.compute(x, grad)
    x, grad = np.ascontiguousarray(x), np.ascontiguousarray(grad)
    out = np.empty_like(x)
    kernels.lib.leaky_relu_back_f32(kernels.ffi.from_buffer("float[]", x), kernels.ffi.from_buffer("float[]", grad),
                                    kernels.ffi.from_buffer("float[]", out), x.size, op.alpha)
    return out
    # END SOLUTION


def backend_with(kernels, name="assignment5"):
    """A backend named `name`: numpy for every op but LeakyRelu and LeakyReluGrad, which run your C. Given."""
    class StudentBackend(NumpyBackend):
        pass
    StudentBackend.name = name
    StudentBackend.register_kernel("LeakyRelu", lambda backend, op, x: leaky_relu_kernel(kernels, op, x), small=False)
    StudentBackend.register_kernel("LeakyReluGrad", lambda backend, op, x, grad:
                                   leaky_relu_back_kernel(kernels, op, x, grad), small=False)
    tfl.backends.register_backend(StudentBackend)
    return name
