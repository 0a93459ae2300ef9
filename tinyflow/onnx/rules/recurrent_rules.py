"""Recurrent ops: LSTM, GRU, RNN, imported onto tinyflow's cells (tinyflow/nn/recurrent.py), so they train.

ONNX packs one layer's directions in W (D, gates·H, I), R (D, gates·H, H) and B (D, 2·gates·H) with gates
i, o, f, c (LSTM) and z, r, h (GRU); the rule gathers each direction's rows into torch's order (i, f, g, o and
r, z, n), which the cells use. The gathers are ops on the Variables, so gradients reach the initializers.
The cells' fused ops (LSTMCell, GRUCell) export as the ONNX nodes of their formulas, so an exported layer runs anywhere.
"""
import functools

import numpy as np

from ... import ops
from ...nn.recurrent import gru_cell, lstm_cell, rnn_cell, unroll
from ...errors import OnnxExportError
from .rule_tables import exports, imports

_TORCH_ORDER = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}  # ONNX gate blocks in torch's gate order
_ACTIVATIONS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"], "RNN": ["tanh"]}


@imports("LSTM", "GRU", "RNN")
def import_recurrent(ctx, node):
    """One recurrent layer, forward, reverse or bidirectional; outputs Y, Y_h (and Y_c for LSTM)."""
    kind = node.op_type
    x, w, r, b = ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3)
    direction = ctx.attr("direction", "forward")
    directions = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.fail(f"direction={direction!r} is not forward, reverse or bidirectional")
    cell = _cell(ctx, kind, len(directions))
    for attribute in ("clip", "activation_alpha", "activation_beta") + (("input_forget",) if kind == "LSTM" else ()):
        if ctx.attr(attribute, None) not in (None, 0, []):
            raise ctx.unsupported(f"the attribute {attribute}={ctx.attr(attribute)} (tinyflow's cells compute "
                                  f"torch.nn.{kind}'s formulas, without it)")
    if kind == "LSTM" and ctx.has_input(7):
        raise ctx.unsupported("peephole weights P (input 7)")
    layout = ctx.attr("layout", 0)
    if x.shape is None or len(x.shape) != 3 or r.shape is None or None in r.shape:
        raise ctx.fail(f"X (shape {x.shape}) must be of rank 3 and R (shape {r.shape}) of known shape")
    if layout:
        x = ops.transpose(x, (1, 0, 2))  # (N, T, I) -> the time-major (T, N, I) the cells run over
    hidden = r.shape[-1]
    if ctx.attr("hidden_size", hidden) != hidden:
        raise ctx.fail(f"hidden_size={ctx.attr('hidden_size')} differs from R's shape {r.shape}")
    if x.shape[0] is None:
        raise ctx.unsupported(f"X of shape {ctx.input_shape(0)} has no fixed sequence length, and tinyflow unrolls "
                              "the time steps; export the model with a fixed sequence length (no dynamic time axis)")
    lengths = ctx.value(4) if ctx.has_input(4) else x.shape[0]  # supported when all are full length (a no-op)
    if lengths is None:
        raise ctx.unsupported("sequence_lens computed at run time (give every sequence the full length and drop it)")
    if np.any(lengths != x.shape[0]):
        raise ctx.unsupported(f"sequence_lens {lengths.tolist()} on sequences of length {x.shape[0]}: tinyflow runs "
                              "every sequence over all time steps (export the model for full-length sequences only)")
    gates = len(_TORCH_ORDER[kind])
    rows = np.concatenate([np.arange(g * hidden, (g + 1) * hidden) for g in _TORCH_ORDER[kind]])
    initial = [ctx.input(i) for i in ((5, 6) if kind == "LSTM" else (5,))]

    def run(d, direction):  # one direction: (its outputs, its final state)
        biases = [None, None] if b is None else [ops.get_item(b, (d, rows + k * gates * hidden)) for k in (0, 1)]
        weights = [ops.get_item(w, (d, rows)), ops.get_item(r, (d, rows))] + biases
        state = tuple(None if s is None else ops.get_item(s, (slice(None), d) if layout else d) for s in initial)
        return unroll(cell, x, *weights, state, reverse=direction == "reverse")
    outputs, finals = zip(*[run(d, direction) for d, direction in enumerate(directions)])
    y = ops.stack(outputs, 1)  # (T, D, N, H)
    results = [ops.transpose(y, (2, 0, 1, 3)) if layout else y]  # layout 1: (N, T, D, H)
    results += [ops.stack(list(s), 1 if layout else 0) for s in zip(*finals)]  # (D, N, H) or (N, D, H)
    return tuple(result if ctx.output_used(k) else None for k, result in enumerate(results))


