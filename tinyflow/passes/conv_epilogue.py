"""Convolution epilogues: Conv → Add(per-channel bias) → Add(residual) → Relu / Clip(constant bounds) becomes one
ConvBiasAct node, so a backend finishes the output while it is still in cache; inference batch norms fold into filters.

Rule: Add(Conv, bias (1, C, 1, ...) or (C, 1, ...)), then Add(·, a tensor of the output's shape, either order), then
Relu or Clip by scalar constants; each part optional, each intermediate read by the next op only, not fetched or fed.
Gradients survive: a Relu's reads its output, an Add's no operand; a Clip's reads its input, so it fuses only where
nothing else reads that input (inference).

Rule: γ·(conv(x, W) + b - μ)/r + β, r = √(σ² + ε), with μ, r, γ, β per channel and not computed from the convolution
(not the batch's statistics), of a convolution read by nothing else, becomes conv(x, W·s) + (b - μ)·s + β, s = γ/r;
s, W·s and the bias are graph ops over the parameters (they may be fine-tuned), folded where those are constants.
"""
import numpy as np

from ..graph import ancestors
from ..nodes import Constant, Placeholder
from ..ops.array_ops import Reshape
from ..ops.conv import Conv
from ..ops.elementwise_ops import Add, Divide, Multiply, Subtract
from ..shapes import broadcast_shapes
from .constant_folding import folded
from .ir import NODE_FIELDS, folded_constant, make_node, scalar_constant

_NO_BOUNDS = (-np.inf, np.inf)


class ConvBiasAct(Conv):
    """min(max(conv(x, w) + bias + residual, low), high): inputs (x, w, *optional bias and residual: `residual` says
    whether the last is one), `swapped` per extra (its Add's first operand?), the Conv's window, `bounds` and
    `members` (the Conv, Adds and Relu/Clip it stands for, which backends without its kernel run)."""

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk

    def compute(self, x, w, *extras):
        """The members' numpy kernels in turn (the reference, and the C backend's fallback)."""
        return self.run_members((x, w, *extras), [member.compute for member in self.members])

    def run_members(self, values, kernels):
        """The last member's value, each member computed by its kernel in `kernels`."""
        x, w, *extras = values
        extras = iter(zip(extras, self.swapped))
        y = kernels[0](x, w)
        for member, kernel in zip(self.members[1:], kernels[1:]):
            if member.op_type == "Add":
                extra, swapped = next(extras)
                y = kernel(extra, y) if swapped else kernel(y, extra)
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
    """A copy of `graph` with the rules above applied, each chain one ConvBiasAct; (graph, counts)."""
    graph = graph.copy()
    consumers = graph.consumers()
    standing_for = {}  # ConvBiasAct -> the node it replaced (whose readers and fetches count)
    folded_norms = 0

    def extends(source, node, bias=False, residual=False):
        """Whether `node` may join `source`'s chain: the bias only a Conv's, the residual before any activation."""
        if isinstance(source, ConvBiasAct):
            chain = not bias and not (residual and source.residual) and source.bounds == _NO_BOUNDS
        else:
            chain = type(source) is Conv
        return chain and graph.only_read_by(standing_for.get(source, source), node, consumers)

    def rule(node):
        nonlocal folded_norms
        fused = None
        if node.op_type == "Add" and node.dtype == node.inputs[0].dtype == node.inputs[1].dtype:
            for position, source in enumerate(node.inputs):
                extra = node.inputs[1 - position]  # a Conv's bias, or a residual
                bias = _per_channel(extra, source) and extends(source, node, bias=True)
                if bias or extra.shape == source.shape == node.shape and extends(source, node, residual=True):
                    fused = _fused(source, source.inputs + (extra,), node, _chain(source) + [node],
                                   getattr(source, "swapped", ()) + (position == 1,), residual=not bias)
                    break
            else:
                fused = _folded_batch_norm(node, graph, consumers, standing_for)
                folded_norms += fused is not None
        elif (bounds := _bounds(node)) and extends(node.inputs[0], node):
            source = node.inputs[0]
            fused = _fused(source, source.inputs, node, _chain(source) + [node],
                           getattr(source, "swapped", ()), bounds, getattr(source, "residual", False))
        if fused is not None:
            standing_for[fused] = node
        return fused

    graph.rewrite(rule, fresh=True)
    return graph, {"fused_convolutions": sum(isinstance(node, ConvBiasAct) for node in graph.nodes),
                   "folded_batch_norms": folded_norms}


