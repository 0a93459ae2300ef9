/* Elementwise arithmetic: binary ops with broadcasting patterns, and unary math.
 *
 * tf_binary_f32/_f64(op, pattern, a, b, out, rows, cols)
 *   op:      enum tf_binary_op (tinyflow_kernels.h)
 *   pattern: enum tf_broadcast_pattern: how b (or a) broadcasts against the other operand, viewed as
 *            rows x cols (same shape, a scalar, one row repeated, or one column repeated)
 *   out:     rows*cols elements; never aliases a or b.
 * tf_unary_f32/_f64(op, x, out, n)
 *   op: enum tf_unary_op
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define EXP tf_expf
#define SQRT sqrtf
#define LOG tf_logf
#define ERF tf_erff
#include "elementwise_generic.h"
#undef T
#undef NAME
#undef EXP
#undef SQRT
#undef LOG
#undef ERF

#define T double
#define NAME(x) x##_f64
#define EXP tf_exp
#define SQRT sqrt
#define LOG log
#define ERF tf_erf
#include "elementwise_generic.h"
#undef T
#undef NAME
#undef EXP
#undef SQRT
#undef LOG
#undef ERF
