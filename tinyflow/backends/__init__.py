"""Backends: named kernel tables. The Session asks one for each op's kernel.

`available()` lists the backends this machine can run, best first; the numpy
reference is always among them.
"""
import os

from ..errors import BackendError
from .base import Backend
from .c_backend import CBackend
from .numpy_backend import NumpyBackend
from .opencl_backend import OpenCLBackend

# name -> class; `available()` lists them in this order (the numpy reference last). OpenCL is
# optional and never the default: on a CPU the C backend is faster, and a GPU is chosen explicitly.
_BACKENDS = {"c": CBackend, "numpy": NumpyBackend, "opencl": OpenCLBackend}


def register_backend(cls):
    """Add a Backend subclass to the ones `get_backend` knows."""
    _BACKENDS[cls.name] = cls
    return cls


def available():
    """Names of the backends that can run on this machine, the preferred one first."""
    names = [name for name, cls in _BACKENDS.items() if cls.is_available()]
    return sorted(names, key=lambda n: {"c": 0, "opencl": 1, "numpy": 2}.get(n, 1))


def get_backend(name=None):
    """A backend instance: `name`, else $TINYFLOW_BACKEND, else the best available one."""
    name = name or os.environ.get("TINYFLOW_BACKEND") or _default()
    base = name.split(":", 1)[0]  # "opencl:1" selects a device
    if base not in _BACKENDS:
        raise BackendError(f"unknown backend '{name}'; known backends: {sorted(_BACKENDS)}, "
                           f"available here: {available()}")
    cls = _BACKENDS[base]
    if not cls.is_available():
        raise BackendError(f"backend '{name}' is not available on this machine: {cls.why_unavailable()}")
    return cls(name) if base == "opencl" else cls()


def _default():
    """The best available backend that does not need an explicit choice (never OpenCL)."""
    return next(n for n in available() if n != "opencl")


__all__ = ["available", "get_backend", "register_backend", "Backend", "NumpyBackend", "CBackend", "OpenCLBackend"]
