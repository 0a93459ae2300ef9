"""What every backend is: a name, an availability check, and a kernel table keyed by op type."""


class Backend:
    """A named table of kernels `fn(op, *input_values)`; ops it lacks run their numpy `compute`."""

    name = "base"
    kernels = {}

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
        fn = self.kernels.get(op.op_type)
        if fn is None:
            return op.compute
        return lambda *values: fn(op, *values)

    def __repr__(self):
        return f"<tinyflow backend '{self.name}'>"
