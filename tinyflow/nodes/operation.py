"""Operation: the base class of every op, in both modes: called on graph nodes (or numbers, arrays) it builds a node,
on eager Tensors it computes at once and returns a Tensor (tinyflow/eager installs itself as `Operation.eager`)."""
import numpy as np

from ..errors import GraphError, ShapeError
from ..shapes import broadcast_shapes, normalize_shape
from .node import Node, as_node

OP_TYPES = {}  # op_type -> class, filled as op classes are defined (the registry tests walk it)
_INPUT = (lambda self, first, *rest: first, lambda self, first, second, *rest: second)  # an op's shape_of, dtype_of


class OperationType(type):
    """The metaclass of ops: `Op(*inputs)` is a graph node, or an eager Tensor when inputs are Tensors."""

    def __call__(cls, *args, **kwargs):
        eager = Operation.eager
        if eager is not None and args and args[0].__class__ is eager.Tensor:
            result = eager.call(cls, args, kwargs)  # a plain op on Tensors: computed without building a node
            if result is not None:
                return result
        op = cls.__new__(cls)
        op.__init__(*args, **kwargs)
        if op.graph is None:  # Operation.__init__ found eager Tensors among the inputs
            return Operation.eager.run(op)
        return op


class Operation(Node, metaclass=OperationType):
    """A node computed from its inputs: subclasses implement `compute(*input_values)` (the numpy reference kernel)
    and `infer_shape(*input_shapes)` (maybe `infer_dtype`), and set what shape inference needs (axis, stride, ...)
    before calling `super().__init__(*inputs, name=name)`."""

    stateful = False  # True for ops that change Variables; the Session runs them after pure ops
    abstract = True   # bases of op families say so too; concrete ops go into OP_TYPES
    elementwise = False  # True: the output has the broadcast shape of the inputs, value by value
    eager = None      # the eager runtime: `Tensor`, `call`, `adopt` and `run` (installed by tinyflow.eager)
    eager_variables = 0  # > 0 while a layer runs on a Tensor: ops on its Variables compute eagerly too
    shape_of = None   # the input (0 or 1) whose static shape the output has (None: broadcasting)
    dtype_of = None   # the input (0 or 1) whose dtype the output has, or a fixed dtype (None: promotion)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # shape_of / dtype_of become the class's infer_shape / infer_dtype (the defaults stay as fast as they are)
        shape_of, dtype_of = cls.__dict__.get("shape_of"), cls.__dict__.get("dtype_of")
        if shape_of is not None and "infer_shape" not in cls.__dict__:
            cls.infer_shape = _INPUT[shape_of]
        if dtype_of is not None and "infer_dtype" not in cls.__dict__:
            cls.infer_dtype = _INPUT[dtype_of] if type(dtype_of) is int else lambda self, *dtypes: dtype_of
        if cls.__dict__.get("abstract", False):
            return
        # backends pick kernels by op type name: a user's op named like a built-in one would run its kernel
        taken = OP_TYPES.get(cls.op_type)
        if taken is not None and taken.__module__.startswith("tinyflow.") and taken.__module__ != cls.__module__:
            raise GraphError(
                f"op type '{cls.op_type}' (class {cls.__module__}.{cls.__qualname__}) is already a tinyflow op "
                f"({taken.__module__}.{taken.__qualname__}); give your class another name, or set "
                f"`op_type = \"My{cls.op_type}\"` in its body.")
        OP_TYPES[cls.op_type] = cls

    def __init__(self, *inputs, name=None):
        eager = Operation.eager
        if eager is not None and eager.adopt(self, inputs):
            return  # an eager op: inputs, shape and dtype are set, graph is None, no graph node
        like = next((x for x in inputs if isinstance(x, Node)), None)
        nodes = [as_node(x, like=like) for x in inputs]
        try:
            shape = normalize_shape(self.infer_shape(*[n.shape for n in nodes]))
            dtype = self.infer_dtype(*[n.dtype for n in nodes])
        except ShapeError as err:
            raise ShapeError(f"{self.op_type}{f' {name!r}' if name else ''}: {err} "
                             f"[operands: {describe_operands(nodes)}]") from None
        super().__init__(nodes, shape, dtype, name)

    def compute(self, *input_values):
        """The numpy reference kernel: input arrays in, output array out."""
        raise NotImplementedError(f"{type(self).__name__} must implement compute(*input_values)")

    def infer_shape(self, *input_shapes):
        """The static output shape (None dims allowed); broadcasting by default (see shape_of)."""
        return broadcast_shapes(*input_shapes)

    def infer_dtype(self, *input_dtypes):
        """The output dtype; numpy's promotion of the input dtypes by default (see dtype_of)."""
        dtypes = [d for d in input_dtypes if d is not None]
        return np.result_type(*dtypes) if dtypes else np.dtype(np.float32)

    def passes_through(self, *input_shapes):
        """Whether, for inputs of these (fully known) shapes, compute returns its first input itself: plans
        specialised to feed shapes then skip the call (a gradient summed to the shape it already has)."""
        return False


def describe_operands(inputs):
    """"'x' (Placeholder, shape (None, 3)), ..." for error messages (eager Tensors say so)."""
    return ", ".join(f"'{getattr(n, 'name', 'tensor')}' ({n.op_type}, shape {n.shape})" for n in inputs)
