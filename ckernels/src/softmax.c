/* Softmax along the last axis of x viewed as rows x cols (contiguous), and the fused
 * softmax cross-entropy. All are stable: the row maximum is subtracted first.
 *
 * tf_softmax(x, y, rows, cols)              y = e^x / Σ e^x per row
 * tf_log_softmax(x, y, rows, cols)          y = x - log Σ e^x per row
 * tf_softmax_back(y, g, out, rows, cols)    out = y (g - Σ g y), y the softmax output
 * tf_log_softmax_back(y, g, out, rows, cols)   out = g - e^y Σ g, y the log-softmax output
 * tf_softmax_xent(logits, labels, rows, cols, scratch, loss)
 *     *loss = mean over rows of (logsumexp(row) - row[label]); labels are int64 class ids;
 *     scratch holds rows*cols values; returns -1, or the first row whose label is outside [0, cols)
 * tf_softmax_xent_back(logits, labels, rows, cols, grad, out)
 *     out = (softmax(logits) - onehot(labels)) * grad / rows; labels must be valid
 * tf_attention(q, k, v, mask, mask_offsets, mask_row, mask_col, out, batch, l, s, e, ev, scale)
 *     out (batch, l, ev) = softmax(q kᵀ · scale + mask) v for q (batch, l, e), k (batch, s, e), v (batch, s, ev);
 *     mask (or NULL) is added: entry (b, i, j) at mask_offsets[b] + i * mask_row + j * mask_col; returns 0, or -1
 *     if scratch memory could not be allocated
 * Each exists as _f32 and _f64.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define EXP tf_expf
#define LOG tf_logf
#include "softmax_generic.h"
#undef T
#undef NAME
#undef EXP
#undef LOG

#define T double
#define NAME(x) x##_f64
#define EXP tf_exp
#define LOG log
#include "softmax_generic.h"
#undef T
#undef NAME
#undef EXP
#undef LOG
