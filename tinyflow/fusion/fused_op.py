"""FusedElementwise: the node that stands for a whole chain (or DAG) of elementwise ops.

The fusion pass builds it; users never do. Its `compute` is the readable numpy
form: each member op's own numpy kernel, in order, on the fused node's inputs.
Generated C and OpenCL kernels (codegen_c.py, opencl_kernel.py) compute the same
thing in one pass over the data.
"""
import numpy as np

from ..errors import ExecutionError, describe
from ..nodes import Operation


class FusedElementwise(Operation):
    """members[-1](...members[0](inputs)...) in one kernel; `program` says which value feeds which member.

    program[j] = (op_type, args) for members[j]; each arg is ("x", k) the fused
    node's input k, ("t", i) the value of members[i], or ("c", array) a constant.
    """

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk

    def compute(self, *inputs):
        """Run the members' numpy kernels in order (the reference, and the fallback without a compiler)."""
        values = []
        for member, (_, args) in zip(self.members, self.program):
            operands = [inputs[i] if kind == "x" else values[i] if kind == "t" else i for kind, i in args]
            try:
                values.append(member.compute(*operands))
            except Exception as exc:  # noqa: BLE001 - name the member the user wrote
                raise self.member_error(member, operands, exc) from exc
        return np.asarray(values[-1])

    def bind_kernel(self, backend):
        """The callable running this node on `backend` (table-driven backends ask ops that have one)."""
        from .dispatch import fused_kernel
        return fused_kernel(backend, self)

    def member_error(self, member, operands, exc):
        """An ExecutionError naming the failing member (its creation site) and the fused kernel."""
        shapes = ", ".join(str(getattr(v, "shape", ())) for v in operands)
        return ExecutionError(
            f"{describe(getattr(member, 'original', member))} failed inside the fused kernel '{self.name}' "
            f"(which computes {self.member_summary()}): {type(exc).__name__}: {exc}. Its inputs had shapes "
            f"{shapes}. Run with tfl.Session(optimize=False) to run the ops one by one.")

    def member_summary(self):
        """'Add a (x.py:3) -> Sigmoid s (x.py:4)': the member ops with their creation sites."""
        return " -> ".join(f"{m.op_type} '{m.name}' ({m.creation_site})" for m in self.members)

    def __repr__(self):
        return f"<FusedElementwise '{self.name}' of {len(self.members)} ops: {[m.op_type for m in self.members]}>"
