"""Recurrent ops: LSTM, GRU, RNN, imported onto tinyflow's cells (tinyflow/nn/recurrent.py), so they train.

ONNX packs one layer's directions in W (D, gates·H, I), R (D, gates·H, H) and B (D, 2·gates·H) with gates
i, o, f, c (LSTM) and z, r, h (GRU); the loop op reads them in that order (its `order`: where torch's gates i, f,
g, o and r, z, n are). The slices are ops on the Variables, so gradients reach the initializers.
A Recurrence exports unrolled, each step's cell as the ONNX nodes of its formulas, so an exported layer runs anywhere.
"""
import numpy as np

from ... import ops
from ...nn.recurrent import unroll
from ...ops.recurrent_cells import GATES, step_order
from ...errors import OnnxExportError
from .rule_tables import exports, imports

_TORCH_ORDER = {"LSTM": (0, 2, 3, 1), "GRU": (1, 0, 2), "RNN": (0,)}  # where torch's gates are among ONNX's blocks
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
    width = len(_TORCH_ORDER[kind]) * hidden
    initial = [ctx.input(i) for i in ((5, 6) if kind == "LSTM" else (5,))]

    def run(d, direction):  # one direction: (its outputs, its final state)
        biases = [None, None] if b is None else [ops.get_item(b, (d, slice(k * width, (k + 1) * width)))
                                                 for k in (0, 1)]
        weights = [ops.get_item(w, d), ops.get_item(r, d)] + biases
        state = tuple(None if s is None else ops.get_item(s, (slice(None), d) if layout else d) for s in initial)
        return unroll(cell, x, *weights, state, reverse=direction == "reverse", order=_TORCH_ORDER[kind])
    outputs, finals = zip(*[run(d, direction) for d, direction in enumerate(directions)])
    y = ops.stack(outputs, 1)  # (T, D, N, H)
    results = [ops.transpose(y, (2, 0, 1, 3)) if layout else y]  # layout 1: (N, T, D, H)
    results += [ops.stack(list(s), 1 if layout else 0) for s in zip(*finals)]  # (D, N, H) or (N, D, H)
    return tuple(result if ctx.output_used(k) else None for k, result in enumerate(results))


def _cell(ctx, kind, directions):
    """The Recurrence cell for the node's activations (only the defaults, and Relu for RNN, are supported)."""
    default = _ACTIVATIONS[kind] * directions
    activations = [a.lower() for a in ctx.attr("activations", default)]
    if kind == "RNN" and activations in (["relu"] * directions, ["tanh"] * directions):
        return f"RNN_{activations[0].upper()}"
    if activations != default:
        computes = "Tanh or Relu" if kind == "RNN" else ", ".join(a.title() for a in _ACTIVATIONS[kind])
        raise ctx.unsupported(f"the attribute activations={ctx.attr('activations')} (tinyflow's {kind} cell "
                              f"computes {computes} in each direction)")
    if kind == "GRU":
        return "GRU" if ctx.attr("linear_before_reset", 0) else "GRU_RESET_FIRST"
    return "LSTM"


def _split(ex, name, count, axis=-1):
    """The names of `count` equal parts of the ONNX value `name` along `axis` (one Split node)."""
    outputs = [ex.fresh("gate") for _ in range(count)]
    ex.emit("Split", [name], "gate", outputs=outputs, axis=axis)
    return outputs


def _export_step(ex, cell, order, x, h_gates, state, reset_product=None):
    """The ONNX nodes of one step's cell (its gates ordered as `order` says): the state after it (an LSTM's [h, c]
    as (2, N, H), else h). A GRU_RESET_FIRST's n gate reads reset_product(r h) instead of its part of h_gates."""

    def gates(name):  # the gate blocks of `name` in torch's order
        blocks = _split(ex, name, len(order))
        return [blocks[k] for k in order]
    if cell == "LSTM":
        i, f, g, o = (ex.emit("Tanh" if k == 2 else "Sigmoid", [gate], "gate")
                      for k, gate in enumerate(gates(ex.emit("Add", [x, h_gates], "gates"))))
        c_before = _split(ex, state, 2, axis=0)[1]  # (1, N, H): the state's c keeps its leading axis
        c = ex.emit("Add", [ex.emit("Mul", [f, c_before], "Mul"), ex.emit("Mul", [i, g], "Mul")], "c")
        return ex.emit("Concat", [ex.emit("Mul", [o, ex.emit("Tanh", [c], "Tanh")], "h"), c], "state", axis=0)
    if cell.startswith("GRU"):
        xs, hs = gates(x), gates(h_gates)
        r, z = (ex.emit("Sigmoid", [ex.emit("Add", [xs[k], hs[k]], "Add")], "gate") for k in range(2))
        h_n = ex.emit("Mul", [r, hs[2]], "Mul") if cell == "GRU" else reset_product(ex.emit("Mul", [r, state], "rh"))
        n = ex.emit("Tanh", [ex.emit("Add", [xs[2], h_n], "Add")], "n")
        return ex.emit("Add", [n, ex.emit("Mul", [z, ex.emit("Sub", [state, n], "Sub")], "Mul")], "h")
    return ex.emit("Tanh" if cell == "RNN_TANH" else "Relu", [ex.emit("Add", [x, h_gates], "Add")], "h")


@exports("Recurrence")
def _export_recurrence(ex, node):
    """The loop unrolled: per step a Gather of its x gates, MatMul (+ Add) of its h gates, the cell; states stacked."""
    x_gates, w_hh, state, *bias = (ex.name_of(i) for i in node.inputs)
    w_hh_t = ex.emit("Transpose", [w_hh], "w_hh_t")
    steps = node.inputs[0].shape[0]
    if steps is None:
        raise OnnxExportError(f"Recurrence '{node.name}' runs over {node.inputs[0].shape}, of unknown length; "
                              "give the sequence a fixed length")
    lstm, states, order = node.cell == "LSTM", [None] * steps, node.order or range(GATES[node.cell])
    reset_product = None
    if node.cell == "GRU_RESET_FIRST":  # n's h gate: (r h) W_hnᵀ + b_hn, W_hn the n block of W_hh (stored order)
        w_n = _split(ex, w_hh_t, 3)[order[2]]
        b_n = _split(ex, bias[0], 3)[order[2]] if bias else None

        def reset_product(rh):
            product = ex.emit("MatMul", [rh, w_n], "h_n")
            return ex.emit("Add", [product, b_n], "h_n") if b_n else product
    for t in step_order(steps, node.reverse):
        h = ex.emit("Gather", [state, ex.constant(np.array(0, np.int64), "h")], "h", axis=0) if lstm else state
        h_gates = ex.emit("MatMul", [h, w_hh_t], "h_gates")
        if bias:
            h_gates = ex.emit("Add", [h_gates, bias[0]], "h_gates")
        x = ex.emit("Gather", [x_gates, ex.constant(np.array(t, np.int64), "step")], "x_gates", axis=0)
        state = states[t] = _export_step(ex, node.cell, order, x, h_gates, state, reset_product)
    axes = ex.constant(np.array([0], np.int64), "axes")
    return ex.emit("Concat", [ex.emit("Unsqueeze", [s, axes], "state") for s in states], "Recurrence", axis=0)
