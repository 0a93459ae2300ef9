"""The pointwise part of one recurrent step as one op (nn/recurrent.py's cells), and its backward as one op.

A step's matrix products stay MatMul ops; a cell op takes their results and does the rest in one pass over the gates:
    LSTMCell(x_gates, h_gates, state) -> (2, N, H) state: gates i, f, g, o = x_gates + h_gates (N, 4H, torch's order),
        state (2, N, H) holds h and c; c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c'), out = [h', c']
    GRUCell(x_gates, h_gates, h) -> h': x_gates = x W_ihᵀ + b_ih, h_gates = h W_hhᵀ + b_hh (N, 3H), gates r, z, n;
        r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r h_n), h' = n + z (h - n)  (ONNX linear_before_reset=1)
Their gradients are CellGrad ops recomputing the activations from the same inputs (nothing else is kept per step):
CellGrad(*inputs, grad, cell=..., index=k) is the gradient of input k.
"""
import numpy as np

from ..errors import ShapeError
from ..shapes import shapes_compatible
from ..nodes import Operation
from .elementwise_ops import stable_sigmoid
from .registry import register_gradient


def lstm_activations(x_gates, h_gates):
    """σ(i), σ(f), tanh(g), σ(o) of the gates x_gates + h_gates (torch's order)."""
    i, f, g, o = np.split(x_gates + h_gates, 4, axis=-1)
    return stable_sigmoid(i), stable_sigmoid(f), np.tanh(g), stable_sigmoid(o)


def gru_activations(x_gates, h_gates):
    """r, z, n and h_n (the hidden part of n's pre-activation, which n's gradient needs) of a GRU step."""
    x_r, x_z, x_n = np.split(x_gates, 3, axis=-1)
    h_r, h_z, h_n = np.split(h_gates, 3, axis=-1)
    r, z = stable_sigmoid(x_r + h_r), stable_sigmoid(x_z + h_z)
    return r, z, np.tanh(x_n + r * h_n), h_n


class CellOperation(Operation):
    """A recurrent cell's op on (x_gates, h_gates, state): gates (N, gates·H), a state (N, H), or (2, N, H) packed."""

    abstract = True
    gates = packs = 0  # packs: 1 when the state holds h and c along a leading axis of 2

    def infer_shape(self, *shapes):
        return checked_state_shape(type(self), *shapes)


def checked_state_shape(cell, x_shape, h_shape, state_shape, grad_shape=None):
    """The state's shape, or a ShapeError saying what the cell op (class `cell`) takes (None fits all)."""
    fits = None in (x_shape, h_shape, state_shape)
    if not fits and len(state_shape) == 2 + cell.packs:  # gates (N, gates·H), the state, its gradient
        n, h = state_shape[-2:]
        expected = (n, None if h is None else cell.gates * h)
        pairs = ((x_shape, expected), (h_shape, expected), (grad_shape, state_shape))
        fits = tuple(state_shape[:cell.packs]) in ((), (2,), (None,)) and all(
            shapes_compatible(*pair) for pair in pairs)
    if not fits:
        raise ShapeError(f"expected gates (N, {cell.gates}·H) twice, a state {'(2, N, H)' if cell.packs else '(N, H)'}"
                         f"{' and its gradient' if grad_shape else ''}, got {x_shape}, {h_shape}, {state_shape}"
                         f"{f', {grad_shape}' if grad_shape else ''}; pass the gates of one step")
    return state_shape


class LSTMCell(CellOperation):
    """One LSTM step's pointwise part: (x_gates, h_gates, [h, c]) -> [h', c'] (see the module).  Gradient: CellGrad."""

    gates, packs = 4, 1  # the state packs h and c along a leading axis of 2

    def compute(self, x_gates, h_gates, state):
        i, f, g, o = lstm_activations(x_gates, h_gates)
        c = f * state[1] + i * g
        return np.stack([o * np.tanh(c), c])


class GRUCell(CellOperation):
    """One GRU step's pointwise part: (x_gates, h_gates, h) -> h' (see the module).  Gradient: CellGrad."""

    gates, packs = 3, 0

    def compute(self, x_gates, h_gates, h):
        r, z, n, _ = gru_activations(x_gates, h_gates)
        return n + z * (h - n)


class CellGrad(Operation):
    """The gradient of input `index` of a cell op (`cell` its op type) for the gradient `grad` of its output."""

    def __init__(self, x_gates, h_gates, state, grad, cell, index, name=None):
        self.cell, self.index = cell, index
        super().__init__(x_gates, h_gates, state, grad, name=name)

    def infer_shape(self, x_shape, h_shape, state_shape, grad_shape):
        checked_state_shape(CELLS[self.cell], x_shape, h_shape, state_shape, grad_shape)
        return (x_shape, h_shape, state_shape)[self.index]

    def compute(self, x_gates, h_gates, state, grad):
        if self.cell == "LSTMCell":
            i, f, g, o = lstm_activations(x_gates, h_gates)
            tanh_c = np.tanh(f * state[1] + i * g)
            d_c = grad[1] + grad[0] * o * (1 - tanh_c * tanh_c)  # through c' and through h' = σ(o) tanh(c')
            if self.index == 2:
                return np.stack([np.zeros_like(d_c), d_c * f])  # h reaches the cell through h_gates only
            return np.concatenate([d_c * g * i * (1 - i), d_c * state[1] * f * (1 - f), d_c * i * (1 - g * g),
                                   grad[0] * tanh_c * o * (1 - o)], axis=-1)
        r, z, n, h_n = gru_activations(x_gates, h_gates)
        if self.index == 2:
            return grad * z
        d_n = grad * (1 - z) * (1 - n * n)  # of n's pre-activation x_n + r h_n
        return np.concatenate([d_n * h_n * r * (1 - r), grad * (state - n) * z * (1 - z),
                               d_n if self.index == 0 else d_n * r], axis=-1)


CELLS = {"LSTMCell": LSTMCell, "GRUCell": GRUCell}


@register_gradient(LSTMCell)
def _lstm_cell_grad(op, grad):
    gates = CellGrad(*op.inputs, grad, "LSTMCell", 0)  # x_gates and h_gates are added first: one gradient
    return [gates, gates, CellGrad(*op.inputs, grad, "LSTMCell", 2)]


register_gradient(GRUCell)(lambda op, grad: [CellGrad(*op.inputs, grad, "GRUCell", k) for k in range(3)])
# CellGrad's own gradient (a second derivative through a cell) is nn/recurrent.py's: it differentiates the cell
# written with elementwise ops, which takes the gradient walk (a layer above this one)