def _cell(ctx, kind, directions):
    """The tinyflow cell for the node's activations (only the defaults, and Relu for RNN, are supported)."""
    default = _ACTIVATIONS[kind] * directions
    activations = [a.lower() for a in ctx.attr("activations", default)]
    if kind == "RNN" and activations in (["relu"] * directions, ["tanh"] * directions):
        return functools.partial(rnn_cell, nonlinearity=activations[0])
    if activations != default:
        computes = "Tanh or Relu" if kind == "RNN" else ", ".join(a.title() for a in _ACTIVATIONS[kind])
        raise ctx.unsupported(f"the attribute activations={ctx.attr('activations')} (tinyflow's {kind} cell "
                              f"computes {computes} in each direction)")
    if kind == "GRU":
        return functools.partial(gru_cell, linear_before_reset=bool(ctx.attr("linear_before_reset", 0)))
    return lstm_cell


def _gate(ex, node, name, k, axis=1):
    """Block k of the hidden size H along `axis` of the ONNX value `name` (a gate of the gates, or c of [h, c])."""
    hidden = node.inputs[2].shape[-1]
    if hidden is None:
        raise OnnxExportError(f"{node.op_type} '{node.name}' has a state of unknown hidden size "
                              f"{node.inputs[2].shape}; give the layer a fixed hidden size")
    size = 1 if axis == 0 else hidden
    bounds = [ex.constant(np.array([v], np.int64), "gate") for v in (k * size, (k + 1) * size, axis)]
    return ex.emit("Slice", [name] + bounds, "gate")


@exports("LSTMCell")
def _export_lstm_cell(ex, node):
    """[h', c'] from Slice, Sigmoid, Tanh, Mul, Add, Concat nodes: c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c')."""
    x, h_gates, state = (ex.name_of(i) for i in node.inputs)
    gates = ex.emit("Add", [x, h_gates], "gates")
    i, f, g, o = (ex.emit("Tanh" if k == 2 else "Sigmoid", [_gate(ex, node, gates, k)], "gate") for k in range(4))
    c = ex.emit("Add", [ex.emit("Mul", [f, _gate(ex, node, state, 1, axis=0)], "Mul"), ex.emit("Mul", [i, g], "Mul")],
                "c")  # (1, N, H): the previous c keeps its leading axis
    return ex.emit("Concat", [ex.emit("Mul", [o, ex.emit("Tanh", [c], "Tanh")], "h"), c], "LSTMCell", axis=0)


@exports("GRUCell")
def _export_gru_cell(ex, node):
    """h' = n + z (h - n) from Slice, Sigmoid, Tanh, Mul, Add and Sub nodes (linear_before_reset: n's r h_n)."""
    x, h_gates, h = (ex.name_of(i) for i in node.inputs)
    xs, hs = ([_gate(ex, node, name, k) for k in range(3)] for name in (x, h_gates))
    r, z = (ex.emit("Sigmoid", [ex.emit("Add", [xs[k], hs[k]], "Add")], "gate") for k in range(2))
    n = ex.emit("Tanh", [ex.emit("Add", [xs[2], ex.emit("Mul", [r, hs[2]], "Mul")], "Add")], "n")
    return ex.emit("Add", [n, ex.emit("Mul", [z, ex.emit("Sub", [h, n], "Sub")], "Mul")], "GRUCell")
