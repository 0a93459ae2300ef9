/* Indexing kernels, written once for the type T; indexing.c includes this file for float and double. */

TF_CLONES static void NAME(scatter_rows)(const int64_t *index, long n, const T *g, T *out, long inner, long c0,
                                         long c1) {
    for (long j = 0; j < n; j++) {
        const T *src = g + j * inner;
        T *dst = out + index[j] * inner;
        for (long c = c0; c < c1; c++) dst[c] += src[c];
    }
}

void NAME(tf_scatter_add)(const int64_t *index, long n, const T *g, T *out, long outer, long dim, long inner) {
    long blocks = (inner + SCATTER_BLOCK - 1) / SCATTER_BLOCK, tasks = outer * blocks, t;
    TF_PARALLEL_CHUNKS(outer * dim * inner, memset(out + start, 0, (size_t)(stop - start) * sizeof(T)));
#pragma omp parallel for schedule(static) if (outer * n * inner >= TF_PARALLEL_MIN)
    for (t = 0; t < tasks; t++) {
        long o = t / blocks, c0 = (t % blocks) * SCATTER_BLOCK;
        long c1 = c0 + SCATTER_BLOCK < inner ? c0 + SCATTER_BLOCK : inner;
        NAME(scatter_rows)(index, n, g + o * n * inner, out + o * dim * inner, inner, c0, c1);
    }
}