def _chain(source):
    """The members of a Conv or ConvBiasAct."""
    return list(source.members) if isinstance(source, ConvBiasAct) else [source]


def _fused(conv, inputs, like, members, swapped, bounds=_NO_BOUNDS, residual=False):
    """The ConvBiasAct of `inputs` with `conv`'s window and this epilogue, standing for `like`."""
    window = {k: v for k, v in vars(conv).items() if k not in NODE_FIELDS | {"bounds", "swapped", "residual"}}
    return make_node(ConvBiasAct, inputs, like, members=members, bounds=bounds, swapped=swapped, residual=residual,
                     **window)


def _folded_batch_norm(node, graph, consumers, standing_for):
    """The ConvBiasAct computing `node` if it is an inference batch norm of a lone convolution, else None."""
    parts = inference_batch_norm(node, graph.fed)
    if parts is None:
        return None
    conv, mean, root, gamma, beta = parts
    bias = conv.inputs[2:] if isinstance(conv, ConvBiasAct) and not conv.residual else ()
    if not (type(conv) is Conv or bias) or isinstance(conv, ConvBiasAct) and conv.bounds != _NO_BOUNDS:
        return None  # (a Conv, or one with its bias only)
    if conv in ancestors((mean, root, gamma, beta), stop=graph.fed | {conv}):
        return None  # statistics of the batch (training): they change with every input
    replaced = standing_for.get(conv, conv)
    inside = ancestors([node], stop=graph.fed | {conv})  # a tfl.nn batch norm's Where also reads the batch's
    if replaced in graph.fed or graph.is_fetched(replaced) or not all(r in inside for r in consumers[replaced]):
        return None

    def op(cls, *inputs, **attributes):
        shape = attributes.pop("shape", None) or broadcast_shapes(*[i.shape for i in inputs])
        new = make_node(cls, inputs, node, shape=shape, **attributes)
        constant = folded(new)
        return new if constant is None else constant
    x, weight = conv.inputs[:2]
    scale = op(Divide, gamma, root)
    filters = (weight.shape[0],) + (1,) * (len(weight.shape) - 1)
    weight = op(Multiply, weight, op(Reshape, scale, target=filters, shape=filters))
    shift = op(Add, op(Multiply, op(Subtract, bias[0] if bias else folded_constant(0, node), mean), scale), beta)
    first = _chain(conv)[0]
    add = make_node(Add, (first, shift), node)
    return _fused(conv, (x, weight, shift), node, [first, add], (False,))


def inference_batch_norm(node, fed):
    """(x, μ, r, γ, β) if `node` is γ·(x - μ)/r + β, all shaped (1, C, 1, ...), maybe through a Where on a training
    flag fixed False (tfl.nn's batch norms, ONNX's BatchNormalization), else None; μ, r may be the batch's."""
    if node.op_type != "Add" or node.inputs[0].op_type != "Multiply":
        return None
    (normalized, gamma), beta = node.inputs[0].inputs, node.inputs[1]
    if normalized.op_type == "Where" and _fixed_false(normalized.inputs[0], fed):
        normalized = normalized.inputs[2]
    if normalized.op_type != "Divide" or normalized.inputs[0].op_type != "Subtract":
        return None
    (x, mean), root = normalized.inputs[0].inputs, normalized.inputs[1]
    if not all(_per_channel(p, x, exact=True) for p in (mean, root, gamma, beta)):
        return None
    return x, mean, root, gamma, beta


def _fixed_false(flag, fed):
    """Whether `flag` is False in every run of the plan: a Constant, or an unfed Placeholder's default."""
    value = flag.value if isinstance(flag, Constant) else flag.default if isinstance(flag, Placeholder) and \
        flag not in fed else None
    return value is not None and np.ndim(value) == 0 and not bool(value)


def _per_channel(bias, conv, exact=False):
    """Whether `bias` holds a value per channel of `conv` (any node), `exact`ly shaped (1, C, 1, ...)."""
    shape, out = bias.shape, conv.shape
    if shape is None or out is None or len(out) < 2 or out[1] is None or len(shape) > len(out):
        return False
    if exact and len(shape) != len(out):
        return False
    return (1,) * (len(out) - len(shape)) + tuple(shape) == (1, out[1]) + (1,) * (len(out) - 2)


def _bounds(node):
    """(low, high) of a Relu or of a Clip by scalar constants of its input's dtype, else None."""
    if node.op_type == "Relu":
        return (0.0, np.inf)
    bounds = tuple(scalar_constant(b, node) for b in node.inputs[1:]) if node.op_type == "Clip" else (None,)
    return None if None in bounds else bounds
