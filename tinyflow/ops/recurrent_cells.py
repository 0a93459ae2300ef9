"""A recurrent layer's loop over time as one op (nn/recurrent.py's layers), and its backward as one op.

Recurrence(x_gates, w_hh, state, *bias, cell=..., reverse=False, order=None): x_gates (T, N, G·H) holds every
step's input gates x W_ihᵀ + b (one matrix product before the loop), w_hh is W_hh (G·H, H), state the initial
state, bias b_hh (G·H,) where it cannot be folded into x_gates (a GRU's: r multiplies h_n). The gate blocks are in
torch's order, or gate g is block order[g] (ONNX's LSTM: (0, 2, 3, 1), GRU: (1, 0, 2)), so imported weights are used
as they are. Step t (last to first when reverse) computes h_gates = h W_hhᵀ (+ b_hh), then its cell (torch's mode
names and gate orders):
    LSTM      gates i, f, g, o: c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c'); the state (2, N, H) holds h and c
    GRU       gates r, z, n: r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r h_n), h' = n + z (h - n)
    GRU_RESET_FIRST   ONNX's GRU with linear_before_reset=0: the same, but h_n = (r h) W_hnᵀ + b_hn (r applies
              before the product) and n = tanh(x_n + h_n)
    RNN_TANH, RNN_RELU   h' = act(x_gates + h_gates)
Its value is the state after every step: (T, 2, N, H) for an LSTM, (T, N, H) otherwise.

RecurrenceGrad(x_gates, w_hh, state, *bias, grad, ...) is backpropagation through time: given the gradient of the
value, it runs the steps again and walks them back to (T, N, 2·G·H + S·H): per step, the gradient of its x gates, of
its h gates and of the whole state it started from (S = 2 for an LSTM's [h, c]); a GRU_RESET_FIRST's has H columns
more, the step's r h (what its n gate's product read). The gradient function turns those into the inputs' gradients
with a few ops: the weights' is one matrix product over all steps (and one more for a GRU_RESET_FIRST's n block).
A loop written in C runs T steps without going back to Python: an unrolled graph ran T matrix products and T cell ops.
"""
import numpy as np

from ..errors import ArgumentError, ShapeError
from ..nodes import Operation
from ..shapes import shapes_compatible
from .array_ops import concat, get_item, reshape, transpose
from .elementwise_ops import stable_sigmoid
from .matmul import matmul
from .reductions import reduce_sum
from .registry import register_gradient
from .shape_ops import unsqueeze

