"""Node: the base of every graph element. Operators (`+ - * / @ ...`) are installed by tinyflow/ops/operators.py,
Jupyter pictures (`_repr_svg_`) by tinyflow/viz: this layer knows neither ops nor pictures."""
import os
import re
import sys

import numpy as np

from ..errors import GraphError
from ..graph import PICTURES, get_default_graph

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_INSIDE = {}  # code filename -> whether it belongs to the tinyflow package (few files: no leak)
USER_SITES = {}  # code object -> {offset: (code, offset)}: a loop's ops share one site tuple (no garbage)


def user_site(depth=0, frame=None, _getframe=sys._getframe):
    """(code object, instruction offset) of the innermost frame outside tinyflow, from `frame` (default: `depth`
    frames above the caller) outwards (None if there is none). Cheap enough for every eager op; the frame itself is
    not kept (its locals would stay alive): `site_text` makes the pair "file:line" only when a message needs it."""
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
    """The dtype a Python value becomes: floats are float32 as in TF, numpy values keep theirs. Next to a tensor of
    dtype `like`, a Python number takes like's dtype where that is a float type, or an integer type holding the int
    (int32 * 2 stays int32, int32 * 2.5 is float32): one rule for graph, eager and to_static (tinyflow/dtypes.py)."""
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
    """`value` if it is a Node, else a Constant of it: a Python number takes the dtype of `like` (the other
    operand), so `x * 2.0` stays float32 when x is float32."""
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
    from .leaves import Constant
    dtype = default_dtype_for(value, like.dtype) if like is not None and type(value) in (int, float) else None
    return Constant(value, dtype=dtype, graph=like.graph if like is not None else None)
