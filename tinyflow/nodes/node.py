"""Node, the base of every graph element, and the three kinds of leaf node: Constant (a fixed value),
Placeholder (fed at run time), Variable (state). Operators (`+ - * / @ ...`) are installed by
tinyflow/ops/operators.py, Jupyter pictures (`_repr_svg_`) by tinyflow/viz: this layer knows neither."""
import os
import re
import sys

import numpy as np

from ..arguments import Arguments
from ..errors import GraphError, ShapeError
from ..graph import PICTURES, get_default_graph
from ..shapes import normalize_shape

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_INSIDE = {}  # code filename -> whether it belongs to the tinyflow package (few files: no leak)
USER_SITES = {}  # code object -> {offset: (code, offset)}: a loop's ops share one site tuple (no garbage)


def user_site(depth=0, frame=None, _getframe=sys._getframe):
    """(code object, offset) of the innermost frame outside tinyflow from `frame` (default: `depth` above the caller)
    outwards, or None. Cheap enough for every eager op, and keeps no frame (its locals would stay alive)."""
    if frame is None:
        try:
            frame = _getframe(depth + 1)
        except ValueError:  # a shallower stack than the caller expected
            frame = _getframe(1)
    while frame is not None:
        code = frame.f_code
        inside = _INSIDE.get(code.co_filename)
        if inside is None:
            inside = _INSIDE[code.co_filename] = code.co_filename.startswith(_PACKAGE_DIR)
        if not inside:
            offset = frame.f_lasti
            sites = USER_SITES.get(code)
            if sites is None:
                if len(USER_SITES) > 4096:  # notebooks compile a new code object per cell run: forget old ones
                    USER_SITES.clear()
                sites = USER_SITES[code] = {}
            site = sites.get(offset)
            if site is None:
                site = sites[offset] = (code, offset)
            return site
        frame = frame.f_back
    return None


def site_text(site):
    """"file:line" of a `user_site` ("cell 5, line 3" in a notebook), or "<unknown>"."""
    if site is None:
        return "<unknown>"
    code, offset = site  # its line is what frame.f_lineno said at that instruction
    lines = (n for start, end, n in code.co_lines() if start <= offset < end and n is not None)
    line = next(lines, code.co_firstlineno)
    return source_line(code.co_filename, line)


def source_line(filename, line):
    """"file:line" of the user's code for messages ("cell 5, line 3" in a notebook)."""
    cell = notebook_cell(filename)
    if cell is not None:
        return f"cell {cell}, line {line}"
    try:
        rel = os.path.relpath(filename)
        filename = rel if not rel.startswith("..") else filename
    except ValueError:
        pass
    return f"{filename}:{line}"


def notebook_cell(filename):
    """The execution count of the IPython / Jupyter cell compiled as `filename`, or None for a real file."""
    legacy = re.match(r"<ipython-input-(\d+)-", filename)  # classic IPython names cells like this
    if legacy:
        return int(legacy.group(1))
    ipython = sys.modules.get("IPython")  # only a running IPython knows its cells: never import it here
    shell = ipython.get_ipython() if ipython is not None else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    label = name_of(filename) if name_of is not None else None  # ("Cell", "In[5]") for a cell
    number = re.search(r"\d+", label[1]) if label else None
    return int(number.group()) if number else None


