"""The numpy backend: the readable reference. Every op's own `compute` is its kernel."""
from .base import Backend


class NumpyBackend(Backend):
    """Runs each op with its numpy `compute` method (an empty kernel table)."""

    name = "numpy"
    kernels = {}
    host_below = float("inf")  # eager ops compute with numpy at once
