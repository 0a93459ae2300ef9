"""The numpy backend: the readable reference. Every op's own `compute` is its kernel."""


class NumpyBackend:
    """Runs each op with its numpy `compute` method."""

    name = "numpy"
    kernels = {}  # op_type -> fn(op, *values); empty: the reference needs no overrides

    @classmethod
    def is_available(cls):
        """numpy is always there."""
        return True

    @classmethod
    def why_unavailable(cls):
        """Never called: numpy is always available."""
        return ""

    def kernel(self, op):
        """The callable computing `op` from its input values: a table entry, else the op's compute."""
        fn = self.kernels.get(op.op_type)
        if fn is None:
            return op.compute
        return lambda *values: fn(op, *values)

    def __repr__(self):
        return f"<tinyflow backend '{self.name}'>"
