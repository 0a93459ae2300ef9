"""Constant: a fixed value baked into the graph."""
import numpy as np

from ..arguments import Arguments
from .node import Node, default_dtype_for


class Constant(Node):
    """A node whose value never changes; Python numbers and arrays in ops become Constants."""

    def __init__(self, value, dtype=None, name=None, graph=None):
        check = Arguments(self, name)
        array = check.numeric_array("value", value)  # None, strings and ragged lists are not graph values
        dtype = check.dtype("dtype", dtype) if dtype is not None else default_dtype_for(value)
        self.value = array.astype(dtype, copy=False)  # np.array above made the private copy
        self.value.flags.writeable = False  # a constant shared by every run must not be changed by one
        super().__init__((), self.value.shape, dtype, name, graph)