class Node:
    """A vertex of the graph: inputs, consumers, static shape and dtype, a unique name."""

    # A Node is not an array: numpy hands `array + node` to the node (tinyflow/ops/operators.py
    # installs the real hook, which also explains `np.exp(node)`).
    __array_ufunc__ = None
    op_type = "Node"
    # the fields every node has (`__init__` sets them); what else an op's __dict__ holds are its attributes
    FIELDS = frozenset({"graph", "inputs", "consumers", "shape", "dtype", "role", "name", "site", "creation_index"})
    subgraph = None  # the control-flow Subgraph (branch, loop body) the node was built in; set by control_flow

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.op_type = cls.__dict__.get("op_type", cls.__name__)

    def __init__(self, inputs=(), shape=None, dtype=None, name=None, graph=None):
        graph = graph if graph is not None else get_default_graph()
        self.site = user_site(1)  # the user's line as a (code, offset) pair; creation_site is its text
        for inp in inputs:
            if inp.graph is not graph:
                raise GraphError(f"cannot build {self.op_type}: input '{inp.name}' belongs to another graph. "
                                 "Build all connected nodes inside the same `with graph.as_default():` block.")
        self.graph = graph
        self.inputs = tuple(inputs)
        self.consumers = []
        self.shape = shape
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.role = graph.current_role
        self.name = graph.register(self, name)
        self.creation_index = len(graph.nodes) - 1  # position in creation (= topological) order
        for inp in self.inputs:
            inp.consumers.append(self)

    @property
    def creation_site(self):
        """"file:line" of the user code that created this node ("cell 5, line 3" in a notebook)."""
        return site_text(self.site)

    def _repr_svg_(self):
        """Jupyter shows a node as the picture of the subgraph it needs (None, the text repr, without graphviz)."""
        draw = PICTURES.get("svg")
        return None if draw is None else draw(self)

    def __repr__(self):
        dtype = getattr(self, "dtype", None)
        name = "(eager op)" if getattr(self, "graph", 0) is None else f"'{getattr(self, 'name', '?')}'"
        return (f"<{self.op_type} {name} shape={getattr(self, 'shape', '?')} "
                f"dtype={dtype.name if dtype is not None else None}>")

    __hash__ = object.__hash__

    def __iter__(self):
        # Without this, __getitem__ would make Python iterate a node forever.
        raise TypeError(f"{self!r} is a graph node, not a value: it cannot be iterated. "
                        "Run it with sess.run(node) to get a numpy array.")

    def __bool__(self):
        raise TypeError(f"{self!r} has no truth value while the graph is being built. "
                        "Compare values after sess.run, or use `is None` to test for a missing node.")


def default_dtype_for(value, like=None):
    """The dtype a Python value becomes: floats are float32 as in TF, numpy values keep theirs; next to a tensor of
    dtype `like`, a number takes a float `like`, or an int `like` that holds it (int32 * 2 stays int32)."""
    if like is not None and type(value) in (int, float) and (like.kind in "fc" or type(value) is int and (
            like.kind in "iu" and np.iinfo(like).min <= value <= np.iinfo(like).max)):
        return like
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    arr = np.asarray(value)
    return np.dtype(np.float32) if arr.dtype == np.float64 else arr.dtype


class Newest:
    """While tfl.jit.to_static traces, `of(node)` is the newest value of a tensor changed in place (`a += 1` makes
    `a + 1` the value of the object `a` held, for every name holding it: tinyflow/jit/inplace_tracing.py); else None."""
    of = None


def is_eager(value):
    """An eager Tensor or op: it computes at once and belongs to no graph (tinyflow/eager)."""
    return getattr(value, "graph", False) is None


def as_node(value, like=None):
    """`value` if it is a Node, else a Constant of it; numbers take `like`'s dtype (x * 2.0 stays float32)."""
    if isinstance(value, Node):
        return value if Newest.of is None else Newest.of(value)
    if is_eager(value):
        if like is None or like.graph is None:
            return value
        if value.requires_grad:  # as a constant it would lose its gradient without a word
            raise GraphError(f"a Tensor of shape {tuple(value.shape)} that requires grad meets graph node "
                             f"'{like.name}' ({like.op_type}): in the graph it would be a constant, and its gradient "
                             "would be lost. Inside tfl.jit.to_static pass it as an argument (eager autograd then "
                             "reaches it) or make it a tfl.Variable; else use t.detach()")
        value = np.asarray(value)  # next to a graph node, a Tensor is a constant of its current value
    elif like is not None and like.graph is None:
        return like.constant(value, like=like)  # next to an eager Tensor, a constant is a Tensor too
    # Constant refuses what no kernel can compute (strings, None, ragged lists) when the graph is built
    dtype = default_dtype_for(value, like.dtype) if like is not None and type(value) in (int, float) else None
    return Constant(value, dtype=dtype, graph=like.graph if like is not None else None)


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
    """A node holding its own numpy array in `.value`; `trainable` ones are what optimizers update. A device backend
    may keep a `device_mirror` (`array`, `host_stale`, `device_stale`, `download()`): the side changed last wins.
    `host_array` is the host array as it is now, without downloading (identity checks, compiled plans' reads)."""

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
