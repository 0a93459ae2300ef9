"""OpenCL plumbing for the OpenCL backend: devices, contexts, programs (cached per device) and device arrays.

Devices are numbered in one flat list over all platforms: `opencl:N` names one device even if two platforms share a
name."""
import contextlib
import functools
import os
import pathlib
import threading
import warnings

import numpy as np

from ..errors import BackendError
from .c_codegen import elementwise_source
from .kernel_codes import opencl_defines


@functools.cache
def pyopencl():
    """pyopencl with pyopencl.array, or the ImportError saying why not (imported on first use: it takes 0.1 s)."""
    try:
        import pyopencl
        import pyopencl.array  # noqa: F401 - device arrays, as pyopencl.array
    except ImportError as err:  # the optional extra is not installed
        return err
    return pyopencl


INSTALL_HINT = ('install an OpenCL runtime: `pip install -e ".[opencl]"` brings pyopencl and the pocl CPU driver '
                "(no root needed), or run `apt-get install pocl-opencl-icd` as root for Debian's pocl")
COMPILER_HINT = ("An OpenCL compiler older than the CPU cannot compile for it (the pocl wheel's LLVM 14 does not "
                 "know AMD Zen 5 and asks for target CPU 'generic'); Debian's pocl compiles for a target it knows: run "
                 "`apt-get install pocl-opencl-icd` as root (scripts/setup.sh does)")


def _kernel_folder():
    """Where the .cl sources are: tinyflow/opencl_kernels when installed (setup.py ships them), else ckernels/opencl."""
    package = pathlib.Path(__file__).resolve().parents[1]
    installed = package / "opencl_kernels"
    return installed if installed.is_dir() else package.parent / "ckernels" / "opencl"


def devices():
    """[(index, platform name, device name, cl.Device)] for every OpenCL device on this machine."""
    cl, found = pyopencl(), []
    if isinstance(cl, ImportError):
        return []
    with contextlib.suppress(cl.Error):  # an ICD loader with no platform registered
        for platform in cl.get_platforms():
            with contextlib.suppress(cl.Error):  # a platform whose devices cannot be listed
                found += [(platform.name.strip(), d.name.strip(), d) for d in platform.get_devices()]
    return [(index, *entry) for index, entry in enumerate(found)]


# a kernel that calls the built-in library: compiling it proves the device's compiler works on this CPU
PROBE_SOURCE = "__kernel void probe(__global float *a) { a[get_global_id(0)] = exp(a[get_global_id(0)]); }"
_build_errors = {}  # device pointer -> '' or why the device cannot run a kernel


def _build(context, source, options=()):
    """The built program of `source` (compiler chatter is not for users; errors still raise)."""
    cl = pyopencl()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return cl.Program(context, source).build(options=list(options))


def build_error(device):
    """'' when `device` runs kernels, else why not (checked once per device and process with a probe kernel)."""
    key = device.int_ptr
    if key not in _build_errors:
        cl, failed = pyopencl(), "cannot create a context"  # a busy or misconfigured device
        try:
            context = cl.Context([device])
            failed = "cannot compile a kernel"  # e.g. pocl's LLVM does not know this CPU: "unknown target CPU"
            _build(context, PROBE_SOURCE)
            _build_errors[key] = ""
        except cl.Error as err:  # said by its first line naming an error (a build log's first 'error:')
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            first = next((line for line in lines if "error:" in line), lines[0] if lines else repr(err))
            _build_errors[key] = f"{failed}: {first}"
    return _build_errors[key]


def _describe_broken(found):
    """'N: platform / device: reason' for each device of `found` that cannot run kernels."""
    return "; ".join(f"{i}: {p} / {d}: {build_error(dev)}" for i, p, d, dev in found if build_error(dev))


def why_unavailable():
    """A sentence saying why OpenCL cannot be used here, with what to install."""
    if isinstance(pyopencl(), ImportError):
        return f"pyopencl is not installed ({pyopencl()}); {INSTALL_HINT}"
    found = devices()
    if not found:
        return f"pyopencl found no OpenCL device; {INSTALL_HINT}"
    if all(build_error(dev) for *_, dev in found):
        return f"no OpenCL device here can run a kernel ({_describe_broken(found)}). {COMPILER_HINT}"
    if not _kernel_folder().is_dir():
        return f"the OpenCL kernel sources are missing ({_kernel_folder()}); use tinyflow from a source checkout"
    return ""


