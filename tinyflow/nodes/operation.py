"""Operation: the base class of every op. A subclass says how to compute and how to infer shapes."""
import numpy as np

from ..errors import GraphError, ShapeError
from ..shapes import broadcast_shapes, normalize_shape
from .node import Node, as_node

OP_TYPES = {}  # op_type -> class, filled as op classes are defined (the registry tests walk it)


def _refuse_a_taken_builtin_name(cls):
    """Backends pick kernels by op type name: a user's op named like a built-in one would run its kernel."""
    taken = OP_TYPES.get(cls.op_type)
    if taken is not None and taken.__module__.startswith("tinyflow.") and taken.__module__ != cls.__module__:
        raise GraphError(
            f"op type '{cls.op_type}' (class {cls.__module__}.{cls.__qualname__}) is already a tinyflow op "
            f"({taken.__module__}.{taken.__qualname__}); give your class another name, or set "
            f"`op_type = \"My{cls.op_type}\"` in its body.")


class Operation(Node):
    """A node computed from its inputs.

    Subclasses implement `compute(*input_values)` (the numpy reference kernel)
    and `infer_shape(*input_shapes)`; they may override `infer_dtype`.
    Attributes an op needs for shape inference (axis, stride, ...) are set
    before calling `super().__init__(*inputs, name=name)`.
    """

    stateful = False  # True for ops that change Variables; the Session runs them after pure ops
    abstract = True   # bases of op families say so too; concrete ops go into OP_TYPES

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("abstract", False):
            _refuse_a_taken_builtin_name(cls)
            OP_TYPES[cls.op_type] = cls

    def __init__(self, *inputs, name=None):
        like = next((x for x in inputs if isinstance(x, Node)), None)
        nodes = [as_node(x, like=like) for x in inputs]
        try:
            shape = normalize_shape(self.infer_shape(*[n.shape for n in nodes]))
            dtype = self.infer_dtype(*[n.dtype for n in nodes])
        except ShapeError as err:
            operands = ", ".join(f"'{n.name}' ({n.op_type}, shape {n.shape})" for n in nodes)
            raise ShapeError(f"{self.op_type}{f' {name!r}' if name else ''}: {err} "
                             f"[operands: {operands}]") from None
        super().__init__(nodes, shape, dtype, name)

    def compute(self, *input_values):
        """The numpy reference kernel: input arrays in, output array out."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute(*input_values)")

    def infer_shape(self, *input_shapes):
        """The static output shape (None dims allowed); broadcasting by default."""
        return broadcast_shapes(*input_shapes)

    def infer_dtype(self, *input_dtypes):
        """The output dtype; numpy's promotion of the input dtypes by default."""
        dtypes = [d for d in input_dtypes if d is not None]
        return np.result_type(*dtypes) if dtypes else np.dtype(np.float32)
