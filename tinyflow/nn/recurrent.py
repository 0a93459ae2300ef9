"""Recurrent layers LSTM, GRU and RNN as torch.nn's, over a known sequence length. One driver, `unroll`, serves the
layers and the ONNX import: every step's input projection as one matrix product, then the loop as one Recurrence op.
Weights keep torch's layout and gate order (LSTM i, f, g, o; GRU r, z, n), so torch weights load one to one."""
import numpy as np

from ..autodiff.gradients import gradients
from ..eager.autograd import grad as eager_grad
from ..eager.grad_mode import enable_grad
from ..errors import ArgumentError, ShapeError
from ..ops.elementwise_ops import relu, sigmoid, tanh, zeros_like
from ..ops.array_ops import checks, concat, get_item, reshape, transpose
from ..ops.matmul import matmul
from ..nodes import is_eager
from ..ops.recurrent_cells import Recurrence, RecurrenceGrad, gate_columns, step_order
from ..ops.registry import register_gradient
from ..ops.shape_ops import split, stack
from .layer import Layer, flags, sizes


def _linear(x, w_t, b):
    return matmul(x, w_t) if b is None else matmul(x, w_t) + b


def cell_by_ops(cell, x_gates, h_gates, state):
    """One step of the Recurrence cell `cell` (its state after the step), written with elementwise ops."""
    if cell == "LSTM":
        i, f, g, o = split(x_gates + h_gates, 4, axis=-1)
        c = sigmoid(f) * get_item(state, 1) + sigmoid(i) * tanh(g)
        return stack([sigmoid(o) * tanh(c), c], 0)
    if cell.startswith("GRU"):
        (x_r, x_z, x_n), (h_r, h_z, h_n) = split(x_gates, 3, axis=-1), split(h_gates, 3, axis=-1)
        r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
        n = tanh(x_n + (r * h_n if cell == "GRU" else h_n))  # (GRU_RESET_FIRST: h_n has read r h)
        return n + z * (state - n)
    return (tanh if cell == "RNN_TANH" else relu)(x_gates + h_gates)


def _probe(like, eager):
    """A zero added where a gradient is wanted: the gradient walk delivers to leaves (eager) or to any node."""
    zero = zeros_like(like)
    return zero.detach().requires_grad_(True) if eager else zero


