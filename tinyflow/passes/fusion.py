"""Elementwise fusion: a maximal group of elementwise ops becomes one fused node, one kernel.

Rule: starting from an elementwise op (the root, latest first), absorb each input
that is itself an elementwise op of the same float dtype, is not fetched or fed,
and whose every reader is already in the group, until nothing more joins. A group
of two or more ops becomes one FusedElementwise node with the group's outside
inputs; intermediates then never exist as arrays. Inputs may broadcast
(scalars, rows, columns); scalar constants are written into the kernel.
Works the same on forward chains and on the gradient chains backprop builds.
"""
import numpy as np

from ..ops.elementwise_ops import ElementwiseOp
from ..fusion.fused_op import FusedElementwise
from ..nodes import Constant
from .ir import is_leaf, make_node

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
MAX_GROUP = 2048  # ops per kernel: a longer chain becomes several kernels (the C compiler slows down past this)


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
    fused = {root: _fused_node(root, members) for root, members in groups}
    graph.rewrite(fused.get, fresh=True)
    return graph, {"fused_groups": len(groups), "fused_ops": sum(len(m) for _, m in groups)}


def _fusible(node, graph):
    return (not is_leaf(node) and node not in graph.fed and isinstance(node, ElementwiseOp)
            and node.dtype in FLOATS and node.shape is not None
            and all(i.dtype == node.dtype for i in node.inputs))


def _fused_node(root, members):
    """The FusedElementwise node computing `root` from the group's outside inputs."""
    position = {m: j for j, m in enumerate(members)}
    inputs, program = [], []
    for member in members:
        args = []
        for inp in member.inputs:
            if inp in position:
                args.append(("t", position[inp]))
            elif isinstance(inp, Constant) and inp.value.size == 1 and inp.value.ndim <= len(root.shape):
                args.append(("c", inp.value))  # written into the kernel as a literal
            else:
                if not any(inp is i for i in inputs):
                    inputs.append(inp)
                args.append(("x", next(k for k, i in enumerate(inputs) if i is inp)))
        program.append((member.op_type, tuple(args)))
    return make_node(FusedElementwise, inputs, root, members=members, program=program)
