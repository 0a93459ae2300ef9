"""Placeholder: an input whose value is supplied at run time through `feed_dict`."""
import numpy as np

from ..arguments import Arguments
from ..shapes import normalize_shape
from .node import Node


class Placeholder(Node):
    """External data fed into `Session.run`; `shape` may use None for unknown dimensions.

    With `default`, the placeholder takes that value whenever it is not fed
    (handy for a `training` flag that is True only in the training step).
    """

    # Checks a default value as a feed would be (dtype, shape); the session package installs its feed check.
    check_default = staticmethod(lambda node, value: value)

    def __init__(self, shape=None, dtype="float32", name=None, default=None, graph=None):
        dtype = Arguments(self, name).dtype("dtype", np.float64 if dtype is None else dtype)  # None: numpy's default
        self.default = None if default is None else np.asarray(default, dtype=dtype)
        super().__init__((), normalize_shape(shape), dtype, name, graph)
        if self.default is not None:
            self.default = Placeholder.check_default(self, self.default)
