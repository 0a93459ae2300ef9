"""Elementwise fusion: a maximal group of elementwise ops becomes one fused node, one kernel.

Rule: from an elementwise op (the root, latest first), absorb each input that is an elementwise op of the same float
dtype, not fetched or fed, whose every reader is in the group. Two or more ops become one FusedElementwise node reading
the group's outside inputs (which may broadcast; scalar constants go into the kernel), on forward and gradient chains.
Its `compute` runs each member's numpy kernel; the C and OpenCL backends generate one kernel (backends/fused.py).
"""
import numpy as np

from ..ops.elementwise_ops import ElementwiseOp
from ..errors import ExecutionError, describe
from ..nodes import Constant, Operation
from .ir import is_leaf, make_node

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
MAX_GROUP = 1024  # ops per kernel: a longer chain becomes several kernels (1,024 compile in 1.5-3 s, off the run)


class FusedElementwise(Operation):
    """members[-1](...members[0](inputs)...) in one kernel; program[j] = (op_type, args) of members[j], each arg
    ("x", k) the fused node's input k, ("t", i) the value of members[i], or ("c", array) a constant."""

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk

    def compute(self, *inputs):
        """Run the members' numpy kernels in order (the reference, and the fallback without a compiler)."""
        return np.asarray(self.run_members(inputs))

    def run_members(self, inputs, kernels=None):
        """The last member's value, each member computed in turn by its kernel (default: its numpy compute)."""
        values = []
        for j, (member, (_, args)) in enumerate(zip(self.members, self.program)):
            operands = [inputs[i] if kind == "x" else values[i] if kind == "t" else i for kind, i in args]
            try:
                values.append(member.compute(*operands) if kernels is None else kernels[j](*operands))
            except Exception as exc:  # noqa: BLE001 - name the member the user wrote, and its creation site
                shapes = ", ".join(str(getattr(v, "shape", ())) for v in operands)
                raise ExecutionError(
                    f"{describe(getattr(member, 'original', member))} failed inside the fused kernel "
                    f"'{self.name}' (which computes {self.member_summary()}): {type(exc).__name__}: {exc}. "
                    f"Its inputs had shapes {shapes}. Run with tfl.Session(optimize=False) to run the ops "
                    "one by one.") from exc
        return values[-1]

    def bind_kernel(self, backend):
        """The callable running this node on `backend`: each backend says how it runs fused nodes."""
        return backend.fused_kernel(self)

    def member_summary(self):
        """'Add a (x.py:3) -> Sigmoid s (x.py:4)': the member ops with their creation sites."""
        return " -> ".join(f"{m.op_type} '{m.name}' ({m.creation_site})" for m in self.members)

    def __repr__(self):
        return f"<FusedElementwise '{self.name}' of {len(self.members)} ops: {[m.op_type for m in self.members]}>"


def fuse_elementwise(graph):
    """A copy of `graph` with each fusible group replaced by one fused node; (graph, counts)."""
    graph = graph.copy()
    consumers = graph.consumers()
    position = {node: i for i, node in enumerate(graph.nodes)}
    assigned, groups = set(), []
    for root in reversed(graph.nodes):
        if root in assigned or not _fusible(root, graph):
            continue
        members, frontier = {root}, [root]
        while frontier and len(members) < MAX_GROUP:
            # an input joins once all its readers are members; a reader joining later brings it back here
            for inp in frontier.pop().inputs:
                if (inp not in members and inp not in assigned and _fusible(inp, graph)
                        and inp.dtype == root.dtype and not graph.is_fetched(inp)
                        and all(c in members for c in consumers[inp]) and len(members) < MAX_GROUP):
                    members.add(inp)
                    frontier.append(inp)
        if len(members) > 1:
            assigned |= members
            groups.append((root, sorted(members, key=position.get)))
    graph.rewrite({root: _fused_node(root, members) for root, members in groups}.get, fresh=True)
    return graph, {"fused_groups": len(groups), "fused_ops": sum(len(m) for _, m in groups)}


def _fusible(node, graph):
    return (not is_leaf(node) and node not in graph.fed and isinstance(node, ElementwiseOp)
            and node.dtype in FLOATS and node.shape is not None
            and all(i.dtype == node.dtype for i in node.inputs))


def _fused_node(root, members):
    """The FusedElementwise node computing `root` from the group's outside inputs."""
    position = {m: j for j, m in enumerate(members)}
    inputs, program = {}, []  # the outside inputs, each -> its position
    for member in members:
        args = []
        for inp in member.inputs:
            if inp in position:
                args.append(("t", position[inp]))
            elif isinstance(inp, Constant) and inp.value.size == 1 and inp.value.ndim <= len(root.shape):
                args.append(("c", inp.value))  # written into the kernel as a literal
            else:
                args.append(("x", inputs.setdefault(inp, len(inputs))))
        program.append((member.op_type, tuple(args)))
    return make_node(FusedElementwise, list(inputs), root, members=members, program=program)
