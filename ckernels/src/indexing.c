/* Indexing: the gradient of gather (np.take along an axis), which adds rows of g back at their indices.
 *
 * tf_scatter_add(index, n, g, out, outer, dim, inner)
 *   g:     outer x n x inner values (the incoming gradient of gather's output);
 *   index: n row indices in [0, dim) (Python checks them and makes negative ones positive first);
 *   out:   outer x dim x inner values, all written: zeros, plus g[o, j, :] added at out[o, index[j], :].
 * Rows that repeat an index add up, in the order of j (as np.add.at). Threads split outer and
 * blocks of inner, so no two threads ever add into one element. Each exists as _f32 and _f64.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define SCATTER_BLOCK 512 /* columns of inner one thread adds at a time */

#define T float
#define NAME(x) x##_f32
#include "indexing_generic.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "indexing_generic.h"
#undef T
#undef NAME
