/* What the kernel library was built with, and its thread count. */
#include <stdint.h>

#include "tinyflow_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef TINYFLOW_BUILD_FLAGS
#define TINYFLOW_BUILD_FLAGS "unknown"
#endif

/* The compiler flags of this build, as a static string (for `tinyflow info`). */
const char *tf_build_flags(void) { return TINYFLOW_BUILD_FLAGS; }

/* 1 when built with OpenMP, else 0. */
int tf_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* The number of threads parallel kernels use (1 without OpenMP). */
int tf_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* Set the number of threads for parallel kernels; n < 1 is ignored. */
void tf_set_num_threads(int n) {
#ifdef _OPENMP
    if (n >= 1) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* The STREAM triad a = b + s c over n floats, in parallel: the benchmarks time it to
 * measure this machine's memory bandwidth in the same run as the kernels. */
void tf_triad_f32(float *a, const float *b, const float *c, float s, long n) {
    long i;
#pragma omp parallel for if (n >= TF_PARALLEL_MIN) schedule(static)
    for (i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}
