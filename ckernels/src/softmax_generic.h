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

void NAME(tf_softmax)(const T *x, T *y, long rows, long cols) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        T inv = (T)1 / NAME(row_exp)(xr, yr, cols, NAME(row_max)(xr, cols));
        for (long j = 0; j < cols; j++) yr[j] *= inv;
    }
}

void NAME(tf_log_softmax)(const T *x, T *y, long rows, long cols) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        T m;
        T lse = NAME(row_shifted_logsumexp)(xr, yr, cols, &m);
        for (long j = 0; j < cols; j++) yr[j] = (xr[j] - m) - lse;
    }
}

void NAME(tf_softmax_back)(const T *y, const T *g, T *out, long rows, long cols) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *yr = y + r * cols, *gr = g + r * cols;
        T dot = 0;
        for (long j = 0; j < cols; j++) dot += gr[j] * yr[j];
        for (long j = 0; j < cols; j++) out[r * cols + j] = yr[j] * (gr[j] - dot);
    }
}

void NAME(tf_log_softmax_back)(const T *y, const T *g, T *out, long rows, long cols) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *yr = y + r * cols, *gr = g + r * cols;
        T total = 0;
        for (long j = 0; j < cols; j++) total += gr[j];
        for (long j = 0; j < cols; j++) out[r * cols + j] = gr[j] - EXP(yr[j]) * total;
    }
}

long NAME(tf_softmax_xent)(const T *logits, const int64_t *labels, long rows, long cols, T *scratch, double *loss) {
    double total = 0;
    long bad = -1, r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static) reduction(+ : total)
    for (r = 0; r < rows; r++) {
        if (labels[r] < 0 || labels[r] >= cols) {
#pragma omp critical
            bad = (bad < 0 || r < bad) ? r : bad;
            continue;
        }
        const T *zr = logits + r * cols;
        T m;
        T lse = NAME(row_shifted_logsumexp)(zr, scratch + r * cols, cols, &m);
        total += (double)(lse - (zr[labels[r]] - m));
    }
    *loss = rows ? total / (double)rows : 0.0;
    return bad;
}

void NAME(tf_softmax_xent_back)(const T *logits, const int64_t *labels, long rows, long cols, double grad, T *out) {
    T scale = (T)(grad / (double)rows);
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *zr = logits + r * cols;
        T *o = out + r * cols;
        T inv = scale / NAME(row_exp)(zr, o, cols, NAME(row_max)(zr, cols));
        for (long j = 0; j < cols; j++) o[j] *= inv;
        o[labels[r]] -= scale;
    }
}
