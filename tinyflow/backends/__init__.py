"""Backends: named kernel tables. The Session asks one for each op's kernel; `available()` lists the backends this
machine can run, best first (the numpy reference always among them)."""
import os

from ..errors import BackendError
from .base import Backend, NumpyBackend
from .c_backend import CBackend
from .opencl_backend import OpenCLBackend

# name -> class, the preferred first; OpenCL is never the default: on a CPU the C backend is faster, a GPU is chosen
# explicitly (and its availability check compiles a kernel)
_BACKENDS = {"c": CBackend, "opencl": OpenCLBackend, "numpy": NumpyBackend}


def register_backend(cls):
    """Add a Backend subclass to the ones `get_backend` knows, under its `name` (a course's own backend)."""
    _BACKENDS[cls.name] = cls
    return cls


def available():
    """Names of the backends that can run on this machine, the preferred one first."""
    return [name for name, cls in _BACKENDS.items() if cls.is_available()]


def get_backend(name=None):
    """A backend instance: `name`, else $TINYFLOW_BACKEND, else the best available one but OpenCL."""
    name = name or os.environ.get("TINYFLOW_BACKEND") or next(
        n for n, cls in _BACKENDS.items() if n != "opencl" and cls.is_available())
    base = name.split(":", 1)[0]  # "opencl:1" selects a device
    if base not in _BACKENDS:
        raise BackendError(f"unknown backend '{name}'; known backends: {sorted(_BACKENDS)}, "
                           f"available here: {available()}")
    cls = _BACKENDS[base]
    if not cls.is_available():
        raise BackendError(f"backend '{name}' is not available on this machine: {cls.why_unavailable()}")
    return cls(name) if base == "opencl" else cls()


__all__ = ["available", "get_backend", "register_backend", "Backend", "NumpyBackend", "CBackend", "OpenCLBackend"]
