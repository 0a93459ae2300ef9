"""Convolution epilogues: Conv → Add(per-channel bias) → Relu / Clip(constant bounds) becomes one ConvBiasAct node, so
a backend adds the bias and clips while the convolution's output is still in cache, instead of one more pass over it.

Rule: an Add of a Conv and a bias of shape (1, C, 1, ...) (or (C, 1, ...)), then a Relu or a Clip by scalar constants
of that (or of a bare Conv), each intermediate read by the next op only, not fetched and not fed. Training graphs
keep their gradients: the Relu's gradient reads its output, which the fused node computes; a Clip's reads its input,
so a Clip is fused only where nothing else reads that input (inference).
"""
import numpy as np

from ..ops.conv import Conv
from .ir import NODE_FIELDS, make_node, scalar_constant

_NO_BOUNDS = (-np.inf, np.inf)


class ConvBiasAct(Conv):
    """min(max(conv(x, w) + bias, low), high): inputs (x, w) or (x, w, bias), the Conv's window attributes, `bounds`
    (low, high) ((0, inf) for a relu, (-inf, inf) for none), and `members`, the Conv, Add and Relu/Clip it stands for:
    the numpy reference, and what backends without a kernel of their own for it run."""

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk

    def compute(self, x, w, *bias):
        """The members' numpy kernels in turn (the reference, and the C backend's fallback)."""
        return self.run_members((x, w, *bias), [member.compute for member in self.members])

    def run_members(self, values, kernels):
        """The last member's value, each member computed by its kernel in `kernels`."""
        x, w, *bias = values
        y = kernels[0](x, w)
        for member, kernel in zip(self.members[1:], kernels[1:]):
            if member.op_type == "Add":
                y = kernel(bias[0], y) if self.bias_first else kernel(y, bias[0])
            else:  # Relu, or Clip by its constant bounds
                y = kernel(y, *[bound.value for bound in member.inputs[1:]])
        return y

    def bind_kernel(self, backend):
        """The backend's ConvBiasAct kernel where it has one (C), else its kernels of the members in turn (OpenCL)."""
        entry = backend.kernels.get(self.op_type)
        if entry is not None:
            return lambda *values: backend.call(entry, self, values)
        kernels = [backend.kernel(member) for member in self.members]
        return lambda *values: self.run_members(values, kernels)

    def __repr__(self):
        return f"<ConvBiasAct '{self.name}' of {[m.op_type for m in self.members]} bounds={self.bounds}>"


def fuse_conv_epilogues(graph):
    """A copy of `graph` with each Conv → bias Add → Relu / Clip chain (or part of it) as one ConvBiasAct; (graph,
    counts)."""
    graph = graph.copy()
    consumers = graph.consumers()
    standing_for = {}  # ConvBiasAct -> the node it replaced (whose readers and fetches count)

    def only_read_by(node, reader):
        return graph.only_read_by(standing_for.get(node, node), reader, consumers)

    def rule(node):
        if node.op_type == "Add" and node.dtype == node.inputs[0].dtype == node.inputs[1].dtype:
            for position, conv in enumerate(node.inputs):
                bias = node.inputs[1 - position]
                if type(conv) is Conv and only_read_by(conv, node) and _per_channel(bias, conv):
                    fused = _fused(conv, (bias,), node, [conv, node], _NO_BOUNDS, bias_first=position == 1)
                    standing_for[fused] = node
                    return fused
        bounds = _bounds(node)
        source = node.inputs[0] if bounds else None
        if type(source) is Conv and only_read_by(source, node):
            fused = _fused(source, (), node, [source, node], bounds, bias_first=False)
        elif isinstance(source, ConvBiasAct) and source.bounds == _NO_BOUNDS and only_read_by(source, node):
            fused = _fused(source, source.inputs[2:], node, source.members + [node], bounds, source.bias_first)
        else:
            return None
        standing_for[fused] = node
        return fused

    graph.rewrite(rule, fresh=True)
    return graph, {"fused_convolutions": sum(isinstance(node, ConvBiasAct) for node in graph.nodes)}


def _fused(conv, bias, like, members, bounds, bias_first):
    """The ConvBiasAct of `conv` (a Conv or a ConvBiasAct) with `bias` and `bounds`, standing for `like`."""
    window = {k: v for k, v in vars(conv).items() if k not in NODE_FIELDS | {"bounds", "bias_first"}}
    return make_node(ConvBiasAct, conv.inputs[:2] + tuple(bias), like, members=members, bounds=bounds,
                     bias_first=bias_first, **window)


def _per_channel(bias, conv):
    """Whether `bias` holds one value per output channel of `conv`, laid out to broadcast along its channel axis."""
    shape, out = bias.shape, conv.shape
    if shape is None or out is None or len(out) < 2 or out[1] is None or len(shape) > len(out):
        return False
    return (1,) * (len(out) - len(shape)) + tuple(shape) == (1, out[1]) + (1,) * (len(out) - 2)


def _bounds(node):
    """(low, high) of a Relu or of a Clip by scalar constants of its input's dtype, else None."""
    if node.op_type == "Relu":
        return (0.0, np.inf)
    bounds = tuple(scalar_constant(b, node) for b in node.inputs[1:]) if node.op_type == "Clip" else (None,)
    return None if None in bounds else bounds
