"""MultiTensorUpdate: the update ops of one train op as one node (what PyTorch calls a "foreach" optimizer).

The graph optimiser's multi_tensor pass (tinyflow/passes/multi_tensor.py) builds it; users
never do. Its inputs are each member's inputs in turn (variable, gradient, learning rate,
slots). Its numpy compute runs the members' own updates one after the other; the C backend
runs all of them in one call (tf_update_multi), since on a small model the fixed cost of a
call per parameter was a fifth of a training step. Other backends run the members' kernels.
"""
from ..nodes import Operation


class MultiTensorUpdate(Operation):
    """members[0] ... members[-1] (ApplyUpdate ops of one optimizer and dtype), in one step; no value."""

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk
    stateful = True

    def compute(self, *values):
        """Each member's numpy update on its own inputs (the reference, and the fallback)."""
        for member, span in zip(self.members, self.spans):
            member.compute(*values[span])

    def infer_shape(self, *shapes):
        return ()

    def infer_dtype(self, *dtypes):
        return None

    def bind_kernel(self, backend):
        """All members in one call where the backend can (`backend.multi_update`), else each member's kernel."""
        kernels = [backend.kernel(member) for member in self.members]
        together = getattr(backend, "multi_update", None)

        def run(*values):
            if together is None or not together(self, values):
                for kernel, span in zip(kernels, self.spans):
                    kernel(*values[span])
        return run

    def __repr__(self):
        return f"<MultiTensorUpdate '{self.name}' of {len(self.members)} {self.members[0].op_type} ops>"


def multi_tensor_update(members):
    """The MultiTensorUpdate standing for `members` (update ops of one optimizer and dtype), named after them."""
    from ..passes.ir import make_node  # the passes import the optimizers: imported when first needed
    inputs, spans = [], []
    for member in members:
        spans.append(slice(len(inputs), len(inputs) + len(member.inputs)))
        inputs.extend(member.inputs)
    node = make_node(MultiTensorUpdate, inputs, members[-1], shape=(), members=list(members), spans=spans)
    node.name = f"{members[0].name.rsplit('/', 1)[0]}/multi_tensor_update"  # e.g. Adam/multi_tensor_update
    return node