GATES = {"LSTM": 4, "GRU": 3, "GRU_RESET_FIRST": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _packs(cell):
    return 2 if cell == "LSTM" else 1


def _extra(cell):
    """RecurrenceGrad's columns per row after the state's gradient: a GRU_RESET_FIRST's r h."""
    return 1 if cell == "GRU_RESET_FIRST" else 0


def cell_step(cell, x, hg, state):
    """The state after one step from its gates x and hg (N, G·H) and the state before it (numpy)."""
    if cell == "LSTM":
        i, f, g, o = np.split(x + hg, 4, axis=-1)
        c = stable_sigmoid(f) * state[1] + stable_sigmoid(i) * np.tanh(g)
        return np.stack([stable_sigmoid(o) * np.tanh(c), c])
    if cell.startswith("GRU"):
        (x_r, x_z, x_n), (h_r, h_z, h_n) = np.split(x, 3, axis=-1), np.split(hg, 3, axis=-1)
        r, z = stable_sigmoid(x_r + h_r), stable_sigmoid(x_z + h_z)
        n = np.tanh(x_n + (r * h_n if cell == "GRU" else h_n))  # (GRU_RESET_FIRST: h_n has read r h)
        return n + z * (state - n)
    return np.tanh(x + hg) if cell == "RNN_TANH" else np.maximum(x + hg, 0)


def h_gates_reset_first(x, h, w_hh, bias):
    """A GRU_RESET_FIRST step's h gates (torch's order): h W_rzᵀ + b_rz, then (r h) W_nᵀ + b_n with r from the first."""
    size = h.shape[-1]
    bias = np.zeros(3 * size, h.dtype) if bias is None else bias
    rz = h @ w_hh[:2 * size].T + bias[:2 * size]
    r = stable_sigmoid(x[..., :size] + rz[..., :size])
    return np.concatenate([rz, (r * h) @ w_hh[2 * size:].T + bias[2 * size:]], axis=-1)


def cell_step_back(cell, x, hg, state, grad, w_hh):
    """(d x gates, d h gates, d state before but for the carry through W_hh) of one step, for the gradient `grad` of
    the state after it (numpy). A GRU_RESET_FIRST's n gate read r h through W_hn: that part of the carry, and r's
    gradient through it, are here; the carry through W_hr and W_hz is not."""
    if cell == "LSTM":
        i, f, g, o = (act(v) for act, v in zip((stable_sigmoid, stable_sigmoid, np.tanh, stable_sigmoid),
                                                np.split(x + hg, 4, axis=-1)))
        tanh_c = np.tanh(f * state[1] + i * g)
        d_c = grad[1] + grad[0] * o * (1 - tanh_c * tanh_c)  # through c' and through h' = σ(o) tanh(c')
        d_gates = np.concatenate([d_c * g * i * (1 - i), d_c * state[1] * f * (1 - f), d_c * i * (1 - g * g),
                                  grad[0] * tanh_c * o * (1 - o)], axis=-1)
        return d_gates, d_gates, np.stack([np.zeros_like(d_c), d_c * f])  # h reaches the step through h_gates only
    if cell.startswith("GRU"):
        (x_r, x_z, x_n), (h_r, h_z, h_n) = np.split(x, 3, axis=-1), np.split(hg, 3, axis=-1)
        r, z = stable_sigmoid(x_r + h_r), stable_sigmoid(x_z + h_z)
        reset_first = cell == "GRU_RESET_FIRST"
        n = np.tanh(x_n + (h_n if reset_first else r * h_n))
        d_n = grad * (1 - z) * (1 - n * n)  # of n's pre-activation
        d_z = grad * (state - n) * z * (1 - z)
        if not reset_first:
            d_r = d_n * h_n * r * (1 - r)
            return np.concatenate([d_r, d_z, d_n], axis=-1), np.concatenate([d_r, d_z, d_n * r], axis=-1), grad * z
        d_rh = d_n @ w_hh[2 * state.shape[-1]:]  # of r h, through W_hn
        d_gates = np.concatenate([d_rh * state * r * (1 - r), d_z, d_n], axis=-1)
        return d_gates, d_gates, grad * z + d_rh * r
    a = x + hg
    d_a = grad * (1 - np.tanh(a) ** 2) if cell == "RNN_TANH" else grad * (a > 0)
    return d_a, d_a, np.zeros_like(grad)


def gate_columns(order, hidden):
    """The columns of the gate blocks in torch's order, from blocks ordered as `order` says (see the module)."""
    return np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in order])


