/* Indexing kernels, written once for the type T; indexing.c includes this file for float and double. */

typedef struct {
    const int64_t *index;
    const T *g;
    T *out;
    long n, dim, inner, blocks;
} NAME(scatter_args);

/* Tasks t in [start, stop): t = o * blocks + b adds the columns of block b of every g[o, j, :] into
 * out[o, index[j], :]; a task owns its output columns, so threads never add into one element. */
TF_CLONES static void NAME(scatter_chunk)(void *p, long start, long stop) {
    NAME(scatter_args) *k = p;
    long inner = k->inner;
    for (long t = start; t < stop; t++) {
        long o = t / k->blocks, c0 = (t % k->blocks) * SCATTER_BLOCK;
        long c1 = c0 + SCATTER_BLOCK < inner ? c0 + SCATTER_BLOCK : inner;
        T *out = k->out + o * k->dim * inner;
        const T *g = k->g + o * k->n * inner;
        for (long j = 0; j < k->n; j++) {
            const T *src = g + j * inner;
            T *dst = out + k->index[j] * inner;
            for (long c = c0; c < c1; c++) dst[c] += src[c];
        }
    }
}

void NAME(tf_scatter_add)(const int64_t *index, long n, const T *g, T *out, long outer, long dim, long inner) {
    long blocks = (inner + SCATTER_BLOCK - 1) / SCATTER_BLOCK;
    NAME(scatter_args) k = {index, g, out, n, dim, inner, blocks};
    memset(out, 0, (size_t)(outer * dim * inner) * sizeof(T));
    tf_parallel_for(outer * blocks, outer * n * inner, NAME(scatter_chunk), &k);
}
