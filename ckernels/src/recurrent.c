/* A recurrent layer's loop over time (tinyflow/ops/recurrent_cells.py's Recurrence), and its backward.
 *
 * tf_recurrence(cell, order, x, w, bias, state, NULL, out, steps, n, h, reverse)      forward
 *     x (steps, n, G·h): every step's input gates x W_ihᵀ + b, computed before by one matrix product, gate g (in
 *     torch's order below) the block order[g] of each row (ONNX orders them otherwise), as in w and bias;
 *     w (G·h, h): W_hh; bias (G·h) or NULL: b_hh; state (S, n, h): the initial state ([h, c] for an LSTM, S = 2);
 *     out (steps, S, n, h): the state after each step. Step t (last to first if reverse) computes
 *     h_gates = h W_hhᵀ + b_hh and the cell (enum tf_recurrent_cell):
 *       LSTM      gates i, f, g, o: c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c')
 *       GRU       gates r, z, n: r = σ(x_r + hg_r), z = σ(x_z + hg_z), n = tanh(x_n + r hg_n), h' = n + z (h - n)
 *       GRU_RESET_FIRST   ONNX's GRU with linear_before_reset=0: the same but hg_n = (r h) W_hnᵀ + b_hn and
 *                 n = tanh(x_n + hg_n): each step is two passes, r and z for every unit, then n's product
 *       RNN_TANH, RNN_RELU    h' = act(x + hg)
 * tf_recurrence(cell, order, x, w, bias, state, grad, out, ...)                backward (through time)
 *     grad (steps, S, n, h): the gradient of the forward's out; out (steps, n, 2·G·h + S·h): per step and row the
 *     gradient of its x gates, of its h gates (both laid out as x), and of the whole state it started from (and for
 *     GRU_RESET_FIRST, h more columns: the step's r h, which W_hn's gradient multiplies). It
 *     runs the forward again first, keeping what each step back needs (an LSTM's activated gates), then walks the
 *     steps back.
 * Both return 0, or -1 when scratch memory could not be allocated. Each exists as _f32 and _f64.
 *
 * A step's matrix product and its cell run together, one block of U hidden units at a time (the threads split
 * the blocks): the block's rows of W_hh, packed once per call so that each gate's U rows are contiguous columns,
 * stay in cache while the rows of the batch go by four at a time, their U sums of each gate held in registers.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define SIGMOID tf_sigmoidf
#define TANH tf_tanhf
#include "recurrent_generic.h"
#undef T
#undef NAME
#undef SIGMOID
#undef TANH

#define T double
#define NAME(x) x##_f64
#define SIGMOID tf_sigmoid
#define TANH tf_tanh
#include "recurrent_generic.h"
#undef T
#undef NAME
#undef SIGMOID
#undef TANH
