/* A hand-written matrix product, to read and to measure against BLAS.
 *
 * tf_gemm_f32/_f64(m, n, k, a, b, c)   c (m x n) = a (m x k) @ b (k x n), row-major, contiguous;
 *     returns 0, or -1 if scratch memory could not be allocated.
 * The C backend multiplies through numpy's BLAS by default; set TINYFLOW_GEMM=tinyflow to use this.
 */
#include <stdlib.h>

#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#include "gemm_generic.h"
#undef T
#undef NAME

#define T double
#define NAME(x) x##_f64
#include "gemm_generic.h"
#undef T
#undef NAME
