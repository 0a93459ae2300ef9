/* Reductions along an axis.
 *
 * tf_reduce_f32/_f64(op, x, out, outer, n, inner)
 *   x is viewed as (outer, n, inner), contiguous; the middle axis (n >= 1 values) is reduced
 *   op: 0 sum, 1 mean, 2 max (NaN propagates, as numpy)
 *   out: outer*inner values
 * Several adjacent axes reduce as one middle axis; Python collapses the shape.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#include "reductions_generic.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "reductions_generic.h"
#undef T
#undef NAME
