"""What every backend is: a name, an availability check, and a kernel table keyed by op type."""
from ..nodes import Constant, Placeholder, Variable


def source_kernel(node):
    """Kernels of nodes without inputs: a Variable reads its current value when the step runs."""
    if isinstance(node, (Variable, Constant)):
        return lambda: node.value
    return lambda: node.default  # a Placeholder with a default (others are checked before running)


class Backend:
    """A named table of kernels `fn(op, *input_values)`; ops it lacks run their numpy `compute`."""

    name = "base"
    kernels = {}
    recycle = None  # fn(value) taking arrays a plan has dropped, for backends that reuse buffers

    @classmethod
    def is_available(cls):
        """Whether this machine can run the backend."""
        return True

    @classmethod
    def why_unavailable(cls):
        """What is missing and how to get it (only asked when unavailable)."""
        return ""

    def kernel(self, op):
        """The callable computing `op` from its input values: the table's kernel, else the op's compute."""
        if isinstance(op, (Variable, Constant, Placeholder)):
            return source_kernel(op)
        bind = getattr(op, "bind_kernel", None)
        if bind is not None:  # control flow: the kernel runs subgraphs on this same backend
            return bind(self)
        fn = self.kernels.get(op.op_type)
        if fn is None:
            return op.compute
        return lambda *values: fn(op, *values)

    def begin_run(self):
        """Called by Session.run before a run (backends that keep per-run state reset it)."""

    def to_host(self, value):
        """A fetched value as a numpy array (backends holding device arrays download here)."""
        return value

    def __repr__(self):
        return f"<tinyflow backend '{self.name}'>"
