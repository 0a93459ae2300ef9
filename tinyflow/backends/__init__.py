"""Backends: named kernel tables. The Session asks one for each op's kernel.

`available()` lists the backends this machine can run, best first; the numpy
reference is always among them.
"""
import os

from ..errors import BackendError
from .base import Backend
from .c_backend import CBackend
from .numpy_backend import NumpyBackend

_BACKENDS = {"c": CBackend, "numpy": NumpyBackend}  # name -> class, the preferred first


def register_backend(cls):
    """Add a Backend subclass to the ones `get_backend` knows."""
    _BACKENDS[cls.name] = cls
    return cls


def available():
    """Names of the backends that can run on this machine, the preferred one first."""
    names = [name for name, cls in _BACKENDS.items() if cls.is_available()]
    return sorted(names, key=lambda n: n == "numpy")  # the reference goes last: faster ones win


def get_backend(name=None):
    """A backend instance: `name`, else $TINYFLOW_BACKEND, else the best available one."""
    name = name or os.environ.get("TINYFLOW_BACKEND") or available()[0]
    if name not in _BACKENDS:
        raise BackendError(f"unknown backend '{name}'; known backends: {sorted(_BACKENDS)}, "
                           f"available here: {available()}")
    cls = _BACKENDS[name]
    if not cls.is_available():
        raise BackendError(f"backend '{name}' is not available on this machine: {cls.why_unavailable()}")
    return cls()


__all__ = ["available", "get_backend", "register_backend", "Backend", "NumpyBackend", "CBackend"]