def _backprop_by_ops(op, x_gates, w_hh, state, *bias_and_seed):
    """What RecurrenceGrad `op` computes, as ops: the steps written with ops, each one's x gates, h gates and state
    before it probed, differentiated once (recorded, to be differentiated again)."""
    *bias, seed = bias_and_seed
    eager, lstm, steps = is_eager(op), op.cell == "LSTM", x_gates.shape[0]
    if op.order is not None:  # the steps as ops run in torch's gate order
        x_gates, w_hh, *bias = _torch_order(op.order, w_hh.shape[1], x_gates, w_hh, *bias)
    states, probes, read = [None] * steps, [None] * steps, [None] * steps
    for t in step_order(steps, op.reverse):
        x, probes[t] = get_item(x_gates, t), [_probe(state, eager)]
        before = state + probes[t][0]
        h_gates = _linear(get_item(before, 0) if lstm else before, transpose(w_hh), bias[0] if bias else None)
        probes[t] = [_probe(x, eager), _probe(h_gates, eager)] + probes[t]
        x, h_gates = x + probes[t][0], h_gates + probes[t][1]
        if op.cell == "GRU_RESET_FIRST":  # the n block's product reads r h: r from the probed gates
            size = before.shape[-1]
            read[t] = sigmoid(get_item(x, (slice(None), slice(0, size))) +
                              get_item(h_gates, (slice(None), slice(0, size)))) * before
            w_n, b_n = get_item(w_hh, slice(2 * size, None)), get_item(bias[0], slice(2 * size, None)) if bias else None
            h_gates = concat([get_item(h_gates, (slice(None), slice(0, 2 * size))),
                              _linear(read[t], transpose(w_n), b_n) + get_item(probes[t][1], (slice(None),
                                                                                               slice(2 * size, None)))],
                             -1)
        state = states[t] = cell_by_ops(op.cell, x, h_gates, before)
    flat = [p for step in probes for p in step]
    if eager:
        grads = eager_grad([stack(states, 0)], flat, [seed], create_graph=True, allow_unused=True)
    else:
        grads = gradients(stack(states, 0), flat, seed)
    grads = [zeros_like(p) if g is None else g for g, p in zip(grads, flat)]
    order, per_step = list(step_order(steps, op.reverse)), [None] * steps
    for k, t in enumerate(order):
        d_x, d_h, d_state = grads[3 * t: 3 * t + 3]
        if k > 0:  # the whole state's gradient: the value's own at the state before, too
            d_state = d_state + get_item(seed, order[k - 1])
        if lstm:  # [dh, dc] per row
            d_state = reshape(transpose(d_state, (1, 0, 2)), (-1, 2 * d_state.shape[-1]))
        if op.order is not None:  # the gates' gradients laid out as the gates
            back = np.argsort(gate_columns(op.order, d_state.shape[-1] // (2 if lstm else 1)))
            d_x, d_h = (get_item(d, (slice(None), back)) for d in (d_x, d_h))
        per_step[t] = concat([d_x, d_h, d_state] + ([read[t]] if read[t] is not None else []), -1)
    return stack(per_step, 0)


@register_gradient(RecurrenceGrad)
def _second_derivative(op, grad):
    """RecurrenceGrad's gradient (a gradient penalty through a recurrent layer): the steps written with ops,
    differentiated twice. Slow, but a second derivative is rare; the C loop serves the first."""
    if is_eager(op):  # eager: the same on leaves holding the inputs' values (so no third derivative)
        leaves = [value.detach().requires_grad_(True) for value in op.inputs]
        with enable_grad():
            return list(eager_grad([_backprop_by_ops(op, *leaves)], leaves, [grad], allow_unused=True))
    return gradients(_backprop_by_ops(op, *op.inputs), list(op.inputs), grad)


def _torch_order(order, hidden, x_gates, w_hh, *biases):
    """x_gates, W_hh and biases with their gate blocks in torch's order."""
    columns = gate_columns(order, hidden)
    return (get_item(x_gates, (slice(None), slice(None), columns)), get_item(w_hh, columns),
            *[None if b is None else get_item(b, columns) for b in biases])


def unroll(cell, x, w_ih, w_hh, b_ih, b_hh, state, reverse=False, order=None):
    """One direction of one layer over time-major x (T, N, I) from `state` ((N, H) nodes, None for zeros):
    (outputs (T, N, H), final state tuple); `cell` and `order` as Recurrence's. The input projection adds b_hh too,
    except for a GRU (whose n gate's part is multiplied by r, or reads r h)."""
    steps, size, hidden = x.shape[0], x.shape[-1], w_hh.shape[-1]
    if steps is None:
        raise ShapeError(f"a recurrent layer needs a known sequence length, got an input of shape {x.shape}; "
                         "give the time axis a fixed size (the loop over time runs step by step)")
    if b_hh is not None and not cell.startswith("GRU"):
        b_ih, b_hh = b_ih + b_hh, None
    x_gates = reshape(_linear(reshape(x, (-1, size)), transpose(w_ih), b_ih), (steps, -1, w_ih.shape[0]))
    zeros = zeros_like(get_item(x_gates, (0, slice(None), slice(0, hidden)))) if None in state else None
    state = tuple(zeros if s is None else s for s in state)
    states = Recurrence(x_gates, w_hh, stack(state, 0) if cell == "LSTM" else state[0],
                        *([] if b_hh is None else [b_hh]), cell=cell, reverse=reverse, order=order)
    last = get_item(states, 0 if reverse else -1)
    if cell == "LSTM":  # every step's h as one view of the states' [h, c]
        return get_item(states, (slice(None), 0)), (get_item(last, 0), get_item(last, 1))
    return states, (last,)


class _Recurrent(Layer):
    """A stack of recurrent layers with torch.nn.LSTM/GRU/RNN's arguments, weights and results."""

    gates = states = cell = None  # set by each kind

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, bidirectional=False,
                 name=None, dtype="float32"):
        self.input_size, self.hidden_size, self.num_layers = sizes(self, name, input_size=input_size,
                                                                   hidden_size=hidden_size, num_layers=num_layers)
        self.bias, self.batch_first, self.bidirectional = flags(self, name, bias=bias, batch_first=batch_first,
                                                                bidirectional=bidirectional)
        super().__init__(name, dtype)
        self.weights = []  # per layer and direction: (weight_ih, weight_hh, bias_ih, bias_hh)
        directions = 2 if self.bidirectional else 1
        for layer in range(self.num_layers):
            for suffix in ["", "_reverse"][:directions]:
                size = self.input_size if layer == 0 else self.hidden_size * directions
                shapes = {"weight_ih": (size,), "weight_hh": (self.hidden_size,), "bias_ih": (), "bias_hh": ()}
                names = [f"{kind}_l{layer}{suffix}" for kind in shapes]
                # torch draws every weight and bias from U(-1/√H, 1/√H): "uniform" with fan_in H
                found = [self.add_variable(n, (self.gates * self.hidden_size,) + s, "uniform", self.hidden_size)
                         if bias or n.startswith("weight") else None for n, s in zip(names, shapes.values())]
                for n, var in zip(names, found):
                    setattr(self, n, var)
                self.weights.append(found)

    def forward(self, x, hx=None):
        kind = type(self).__name__
        if x.shape is None or len(x.shape) != 3 or x.shape[-1] not in (None, self.input_size):
            axes = "N, T" if self.batch_first else "T, N"
            raise ShapeError(f"{kind} expects an input of shape ({axes}, {self.input_size}), got shape {x.shape}; "
                             "add a batch axis to a single sequence")
        initial = (hx if isinstance(hx, (tuple, list)) else (hx,)) if hx is not None else (None,) * self.states
        if len(initial) != self.states:
            raise ArgumentError(f"{kind} takes its initial state as {'(h_0, c_0)' if self.states == 2 else 'h_0'}, "
                                f"got {len(initial)} tensor(s)")
        if self.batch_first:
            x = transpose(x, (1, 0, 2))
        directions, finals = 2 if self.bidirectional else 1, []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                state = tuple(None if s is None else get_item(s, k) for s in initial)
                output, state = unroll(self.cell, x, *self.weights[k], state, reverse=direction == 1)
                outputs.append(output)
                finals.append(state)
            x = outputs[0] if directions == 1 else concat(outputs, -1)
        output = transpose(x, (1, 0, 2)) if self.batch_first else x
        final = tuple(stack(list(s), 0) for s in zip(*finals))
        return (output, final) if self.states == 2 else (output, final[0])


class LSTM(_Recurrent):
    """Long short-term memory, as torch.nn.LSTM: (output, (h_n, c_n)) = lstm(x, (h_0, c_0))."""

    gates, states, cell = 4, 2, "LSTM"


class GRU(_Recurrent):
    """Gated recurrent unit, as torch.nn.GRU: (output, h_n) = gru(x, h_0)."""

    gates, states, cell = 3, 1, "GRU"


class RNN(_Recurrent):
    """Elman RNN with tanh or relu, as torch.nn.RNN: (output, h_n) = rnn(x, h_0)."""

    gates, states = 1, 1

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 bidirectional=False, name=None, dtype="float32"):
        if not isinstance(nonlinearity, str) or nonlinearity not in ("tanh", "relu"):
            checks("RNN", name).fail("nonlinearity", nonlinearity, "is not one", "pass 'tanh' or 'relu'")
        self.cell = f"RNN_{nonlinearity.upper()}"
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, bidirectional, name, dtype)
