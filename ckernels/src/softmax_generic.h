/* Row-wise softmax kernels and the fused softmax cross-entropy, for the type T. */

TF_CLONES static T NAME(row_max)(const T *x, long cols) {
    T m = x[0];
#pragma omp simd reduction(max : m)
    for (long j = 1; j < cols; j++) m = x[j] > m ? x[j] : m;
    return m;
}

/* y = e^(x - shift) over one row; returns the row's sum. Two loops: each vectorizes on its own. */
TF_CLONES static T NAME(row_exp)(const T *x, T *y, long cols, T shift) {
    for (long j = 0; j < cols; j++) y[j] = EXP(x[j] - shift);
    T total = 0;
#pragma omp simd reduction(+ : total)
    for (long j = 0; j < cols; j++) total += y[j];
    return total;
}

/* log Σ e^(x - m) of one row, with m its max returned in *max (scratch receives the shifted
 * exponentials). Callers subtract m from x first and this second: (x - m) - log Σ keeps the
 * precision that x - (m + log Σ) loses for large logits ([1e8, 1e8] gives -log 2, not 0). */
static T NAME(row_shifted_logsumexp)(const T *x, T *scratch, long cols, T *max) {
    *max = NAME(row_max)(x, cols);
    return LOG(NAME(row_exp)(x, scratch, cols, *max));
}

/* One row of each kernel; rows are independent, so threads split the rows. */
static void NAME(softmax_row)(const T *x, T *y, long cols) {
    T inv = (T)1 / NAME(row_exp)(x, y, cols, NAME(row_max)(x, cols));
    for (long j = 0; j < cols; j++) y[j] *= inv;
}

static void NAME(log_softmax_row)(const T *x, T *y, long cols) {
    T m;
    T lse = NAME(row_shifted_logsumexp)(x, y, cols, &m);
    for (long j = 0; j < cols; j++) y[j] = (x[j] - m) - lse;
}

static void NAME(softmax_back_row)(const T *y, const T *g, T *out, long cols) {
    T dot = 0;
    for (long j = 0; j < cols; j++) dot += g[j] * y[j];
    for (long j = 0; j < cols; j++) out[j] = y[j] * (g[j] - dot);
}

static void NAME(log_softmax_back_row)(const T *y, const T *g, T *out, long cols) {
    T total = 0;
    for (long j = 0; j < cols; j++) total += g[j];
    for (long j = 0; j < cols; j++) out[j] = g[j] - EXP(y[j]) * total;
}

/* The cross-entropy of one row (NaN for a label outside [0, cols)); scratch receives exponentials. */
static double NAME(xent_row)(const T *z, int64_t label, T *scratch, long cols) {
    if (label < 0 || label >= cols) return (double)NAN;
    T m;
    T lse = NAME(row_shifted_logsumexp)(z, scratch, cols, &m);
    return (double)(lse - (z[label] - m));
}

static void NAME(xent_back_row)(const T *z, int64_t label, T *out, long cols, T scale) {
    T inv = scale / NAME(row_exp)(z, out, cols, NAME(row_max)(z, cols));
    for (long j = 0; j < cols; j++) out[j] *= inv;
    out[label] -= scale;
}

enum { NAME(SOFTMAX), NAME(LOG_SOFTMAX), NAME(SOFTMAX_BACK), NAME(LOG_SOFTMAX_BACK), NAME(XENT), NAME(XENT_BACK) };

typedef struct {
    int kind;
    const T *x, *g;        /* x: the input (logits, or y for _back kernels); g: the incoming gradient */
    const int64_t *labels;
    T *out;
    double *row_loss;
    long cols;
    T scale;
} NAME(rows_args);

static void NAME(rows_chunk)(void *p, long start, long stop) {
    NAME(rows_args) *k = p;
    long cols = k->cols;
    for (long r = start; r < stop; r++) {
        const T *x = k->x + r * cols, *g = k->g ? k->g + r * cols : NULL;
        T *out = k->out + r * cols;
        switch (k->kind) {
        case NAME(SOFTMAX): NAME(softmax_row)(x, out, cols); break;
        case NAME(LOG_SOFTMAX): NAME(log_softmax_row)(x, out, cols); break;
        case NAME(SOFTMAX_BACK): NAME(softmax_back_row)(x, g, out, cols); break;
        case NAME(LOG_SOFTMAX_BACK): NAME(log_softmax_back_row)(x, g, out, cols); break;
        case NAME(XENT): k->row_loss[r] = NAME(xent_row)(x, k->labels[r], out, cols); break;
        case NAME(XENT_BACK): NAME(xent_back_row)(x, k->labels[r], out, cols, k->scale); break;
        }
    }
}

static void NAME(rows)(int kind, const T *x, const T *g, const int64_t *labels, T *out, double *row_loss,
                       long rows, long cols, T scale) {
    NAME(rows_args) k = {kind, x, g, labels, out, row_loss, cols, scale};
    tf_parallel_for(rows, rows * cols, NAME(rows_chunk), &k);
}

void NAME(tf_softmax)(const T *x, T *y, long rows, long cols) {
    NAME(rows)(NAME(SOFTMAX), x, NULL, NULL, y, NULL, rows, cols, 0);
}

void NAME(tf_log_softmax)(const T *x, T *y, long rows, long cols) {
    NAME(rows)(NAME(LOG_SOFTMAX), x, NULL, NULL, y, NULL, rows, cols, 0);
}

void NAME(tf_softmax_back)(const T *y, const T *g, T *out, long rows, long cols) {
    NAME(rows)(NAME(SOFTMAX_BACK), y, g, NULL, out, NULL, rows, cols, 0);
}

void NAME(tf_log_softmax_back)(const T *y, const T *g, T *out, long rows, long cols) {
    NAME(rows)(NAME(LOG_SOFTMAX_BACK), y, g, NULL, out, NULL, rows, cols, 0);
}

/* The mean cross-entropy into *loss; returns the first row whose label is out of range, or -1 (or -2 when
 * out of memory). Row losses are summed in row order, so the result does not depend on the thread count. */
long NAME(tf_softmax_xent)(const T *logits, const int64_t *labels, long rows, long cols, T *scratch, double *loss) {
    double *row_loss = malloc(sizeof(double) * (rows > 0 ? rows : 1));
    if (!row_loss) return -2;
    NAME(rows)(NAME(XENT), logits, NULL, labels, scratch, row_loss, rows, cols, 0);
    double total = 0;
    long bad = -1;
    for (long r = 0; r < rows; r++) {
        if (labels[r] < 0 || labels[r] >= cols) {
            bad = r;
            break;
        }
        total += row_loss[r];
    }
    free(row_loss);
    *loss = rows ? total / (double)rows : 0.0;
    return bad;
}

void NAME(tf_softmax_xent_back)(const T *logits, const int64_t *labels, long rows, long cols, double grad, T *out) {
    NAME(rows)(NAME(XENT_BACK), logits, NULL, labels, out, NULL, rows, cols, (T)(grad / (double)rows));
}
