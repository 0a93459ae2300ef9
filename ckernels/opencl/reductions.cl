/* Reduction of the middle axis of (outer, n, inner); one work-item per output (mirrors reductions.c).
 * op: tf_reduce_op (max propagates NaN). Sums are pairwise: blocks of 32 values summed in order, and
 * the block sums merged like a binary counter (two partial sums of equal size are added together),
 * so the rounding error grows with log n, not n: 10M x 0.1f sums to 1e6 within 1e-6. */
#define BLOCK 32
__kernel void reduce(int op, __global const T *x, __global T *out, long n, long inner) {
    long o = get_global_id(0), j = o % inner, base = (o / inner) * n * inner + j;
    if (op == TF_REDUCE_MAX) {
        T acc = x[base];
        int nan = isnan(acc);
        for (long k = 1; k < n; k++) {
            T v = x[base + k * inner];
            acc = v > acc ? v : acc;
            nan |= isnan(v);
        }
        out[o] = nan ? NAN : acc;
        return;
    }
    T partial[64]; /* partial[d] sums 2^d blocks; at most 64 levels */
    int depth = 0;
    long blocks = 0;
    for (long start = 0; start < n; start += BLOCK) {
        long stop = start + BLOCK < n ? start + BLOCK : n;
        T s = 0;
        for (long k = start; k < stop; k++) s += x[base + k * inner];
        blocks++;
        for (long c = blocks; (c & 1) == 0; c >>= 1) s += partial[--depth];
        partial[depth++] = s;
    }
    T total = 0;
    while (depth > 0) total += partial[--depth];
    out[o] = op == TF_REDUCE_MEAN ? total / n : total;
}
