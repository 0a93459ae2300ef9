"""cffi build script for tinyflow's C kernels (out-of-line API mode), used by setup.py.

Build switches (environment variables, read at build time):
  TINYFLOW_NATIVE=1      add -march=native (faster, but the build only runs on this CPU family)
  TINYFLOW_SANITIZE=1    build with -fsanitize=address,undefined (for the sanitizer test run)
  TINYFLOW_CFLAGS="..."  extra compiler flags
"""
import glob
import os
import sys

from cffi import FFI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elementwise_codegen  # noqa: E402 - next to this file, not an installed module

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "tinyflow_kernels.h")


def _flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def compile_flags():
    """The compiler and linker flags this build uses, from the environment switches."""
    # no trapping math lets GCC vectorize loops with selects; -fopenmp-simd honours `#pragma omp simd` without
    # linking an OpenMP runtime (threads.c has the threads); no FMA contraction, so every per-CPU build (and
    # every fused kernel generated at run time) rounds a*b+c as numpy does: the same bits everywhere (the
    # GEMM's micro-kernel asks for FMA itself)
    compile_args = ["-O3", "-std=gnu99", "-fno-strict-aliasing", "-fno-trapping-math", "-fno-math-errno",
                    "-fopenmp-simd", "-ffp-contract=off", "-pthread"]
    link_args = ["-pthread"]
    if _flag("TINYFLOW_NATIVE"):
        compile_args.append("-march=native")
    if _flag("TINYFLOW_SANITIZE"):
        compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1"]
        link_args += ["-fsanitize=address,undefined"]
    compile_args += os.environ.get("TINYFLOW_CFLAGS", "").split()
    return compile_args, link_args


def make_builder(module_name="tinyflow._ckernels", absolute_paths=False):
    """An FFI builder for the kernel library: the header as cdef, every C file under src/ as sources.

    setup.py wants source paths relative to the repository; a build into another
    folder (the sanitizer run) needs absolute ones.
    """
    compile_args, link_args = compile_flags()
    builder = FFI()
    with open(HEADER) as f:
        builder.cdef(f.read())
    # the elementwise kernels are generated from tinyflow's table (elementwise_codegen.py), next to src/'s
    generated = elementwise_codegen.write(os.path.join(HERE, "generated"))
    sources = sorted(glob.glob(os.path.join(HERE, "src", "*.c"))) + [generated]
    # the headers too: a change to one (a kernel family's generic code, tf_math.h) must rebuild the library
    headers = sorted(glob.glob(os.path.join(HERE, "src", "*.h")) + glob.glob(os.path.join(HERE, "include", "*.h"))) + [HEADER]
    flags_literal = " ".join(compile_args).replace('"', "")
    builder.set_source(
        module_name,
        '#include <stdint.h>\n#include "tinyflow_kernels.h"',
        sources=sources if absolute_paths else [os.path.relpath(s) for s in sources],
        depends=headers if absolute_paths else [os.path.relpath(h) for h in headers],
        include_dirs=[HERE, os.path.join(HERE, "include"), os.path.join(HERE, "src")],
        define_macros=[("TINYFLOW_BUILD_FLAGS", f'"{flags_literal}"')],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