def choose_device(spec):
    """The device for 'opencl:N' or $TINYFLOW_OPENCL_DEVICE (an index into `devices()`), else the first that works."""
    found = devices()
    index = spec.split(":", 1)[1] if ":" in spec else os.environ.get("TINYFLOW_OPENCL_DEVICE")
    usable = [entry for entry in found if not build_error(entry[3])] if index is None else found
    if not usable:
        raise BackendError(f"the OpenCL backend is not available: {why_unavailable()}")
    if index is None:
        return usable[0]
    listing = "; ".join(f"{i}: {p} / {d}" for i, p, d, _ in found)
    if not index.strip().isdigit() or int(index) >= len(found):
        raise BackendError(f"no OpenCL device {index!r}; devices here: {listing}. Use 'opencl:N'.")
    chosen = found[int(index)]
    if build_error(chosen[3]):
        raise BackendError(f"OpenCL device {_describe_broken([chosen])}. Choose another device (devices here: "
                           f"{listing}), or: {COMPILER_HINT}")
    return chosen


class DeviceRuntime:
    """A context, a queue and the compiled kernel programs (per element type) of one device."""

    @classmethod
    @functools.cache
    def for_device(cls, index, device):
        """The cached runtime of a device (contexts and programs are expensive to make)."""
        return cls(index, device)

    def __init__(self, index, device):
        self.index, self.device = index, device
        cl = pyopencl()
        self.context = cl.Context([device])
        self.queue = cl.CommandQueue(self.context)
        self.has_fp64 = "cl_khr_fp64" in device.extensions
        self._programs, self._kernels = {}, {}  # dtype -> program; (name, dtype or source) -> kernel
        # a kernel object keeps its arguments until launched: two threads sharing one would mix them up,
        # so whoever launches on this device (Session.run) holds this lock
        self.lock = threading.RLock()

    def program(self, dtype):
        """The built program of every kernel for float32 or float64."""
        dtype = np.dtype(dtype)
        if dtype not in self._programs:
            if dtype == np.float64 and not self.has_fp64:
                raise BackendError(f"OpenCL device '{self.device.name.strip()}' has no float64 support "
                                   "(cl_khr_fp64); use float32 data, or the c or numpy backend")
            folder = _kernel_folder()
            source = "\n".join((folder / name).read_text() for name in
                               ["common.h.cl"] + sorted(p.name for p in folder.glob("*.cl") if p.name != "common.h.cl"))
            source += elementwise_source(dtype == np.float32)  # generated at run time from the ops' expressions
            options = ["-DT=double", "-DUSE_FP64"] if dtype == np.float64 else ["-DT=float"]
            self._programs[dtype] = _build(self.context, source, options + opencl_defines())  # the header's codes
        return self._programs[dtype]

    def kernel(self, name, dtype, source=None):
        """Kernel `name` of the program for `dtype`, or of generated OpenCL `source` (a fused node's, built once per
        device and source); each retrieved once, as each retrieval makes a new kernel object."""
        key = (name, np.dtype(dtype) if source is None else source)
        if key not in self._kernels:
            program = self.program(dtype) if source is None else _build(self.context, source)
            self._kernels[key] = pyopencl().Kernel(program, name)
        return self._kernels[key]

    def empty(self, shape, dtype):
        """An uninitialised device array."""
        return pyopencl().array.empty(self.queue, shape, np.dtype(dtype))

    def upload(self, array):
        """A device copy of a host array (0-d arrays stay 0-d)."""
        array = np.asarray(array)
        return pyopencl().array.to_device(self.queue, array if array.flags.c_contiguous else array.copy(order="C"))

    def describe(self):
        """'platform / device' for messages and `tinyflow info`."""
        return f"{self.device.platform.name.strip()} / {self.device.name.strip()}"
