"""InputSpec: the shape (None = any size), dtype and name of one tensor argument of a static program."""
import numpy as np

from ..errors import FeedError
from ..shapes import matches, normalize_shape


class InputSpec:
    """Describes one input of a to_static program; `None` dims stay unknown, so one program serves them all."""

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = normalize_shape(shape)
        if self.shape is None:
            raise ValueError("InputSpec needs a shape: a list of ints, with None for dimensions of any size")
        self.dtype = np.dtype(dtype)
        self.name = name

    def __repr__(self):
        return f"InputSpec(shape={list(self.shape)}, dtype='{self.dtype.name}', name={self.name!r})"

    def __eq__(self, other):
        return isinstance(other, InputSpec) and self.to_json() == other.to_json()

    def __hash__(self):
        return hash((self.shape, self.dtype, self.name))

    def check(self, array, what):
        """Raise FeedError unless `array` fits this spec (shape and a dtype castable without surprise)."""
        if not matches(self.shape, array.shape):
            raise FeedError(f"{what} has shape {array.shape} but its InputSpec says {list(self.shape)} "
                            "(None = any size); pass an array of that shape or change the input_spec")
        if array.dtype.kind not in "biuf":
            raise FeedError(f"{what} has dtype {array.dtype}; its InputSpec says {self.dtype}")

    def to_json(self):
        """A JSON-ready description (jit.save writes it)."""
        return {"shape": list(self.shape), "dtype": self.dtype.name, "name": self.name}

    @classmethod
    def from_json(cls, data):
        """The inverse of to_json."""
        return cls(data["shape"], data["dtype"], data.get("name"))
