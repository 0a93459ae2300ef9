/* Elementwise arithmetic: binary ops with broadcasting patterns, and unary math.
 *
 * tf_binary_f32/_f64(op, pattern, a, b, out, rows, cols)
 *   op:      0 add, 1 subtract, 2 multiply, 3 divide, 4 maximum, 5 minimum
 *   pattern: how b (or a) broadcasts against the other operand, viewed as rows x cols:
 *            0 same shape (rows*cols elements each), 1 b is a scalar, 2 a is a scalar,
 *            3 b is one row (cols) repeated, 4 a is one row, 5 b is one column (rows), 6 a is one column
 *   out:     rows*cols elements; never aliases a or b.
 * tf_unary_f32/_f64(op, x, out, n)
 *   op: 0 negative, 1 square, 2 sqrt, 3 exp, 4 log, 5 abs
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define EXP tf_expf
#define SQRT sqrtf
#define LOG logf
#include "elementwise_generic.h"
#undef T
#undef NAME
#undef EXP
#undef SQRT
#undef LOG

#define T double
#define NAME(x) x##_f64
#define EXP tf_exp
#define SQRT sqrt
#define LOG log
#include "elementwise_generic.h"
#undef T
#undef NAME
#undef EXP
#undef SQRT
#undef LOG
