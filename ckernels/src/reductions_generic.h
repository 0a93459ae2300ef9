/* Reductions of the middle axis of x viewed as (outer, n, inner), for the type T. */

/* One contiguous run of n values: sum (op 0 or 1) or max (op 2, NaN propagates). */
TF_CLONES static double NAME(reduce_run)(int op, const T *x, long n) {
    if (op == TF_REDUCE_MAX) {
        T best = x[0];
        int nan = 0;
        for (long i = 1; i < n; i++) {
            best = x[i] > best ? x[i] : best;
            nan |= x[i] != x[i];
        }
        return (nan || x[0] != x[0]) ? (double)NAN : (double)best;
    }
    double total = 0; /* accumulate in double: float32 sums of millions stay accurate */
#pragma omp simd reduction(+ : total)
    for (long i = 0; i < n; i++) total += x[i];
    return total;
}

/* Columns [start, stop) of one (n, inner) block, reduced over its n rows into out. */
TF_CLONES static void NAME(reduce_columns)(int op, const T *x, T *out, long n, long inner, long start, long stop) {
    for (long j = start; j < stop; j++) out[j] = x[j];
    for (long k = 1; k < n; k++) {
        const T *row = x + k * inner;
        if (op == TF_REDUCE_MAX) {
            for (long j = start; j < stop; j++)
                out[j] = (row[j] > out[j] || row[j] != row[j]) ? row[j] : out[j];
        } else {
            for (long j = start; j < stop; j++) out[j] += row[j];
        }
    }
    if (op == TF_REDUCE_MEAN)
        for (long j = start; j < stop; j++) out[j] /= (T)n;
}

/* op: 0 sum, 1 mean, 2 max over the middle axis; out holds outer*inner values; n >= 1. */
void NAME(tf_reduce)(int op, const T *x, T *out, long outer, long n, long inner) {
    long total = outer * n * inner, o;
    if (inner == 1) {
#pragma omp parallel for if (total >= TF_PARALLEL_MIN) schedule(static)
        for (o = 0; o < outer; o++) {
            double r = NAME(reduce_run)(op, x + o * n, n);
            out[o] = (T)(op == TF_REDUCE_MEAN ? r / (double)n : r);
        }
    } else if (outer >= inner) {
#pragma omp parallel for if (total >= TF_PARALLEL_MIN) schedule(static)
        for (o = 0; o < outer; o++) NAME(reduce_columns)(op, x + o * n * inner, out + o * inner, n, inner, 0, inner);
    } else {
        for (o = 0; o < outer; o++) {
            const T *block = x + o * n * inner;
            T *dest = out + o * inner;
            if (total >= TF_PARALLEL_MIN) {
                TF_PARALLEL_CHUNKS(inner, NAME(reduce_columns)(op, block, dest, n, inner, start, stop));
            } else {
                NAME(reduce_columns)(op, block, dest, n, inner, 0, inner);
            }
        }
    }
}
