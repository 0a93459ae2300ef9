/* Reduction of the middle axis of (outer, n, inner); one work-item per output (mirrors reductions.c).
 * op: tf_reduce_op (max propagates NaN). */
__kernel void reduce(int op, __global const T *x, __global T *out, long n, long inner) {
    long o = get_global_id(0), j = o % inner, base = (o / inner) * n * inner + j;
    T acc = x[base];
    int nan = isnan(acc);
    for (long k = 1; k < n; k++) {
        T v = x[base + k * inner];
        if (op == TF_REDUCE_MAX) { acc = v > acc ? v : acc; nan |= isnan(v); }
        else acc += v;
    }
    out[o] = op == TF_REDUCE_MAX ? (nan ? NAN : acc) : (op == TF_REDUCE_MEAN ? acc / n : acc);
}
