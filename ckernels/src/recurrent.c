/* The pointwise part of one LSTM or GRU step (tinyflow/ops/recurrent_cells.py) and its backward, one pass over
 * the gates per row; the step's matrix products are done before (x_gates = x W_ihᵀ + b, h_gates = h W_hhᵀ + b).
 *
 * tf_lstm_cell(x, hg, state, out, n, h)      gates x + hg (n, 4h) in the order i, f, g, o; state and out (2, n, h)
 *     hold [h, c]: c' = σ(f) c + σ(i) tanh(g), h' = σ(o) tanh(c')
 * tf_lstm_cell_back(x, hg, state, grad, out, n, h, index)   grad (2, n, h) of [h', c']; index 0 or 1: out (n, 4h)
 *     the gates' gradient, index 2: out (2, n, h) the state's, [0, dc f]
 * tf_gru_cell(x, hg, hprev, out, n, h)       gates r, z, n (n, 3h each): r = σ(x_r + hg_r), z = σ(x_z + hg_z),
 *     n = tanh(x_n + r hg_n), h' = n + z (hprev - n)
 * tf_gru_cell_back(x, hg, hprev, grad, out, n, h, index)    gradient of input index (x, hg or hprev)
 * Each exists as _f32 and _f64.
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
