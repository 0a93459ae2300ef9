"""Constant: a fixed value baked into the graph."""
import numpy as np

from .node import Node, default_dtype_for


class Constant(Node):
    """A node whose value never changes; Python numbers and arrays in ops become Constants."""

    def __init__(self, value, dtype=None, name=None, graph=None):
        dtype = np.dtype(dtype) if dtype is not None else default_dtype_for(value)
        self.value = np.array(value, dtype=dtype)
        self.value.flags.writeable = False  # a constant shared by every run must not be changed by one
        super().__init__((), self.value.shape, dtype, name, graph)
