/* What the kernel library was built with, and the STREAM triad the benchmarks measure bandwidth with. */
#include <stdint.h>

#include "common.h"
#include "tinyflow_kernels.h"

#ifndef TINYFLOW_BUILD_FLAGS
#define TINYFLOW_BUILD_FLAGS "unknown"
#endif

/* The compiler flags of this build, as a static string (for `tinyflow info`). */
const char *tf_build_flags(void) { return TINYFLOW_BUILD_FLAGS; }

typedef struct {
    float *a;
    const float *b, *c;
    float s;
} triad_args;

static void triad_chunk(void *p, long start, long stop) {
    triad_args *k = p;
    for (long i = start; i < stop; i++) k->a[i] = k->b[i] + k->s * k->c[i];
}

/* The STREAM triad a = b + s c over n floats, on the thread pool: the benchmarks time it to
 * measure this machine's memory bandwidth in the same run as the kernels. */
void tf_triad_f32(float *a, const float *b, const float *c, float s, long n) {
    triad_args k = {a, b, c, s};
    tf_parallel_for(n, n, triad_chunk, &k);
}
