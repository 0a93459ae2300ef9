"""The three kinds of leaf node: Constant (a fixed value), Placeholder (fed at run time), Variable (state)."""
import numpy as np

from ..arguments import Arguments
from ..errors import ShapeError
from ..shapes import normalize_shape
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


class Placeholder(Node):
    """External data fed into `Session.run`; `shape` may use None for unknown dimensions. With `default`, the
    placeholder takes that value whenever it is not fed (a `training` flag that is True only in the training step)."""

    # Checks a default value as a feed would be (dtype, shape); the session package installs its feed check.
    check_default = staticmethod(lambda node, value: value)

    def __init__(self, shape=None, dtype="float32", name=None, default=None, graph=None):
        dtype = Arguments(self, name).dtype("dtype", np.float64 if dtype is None else dtype)  # None: numpy's default
        self.default = None if default is None else np.asarray(default, dtype=dtype)
        super().__init__((), normalize_shape(shape), dtype, name, graph)
        if self.default is not None:
            self.default = Placeholder.check_default(self, self.default)


class Variable(Node):
    """A node holding its own numpy array in `.value`; `trainable` ones are what optimizers update.

    A device backend (OpenCL) may keep a device copy, `device_mirror`: an object with `array`, `host_stale`,
    `device_stale` and `download()`. Whichever side changed last wins: `.value` downloads a newer device copy, and
    setting `.value` marks the device copy stale. `host_array` is the host array as it is now, without that download
    (for identity checks, and the inline reads of compiled plans).
    """

    grad = None  # eager mode: the gradient backward() accumulated (a numpy array), reset by opt.zero_grad()

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, graph=None):
        dtype = np.dtype(dtype) if dtype is not None else default_dtype_for(initial_value)
        self.host_array = np.array(initial_value, dtype=dtype)  # a private copy: the caller's array stays theirs
        self.trainable = bool(trainable)
        self.device_mirror = None
        super().__init__((), self.host_array.shape, dtype, name, graph)

    @property
    def value(self):
        """The current numpy value (downloaded first if a device copy is newer)."""
        mirror = self.device_mirror
        if mirror is not None and mirror.host_stale:
            self.host_array = mirror.download()
            mirror.host_stale = False
        return self.host_array

    @value.setter
    def value(self, new_value):
        new_value = np.asarray(new_value)
        if new_value.shape != self.shape:
            raise ShapeError(f"cannot set Variable '{self.name}' of shape {self.shape} to a value of shape "
                             f"{new_value.shape}: a Variable keeps its shape; create a new Variable instead.")
        # always a private contiguous copy: kernels may update it in place, and the caller's array stays theirs
        self.share_array(np.array(new_value, dtype=self.dtype, order="C"))

    def share_array(self, array):
        """Use `array` itself (no copy) as the value: an eager parameter and its Tensor then share storage."""
        if array.shape != self.shape or array.dtype != self.dtype:
            raise ShapeError(f"Variable '{self.name}' ({self.dtype}, shape {self.shape}) cannot share an array of "
                             f"{array.dtype} and shape {array.shape}")
        self.host_array = array
        if self.device_mirror is not None:
            self.device_mirror.device_stale, self.device_mirror.host_stale = True, False

    def writable_value(self):
        """The current value as a C-contiguous, writeable array this Variable alone owns, for in-place kernels."""
        value = self.value
        if not (value.flags.c_contiguous and value.flags.writeable and value.flags.owndata):
            self.value = value  # the setter stores a private contiguous copy
        return self.host_array

    def mark_device_newer(self):
        """The device copy was updated in place: the next `.value` downloads it."""
        if self.device_mirror is not None:
            self.device_mirror.host_stale, self.device_mirror.device_stale = True, False