def step_order(steps, reverse):
    """The time indices in the order the loop runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def run_steps(cell, x_gates, w_hh, state, bias, reverse):
    """(every step's state, every step's h gates) of the loop (numpy)."""
    states = np.empty((len(x_gates),) + state.shape, x_gates.dtype)
    h_gates = np.empty_like(x_gates)
    for t in step_order(len(x_gates), reverse):
        if cell == "GRU_RESET_FIRST":
            h_gates[t] = h_gates_reset_first(x_gates[t], state, w_hh, bias)
        else:
            h_gates[t] = (state[0] if cell == "LSTM" else state) @ w_hh.T + (0 if bias is None else bias)
        states[t] = state = cell_step(cell, x_gates[t], h_gates[t], state)
    return states, h_gates


def checked_state(op, x_shape, w_shape, state_shape, bias_shape, grad_shape=None):
    """A ShapeError naming the shapes a Recurrence (or its RecurrenceGrad `op`) takes, unless they fit (None fits)."""
    packs, gates = _packs(op.cell), GATES[op.cell]
    fits = state_shape is None or len(state_shape) == 1 + packs
    if state_shape is not None and fits:
        n, h = state_shape[-2:]
        width = None if h is None else gates * h
        fits = (tuple(state_shape[:-2]) in ((), (2,), (None,))
                and shapes_compatible(x_shape, (None, n, width)) and shapes_compatible(w_shape, (width, h))
                and (bias_shape is None or shapes_compatible(bias_shape, (width,)))
                and (grad_shape is None or shapes_compatible(grad_shape, (None,) + tuple(state_shape))))
    if not fits:
        state = "(2, N, H)" if packs == 2 else "(N, H)"
        raise ShapeError(f"expected x_gates (T, N, {gates}·H), w_hh ({gates}·H, H), a state {state}, a bias "
                         f"({gates}·H,){' and the gradient of every state' if grad_shape else ''}; got "
                         f"{x_shape}, {w_shape}, {state_shape}{f', {bias_shape}' if bias_shape else ''}"
                         f"{f', {grad_shape}' if grad_shape else ''}; pass the gates of one {op.cell} layer")


class LoopOperation(Operation):
    """A Recurrence or its RecurrenceGrad: (x_gates, w_hh, state, bias if any, the value's gradient for the grad)."""

    abstract = True
    extra_inputs = 0  # after the bias: RecurrenceGrad's gradient of the value

    def __init__(self, x_gates, w_hh, state, *rest, cell, reverse=False, order=None, name=None):
        biases = len(rest) - self.extra_inputs
        orders = order is None or (cell in GATES and sorted(order) == list(range(GATES[cell])))
        if cell not in GATES or not 0 <= biases <= 1 or not orders:
            raise ArgumentError(f"{type(self).__name__} takes cell= one of {sorted(GATES)}, at most one bias and an "
                                f"order of its gates; got cell={cell!r}, {biases} biases, order={order}")
        self.cell, self.reverse, self.order = cell, bool(reverse), None if order is None else tuple(order)
        super().__init__(x_gates, w_hh, state, *rest, name=name)

    def in_torch_order(self, x_gates, w_hh, bias):
        """The numpy values with their gate blocks in torch's order, and the columns that took them there."""
        if self.order is None:
            return x_gates, w_hh, bias, None
        columns = gate_columns(self.order, w_hh.shape[1])
        return x_gates[..., columns], w_hh[columns], None if bias is None else bias[columns], columns


class Recurrence(LoopOperation):
    """A recurrent layer's steps over time in one op (see the module).  Gradient: RecurrenceGrad and a few ops."""

    def infer_shape(self, x_shape, w_shape, state_shape, bias_shape=None):
        checked_state(self, x_shape, w_shape, state_shape, bias_shape)
        return None if state_shape is None else (None if x_shape is None else x_shape[0],) + tuple(state_shape)

    def compute(self, x_gates, w_hh, state, bias=None):
        x_gates, w_hh, bias, _ = self.in_torch_order(x_gates, w_hh, bias)
        return run_steps(self.cell, x_gates, w_hh, state, bias, self.reverse)[0]


class RecurrenceGrad(LoopOperation):
    """Backpropagation through a Recurrence's steps for the gradient `grad` of its value (see the module)."""

    extra_inputs = 1

    def infer_shape(self, x_shape, w_shape, state_shape, *bias_and_grad):
        *bias, grad_shape = bias_and_grad
        checked_state(self, x_shape, w_shape, state_shape, bias[0] if bias else None, grad_shape)
        h = None if state_shape is None else state_shape[-1]
        return (tuple(x_shape[:2]) if x_shape is not None else (None, None)) + (
            None if h is None else (2 * GATES[self.cell] + _packs(self.cell) + _extra(self.cell)) * h,)

    def compute(self, x_gates, w_hh, state, *bias_and_grad):
        *bias, grad = bias_and_grad
        cell, steps = self.cell, len(x_gates)
        x_gates, w_hh, bias, columns = self.in_torch_order(x_gates, w_hh, bias[0] if bias else None)
        states, h_gates = run_steps(cell, x_gates, w_hh, state, bias, self.reverse)
        hidden = state.shape[-1]
        out = np.empty(x_gates.shape[:2] + (2 * x_gates.shape[-1] + (_packs(cell) + _extra(cell)) * hidden,),
                       x_gates.dtype)
        ran = list(step_order(steps, self.reverse))
        total = grad[ran[-1]]  # the gradient of the state after the step: the last one's is the output's alone
        for k in reversed(range(steps)):
            t = ran[k]
            before = state if k == 0 else states[ran[k - 1]]
            d_x, d_h, d_before = cell_step_back(cell, x_gates[t], h_gates[t], before, total, w_hh)
            d_before = d_before + (0 if k == 0 else grad[ran[k - 1]])
            extra = []
            if cell == "LSTM":
                d_before[0] += d_h @ w_hh
                flat = np.concatenate(list(d_before), axis=-1)  # per row [dh, dc]
            elif cell == "GRU_RESET_FIRST":  # the carry through W_hn is cell_step_back's; r h for W_hn's gradient
                d_before = flat = d_before + d_h[..., :2 * hidden] @ w_hh[:2 * hidden]
                extra = [stable_sigmoid(x_gates[t][..., :hidden] + h_gates[t][..., :hidden]) * before]
            else:
                d_before = flat = d_before + d_h @ w_hh
            out[t] = np.concatenate([d_x, d_h, flat, *extra], axis=-1)
            total = d_before
        if columns is not None:  # the gates' gradients laid out as the gates
            width = len(columns)
            for start in (0, width):
                out[..., start + columns] = out[..., start: start + width].copy()
        return out


@register_gradient(Recurrence)
def _recurrence_grad(op, grad):
    """The inputs' gradients from RecurrenceGrad's per-step gradients: the weights' and the bias's are sums over
    every step, the state's is the first step's."""
    x_gates, w_hh, state, *bias = op.inputs
    back = RecurrenceGrad(*op.inputs, grad, cell=op.cell, reverse=op.reverse, order=op.order)
    width, hidden = w_hh.shape
    every = slice(None)
    d_x, d_h = (get_item(back, (every, every, slice(k * width, (k + 1) * width))) for k in (0, 1))
    lstm = op.cell == "LSTM"
    h0, hs = (get_item(state, 0), get_item(op, (every, 0))) if lstm else (state, op)
    # the h before each step: the initial one, then every step's but the last (in the loop's order)
    before = (concat([get_item(hs, slice(1, None)), unsqueeze(h0, 0)], 0) if op.reverse
              else concat([unsqueeze(h0, 0), get_item(hs, slice(None, -1))], 0))
    d_w = matmul(transpose(reshape(d_h, (-1, width))), reshape(before, (-1, hidden)))
    if op.cell == "GRU_RESET_FIRST":  # W_hn's product read r h (RecurrenceGrad's last columns), not h
        k = (op.order or (0, 1, 2))[2]  # where the n block is stored
        d_n = reshape(get_item(d_h, (every, every, slice(k * hidden, (k + 1) * hidden))), (-1, hidden))
        r_h = reshape(get_item(back, (every, every, slice(2 * width + hidden, None))), (-1, hidden))
        d_w = concat([matmul(transpose(d_n), r_h) if j == k else get_item(d_w, slice(j * hidden, (j + 1) * hidden))
                      for j in range(3)], 0)
    d_state = get_item(back, (-1 if op.reverse else 0, every, slice(2 * width, 2 * width + _packs(op.cell) * hidden)))
    if lstm:  # per row [dh, dc] -> (2, N, H)
        d_state = transpose(reshape(d_state, (-1, 2, hidden)), (1, 0, 2))
    return [d_x, d_w, d_state] + [reduce_sum(d_h, (0, 1))] * len(bias)
# RecurrenceGrad's own gradient (a second derivative through a recurrent layer) is nn/recurrent.py's: it
# differentiates the steps written with ops, which takes the gradient walk (a layer above this one)
