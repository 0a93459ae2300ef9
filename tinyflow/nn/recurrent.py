"""Recurrent layers LSTM, GRU and RNN as torch.nn's, unrolled over the (known) sequence length.

One cell function per kind (`lstm_cell`, `gru_cell`, `rnn_cell`) and one driver, `unroll`, serve the layers and
the ONNX import (onnx/rules/recurrent_rules.py). Weights keep torch's layout and gate order (LSTM i, f, g, o; GRU r, z,
n): weight_ih (gates·H, I), weight_hh (gates·H, H), biases (gates·H,), so torch weights load one to one.
"""
import functools

from ..autodiff.gradients import gradients
from ..eager.autograd import grad as eager_grad
from ..eager.grad_mode import enable_grad
from ..errors import ArgumentError, ShapeError
from ..ops.elementwise_ops import relu, sigmoid, tanh, zeros_like
from ..ops.array_ops import checks, concat, get_item, reshape, transpose
from ..ops.matmul import matmul
from ..nodes.node import is_eager
from ..ops.recurrent_cells import CellGrad, GRUCell, LSTMCell
from ..ops.registry import register_gradient
from ..ops.shape_ops import split, stack
from .layer import Layer, flags, sizes


def _linear(x, w_t, b):
    return matmul(x, w_t) if b is None else matmul(x, w_t) + b


def lstm_cell(x_gates, state, w_hh_t, b_hh):
    """One LSTM step: x_gates = x W_ihᵀ + b_ih (+ b_hh), state (h, [h, c]) -> (h', [h', c']), gates i, f, g, o as
    torch: c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c'), computed by one op (LSTMCell) keeping h and c together."""
    h, packed = state
    packed = LSTMCell(x_gates, _linear(h, w_hh_t, b_hh), packed)
    return get_item(packed, 0), packed


def cell_by_ops(cell, x_gates, h_gates, state):
    """What the cell op `cell` ("LSTMCell" or "GRUCell") computes, written with elementwise ops."""
    if cell == "LSTMCell":
        i, f, g, o = split(x_gates + h_gates, 4, axis=-1)
        c = sigmoid(f) * get_item(state, 1) + sigmoid(i) * tanh(g)
        return stack([sigmoid(o) * tanh(c), c], 0)
    (x_r, x_z, x_n), (h_r, h_z, h_n) = split(x_gates, 3, axis=-1), split(h_gates, 3, axis=-1)
    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
    n = tanh(x_n + r * h_n)
    return n + z * (state - n)


@register_gradient(CellGrad)
def _second_derivative(op, grad):
    """CellGrad's gradient (a gradient penalty through a recurrent layer): the cell written with ops, differentiated
    twice. Slow, but a second derivative is rare; the fused kernels serve the first."""
    if is_eager(op):  # eager: the same on leaves holding the inputs' values (so no third derivative)
        leaves = [value.detach().requires_grad_(True) for value in op.inputs]
        with enable_grad():
            first = eager_grad([cell_by_ops(op.cell, *leaves[:3])], [leaves[op.index]], [leaves[3]], create_graph=True)
            return list(eager_grad(first, leaves, [grad], allow_unused=True))
    x_gates, h_gates, state, seed = op.inputs
    first = gradients(cell_by_ops(op.cell, x_gates, h_gates, state), [x_gates, h_gates, state], seed)[op.index]
    return gradients(first, list(op.inputs), grad)


def gru_cell(x_gates, state, w_hh_t, b_hh, linear_before_reset=True):
    """One GRU step, gates r, z, n as torch: r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r h_n),
    h' = (1 - z) n + z h, computed by one op (GRUCell); linear_before_reset=False: ONNX's
    n = tanh(x_n + (r h) W_hnᵀ + b_hn), whose product comes after r, as graph ops."""
    h, = state
    if linear_before_reset:
        return (GRUCell(x_gates, _linear(h, w_hh_t, b_hh), h),)
    x_r, x_z, x_n = split(x_gates, 3, axis=-1)
    size = x_n.shape[-1]
    w_rz, w_n = split(w_hh_t, [2 * size, size], axis=-1)
    b_rz, b_n = (None, None) if b_hh is None else split(b_hh, [2 * size, size], axis=-1)
    h_r, h_z = split(_linear(h, w_rz, b_rz), 2, axis=-1)
    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
    n = tanh(x_n + _linear(r * h, w_n, b_n))
    return (n + z * (h - n),)  # (1 - z) n + z h


def rnn_cell(x_gates, state, w_hh_t, b_hh, nonlinearity="tanh"):
    """One Elman RNN step: h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh), act tanh or relu."""
    return ((tanh if nonlinearity == "tanh" else relu)(x_gates + _linear(state[0], w_hh_t, b_hh)),)


def unroll(cell, x, w_ih, w_hh, b_ih, b_hh, state, reverse=False):
    """One direction of one layer over time-major x (T, N, I) from `state` ((N, H) nodes, None for zeros):
    (outputs (T, N, H), final state tuple). The input projection of all steps is one matrix product, and it adds
    b_hh too, except for a GRU (whose n gate multiplies its part by r)."""
    steps, size, hidden = x.shape[0], x.shape[-1], w_hh.shape[-1]
    if steps is None:
        raise ShapeError(f"a recurrent layer needs a known sequence length, got an input of shape {x.shape}; "
                         "give the time axis a fixed size (it is unrolled step by step)")
    if b_hh is not None and getattr(cell, "func", cell) is not gru_cell:
        b_ih, b_hh = b_ih + b_hh, None
    x_gates = reshape(_linear(reshape(x, (-1, size)), transpose(w_ih), b_ih), (steps, -1, w_ih.shape[0]))
    zeros = zeros_like(get_item(x_gates, (0, slice(None), slice(0, hidden)))) if None in state else None
    state = tuple(zeros if s is None else s for s in state)
    if len(state) == 2:  # LSTM: its cell op reads c from [h, c]
        state = (state[0], stack(state, 0))
    w_hh_t, states = transpose(w_hh), [None] * steps
    for t in reversed(range(steps)) if reverse else range(steps):
        state = cell(get_item(x_gates, t), state, w_hh_t, b_hh)
        states[t] = state[-1]
    if len(state) == 1:
        return stack(states, 0), state
    # LSTM: the steps' [h, c] joined in one op, (T·2, N, H), and their h read as one view
    outputs = get_item(reshape(concat(states, 0), (steps, 2, -1, hidden)), (slice(None), 0))
    return outputs, (state[0], get_item(state[1], 1))


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

    gates, states, cell = 4, 2, staticmethod(lstm_cell)


class GRU(_Recurrent):
    """Gated recurrent unit, as torch.nn.GRU: (output, h_n) = gru(x, h_0)."""

    gates, states, cell = 3, 1, staticmethod(gru_cell)


class RNN(_Recurrent):
    """Elman RNN with tanh or relu, as torch.nn.RNN: (output, h_n) = rnn(x, h_0)."""

    gates, states = 1, 1

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 bidirectional=False, name=None, dtype="float32"):
        if not isinstance(nonlinearity, str) or nonlinearity not in ("tanh", "relu"):
            checks("RNN", name).fail("nonlinearity", nonlinearity, "is not one", "pass 'tanh' or 'relu'")
        self.cell = functools.partial(rnn_cell, nonlinearity=nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, bidirectional, name, dtype)
