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

/* Scaled-dot-product attention, AR query rows at a time: their scores against every key (kept in `s`, AR x sp, in
 * cache), softmax, and the product with v, each product in registers as the GEMM's micro-kernel keeps its tile. */
enum { NAME(AR) = 4, NAME(AW) = 64 / (int)sizeof(T) };

typedef struct {
    const T *q, *k, *v, *mask;
    const long *mask_offsets; /* per batch entry, where its (L, S) mask starts; rows and columns mask_row, mask_col */
    T *out, *laid_out;        /* laid_out: per batch entry kᵀ (E x sp) then v (S x evp), zero past S and Ev */
    long blocks, l, s, e, ev, sp, evp, mask_row, mask_col;
    T scale;
    int failed;
} NAME(attention_args);

TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(attention_rows)(
    const NAME(attention_args) *a, long b, long i0, long rows, const T *restrict kt, const T *restrict vp, T *s) {
    enum { R = NAME(AR), W = NAME(AW) };
    long sp = a->sp, evp = a->evp, e_len = a->e;
    const T *q[R];
    for (int r = 0; r < R; r++) q[r] = a->q + (b * a->l + i0 + (r < rows ? r : rows - 1)) * e_len; /* past the end:
                                                                                            a row again, not stored */
    for (long j0 = 0; j0 < sp; j0 += W) { /* s = q kt (kt: k transposed, E x sp, zero columns past S) */
        T acc[R][W] = {{0}};
        for (long e = 0; e < e_len; e++) {
            const T *kr = kt + e * sp + j0;
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                T qr = q[r][e];
#pragma omp simd
                for (int j = 0; j < W; j++) acc[r][j] += qr * kr[j];
            }
        }
        for (int r = 0; r < R; r++)
            for (int j = 0; j < W; j++) s[r * sp + j0 + j] = acc[r][j] * a->scale;
    }
    T inv[R];
    for (long r = 0; r < R; r++) { /* softmax of each row: e^(s - max), normalised at the end */
        T *row = s + r * sp;
        if (a->mask) {
            const T *m = a->mask + a->mask_offsets[b] + (i0 + (r < rows ? r : rows - 1)) * a->mask_row;
            for (long j = 0; j < a->s; j++) row[j] += m[j * a->mask_col];
        }
        inv[r] = (T)1 / NAME(row_exp)(row, row, a->s, NAME(row_max)(row, a->s));
    }
    for (long c0 = 0; c0 < evp; c0 += W) { /* out = p vp (vp: v with zero columns up to evp) */
        T acc[R][W] = {{0}};
        for (long j = 0; j < a->s; j++) {
            const T *vr = vp + j * evp + c0;
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                T p = s[r * sp + j];
#pragma omp simd
                for (int c = 0; c < W; c++) acc[r][c] += p * vr[c];
            }
        }
        for (long r = 0; r < rows; r++) {
            T *o = a->out + (b * a->l + i0 + r) * a->ev + c0;
            for (long c = 0; c < W && c0 + c < a->ev; c++) o[c] = acc[r][c] * inv[r];
        }
    }
}

/* Batch entries [start, stop): k transposed and v padded for the products, once per entry (not once per chunk of
 * rows: with few entries, as a batch of one with four heads, the chunks would each lay out their entry again). */
static void NAME(attention_layout)(void *p, long start, long stop) {
    NAME(attention_args) *a = p;
    long sp = a->sp, evp = a->evp;
    for (long b = start; b < stop; b++) {
        const T *k = a->k + b * a->s * a->e, *v = a->v + b * a->s * a->ev;
        T *kt = a->laid_out + b * (a->e * sp + a->s * evp), *vp = kt + a->e * sp;
        for (long e = 0; e < a->e; e++) {
            for (long j = 0; j < a->s; j++) kt[e * sp + j] = k[j * a->e + e];
            memset(kt + e * sp + a->s, 0, sizeof(T) * (sp - a->s));
        }
        for (long j = 0; j < a->s; j++) {
            memcpy(vp + j * evp, v + j * a->ev, sizeof(T) * a->ev);
            memset(vp + j * evp + a->ev, 0, sizeof(T) * (evp - a->ev));
        }
    }
}

/* Units [start, stop) of (batch entry, AR-row block), reading the laid-out k and v. */
static void NAME(attention_chunk)(void *p, long start, long stop) {
    NAME(attention_args) *a = p;
    long sp = a->sp, per_entry = a->e * sp + a->s * a->evp;
    T *s = malloc(sizeof(T) * NAME(AR) * sp);
    if (!s) {
        __atomic_store_n(&a->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (long unit = start; unit < stop; unit++) {
        long b = unit / a->blocks, i0 = unit % a->blocks * NAME(AR);
        const T *kt = a->laid_out + b * per_entry;
        NAME(attention_rows)(a, b, i0, a->l - i0 < NAME(AR) ? a->l - i0 : NAME(AR), kt, kt + a->e * sp, s);
    }
    free(s);
}

int NAME(tf_attention)(const T *q, const T *k, const T *v, const T *mask, const long *mask_offsets, long mask_row,
                       long mask_col, T *out, long batch, long l, long s, long e, long ev, T scale) {
    long w = NAME(AW), blocks = (l + NAME(AR) - 1) / NAME(AR), sp = (s + w - 1) / w * w, evp = (ev + w - 1) / w * w;
    T *laid_out = malloc(sizeof(T) * batch * (e * sp + s * evp));
    if (!laid_out) return -1;
    NAME(attention_args) a = {q, k, v, mask, mask_offsets, out, laid_out, blocks, l, s, e, ev, sp, evp, mask_row,
                              mask_col, scale, 0};
    tf_parallel_for(batch, batch * s * (e + ev), NAME(attention_layout), &a);
    tf_parallel_for(batch * blocks, batch * l * s * (e + ev), NAME(attention_chunk), &a);
    free(laid_out);
    return a.failed ? -1 : 0;
}
