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

typedef struct {
    int op;
    const T *x;
    T *out;
    long n, inner;
} NAME(reduce_args);

/* Rows [start, stop) of an (outer, n) array with inner == 1: one value per row. */
static void NAME(reduce_rows_chunk)(void *p, long start, long stop) {
    NAME(reduce_args) *k = p;
    for (long o = start; o < stop; o++) {
        double r = NAME(reduce_run)(k->op, k->x + o * k->n, k->n);
        k->out[o] = (T)(k->op == TF_REDUCE_MEAN ? r / (double)k->n : r);
    }
}

/* Blocks [start, stop) of (n, inner) values, each reduced over its n rows. */
static void NAME(reduce_blocks_chunk)(void *p, long start, long stop) {
    NAME(reduce_args) *k = p;
    for (long o = start; o < stop; o++)
        NAME(reduce_columns)(k->op, k->x + o * k->n * k->inner, k->out + o * k->inner, k->n, k->inner, 0, k->inner);
}

/* Columns [start, stop) of one (n, inner) block (k->x and k->out point at the block). */
static void NAME(reduce_columns_chunk)(void *p, long start, long stop) {
    NAME(reduce_args) *k = p;
    NAME(reduce_columns)(k->op, k->x, k->out, k->n, k->inner, start, stop);
}

/* op: 0 sum, 1 mean, 2 max over the middle axis; out holds outer*inner values; n >= 1.
 * Threads split what there is most of: rows, blocks, or the columns of each block. */
void NAME(tf_reduce)(int op, const T *x, T *out, long outer, long n, long inner) {
    long total = outer * n * inner;
    NAME(reduce_args) k = {op, x, out, n, inner};
    if (inner == 1) {
        tf_parallel_for(outer, total, NAME(reduce_rows_chunk), &k);
    } else if (outer >= inner) {
        tf_parallel_for(outer, total, NAME(reduce_blocks_chunk), &k);
    } else {
        for (long o = 0; o < outer; o++) {
            NAME(reduce_args) block = {op, x + o * n * inner, out + o * inner, n, inner};
            tf_parallel_for(inner, total, NAME(reduce_columns_chunk), &block);
        }
    }
}
