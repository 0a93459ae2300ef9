/* Layer normalization of x viewed as rows x cols (contiguous): each row to mean 0 and variance 1.
 *
 * tf_layer_norm(x, y, rows, cols, eps)
 *     y = (x - mean) / sqrt(var + eps) per row, var the biased variance (two passes: mean, then squares)
 * tf_layer_norm_back(x, g, out, rows, cols, eps)
 *     out = (g - mean(g) - x̂ mean(g x̂)) / sqrt(var + eps) per row, x̂ the normalized row: dL/dx for dL/dy = g
 * Row sums accumulate in double; squares are taken in T first, so a float32 square that overflows is inf,
 * as in numpy. Each exists as _f32 and _f64.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define SQRT sqrtf
#include "normalization_generic.h"
#undef T
#undef NAME
#undef SQRT

#define T double
#define NAME(x) x##_f64
#define SQRT sqrt
#include "normalization_generic.h"
#undef T
#undef NAME
#undef SQRT
