"""Backends: named kernel tables. The Session asks one for each op's kernel; `available()` lists the backends this
machine can run, best first (the numpy reference always among them)."""
import os

from ..errors import BackendError
from .base import Backend, NumpyBackend
from .c_backend import CBackend
from .opencl_backend import OpenCLBackend

# name -> class; OpenCL is optional and never the default: on a CPU the C backend is faster, a GPU is chosen explicitly
_BACKENDS = {"c": CBackend, "numpy": NumpyBackend, "opencl": OpenCLBackend}


def register_backend(cls):
    """Add a Backend subclass to the ones `get_backend` knows."""
    _BACKENDS[cls.name] = cls
    return cls


def _ranked():
    """Every known backend's name, the preferred one first (the numpy reference last)."""
    return sorted(_BACKENDS, key=lambda n: {"c": 0, "opencl": 1, "numpy": 2}.get(n, 1))


def available():
    """Names of the backends that can run on this machine, the preferred one first."""
    return [name for name in _ranked() if _BACKENDS[name].is_available()]


def get_backend(name=None):
    """A backend instance: `name`, else $TINYFLOW_BACKEND, else the best available one but OpenCL."""
    # OpenCL is chosen explicitly only (and its availability check compiles a kernel)
    name = name or os.environ.get("TINYFLOW_BACKEND") or next(
        n for n in _ranked() if n != "opencl" and _BACKENDS[n].is_available())
    base = name.split(":", 1)[0]  # "opencl:1" selects a device
    if base not in _BACKENDS:
        raise BackendError(f"unknown backend '{name}'; known backends: {sorted(_BACKENDS)}, "
                           f"available here: {available()}")
    cls = _BACKENDS[base]
    if not cls.is_available():
        raise BackendError(f"backend '{name}' is not available on this machine: {cls.why_unavailable()}")
    return cls(name) if base == "opencl" else cls()


__all__ = ["available", "get_backend", "register_backend", "Backend", "NumpyBackend", "CBackend", "OpenCLBackend"]
