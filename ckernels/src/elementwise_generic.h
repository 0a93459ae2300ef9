/* Elementwise kernels, written once for the type T; elementwise.c includes this file
 * for float (suffix _f32) and double (suffix _f64). NAME(x) appends the suffix. */

/* out[j] = a[j*sa] (op) b[j*sb] for j < n, where the strides sa and sb are 0 (a scalar) or 1. */
#define BINARY_LOOPS(EXPR)                                                      \
    if (sa && sb) {                                                             \
        for (long j = 0; j < n; j++) { T x = a[j], y = b[j]; out[j] = EXPR; }   \
    } else if (sa) {                                                            \
        T y = b[0];                                                             \
        for (long j = 0; j < n; j++) { T x = a[j]; out[j] = EXPR; }             \
    } else {                                                                    \
        T x = a[0];                                                             \
        for (long j = 0; j < n; j++) { T y = b[j]; out[j] = EXPR; }             \
    }

TF_CLONES static void NAME(binary_run)(int op, const T *a, int sa, const T *b, int sb, T *out, long n) {
    switch (op) {
    case TF_ADD: BINARY_LOOPS(x + y) break;
    case TF_SUBTRACT: BINARY_LOOPS(x - y) break;
    case TF_MULTIPLY: BINARY_LOOPS(x * y) break;
    case TF_DIVIDE: BINARY_LOOPS(x / y) break;
    case TF_MAXIMUM: BINARY_LOOPS((x > y || x != x) ? x : y) break; /* NaN wins, as in np.maximum */
    case TF_MINIMUM: BINARY_LOOPS((x < y || x != x) ? x : y) break;
    }
}
#undef BINARY_LOOPS

typedef struct {
    int op, pattern;
    const T *a, *b;
    T *out;
    long cols;
} NAME(binary_args);

/* Flat patterns split the n = rows * cols values; row and column patterns split the rows. */
static void NAME(binary_chunk)(void *p, long start, long stop) {
    NAME(binary_args) *k = p;
    const T *a = k->a, *b = k->b;
    long cols = k->cols, n = stop - start;
    switch (k->pattern) {
    case TF_SAME_SHAPE: NAME(binary_run)(k->op, a + start, 1, b + start, 1, k->out + start, n); return;
    case TF_B_SCALAR: NAME(binary_run)(k->op, a + start, 1, b, 0, k->out + start, n); return;
    case TF_A_SCALAR: NAME(binary_run)(k->op, a, 0, b + start, 1, k->out + start, n); return;
    }
    for (long r = start; r < stop; r++) {
        T *o = k->out + r * cols;
        if (k->pattern == TF_B_ROW) NAME(binary_run)(k->op, a + r * cols, 1, b, 1, o, cols);
        else if (k->pattern == TF_A_ROW) NAME(binary_run)(k->op, a, 1, b + r * cols, 1, o, cols);
        else if (k->pattern == TF_B_COLUMN) NAME(binary_run)(k->op, a + r * cols, 1, b + r, 0, o, cols);
        else NAME(binary_run)(k->op, a + r, 0, b + r * cols, 1, o, cols);
    }
}

/* Binary op with a broadcasting pattern (see tinyflow_kernels.h); a and b are contiguous. */
void NAME(tf_binary)(int op, int pattern, const T *a, const T *b, T *out, long rows, long cols) {
    NAME(binary_args) k = {op, pattern, a, b, out, cols};
    int flat = pattern == TF_SAME_SHAPE || pattern == TF_B_SCALAR || pattern == TF_A_SCALAR;
    tf_parallel_for(flat ? rows * cols : rows, rows * cols, NAME(binary_chunk), &k);
}

TF_CLONES static void NAME(unary_run)(int op, const T *x, T *out, long n) {
    switch (op) {
    case TF_NEGATIVE: for (long i = 0; i < n; i++) out[i] = -x[i]; break;
    case TF_SQUARE: for (long i = 0; i < n; i++) out[i] = x[i] * x[i]; break;
    case TF_SQRT: for (long i = 0; i < n; i++) out[i] = SQRT(x[i]); break;
    case TF_EXP: for (long i = 0; i < n; i++) out[i] = EXP(x[i]); break;
    case TF_LOG: for (long i = 0; i < n; i++) out[i] = LOG(x[i]); break;
    case TF_ABS: for (long i = 0; i < n; i++) out[i] = x[i] < 0 ? -x[i] : x[i]; break;
    case TF_ERF: for (long i = 0; i < n; i++) out[i] = ERF(x[i]); break;
    }
}

typedef struct {
    int op;
    const T *x;
    T *out;
} NAME(unary_args);

static void NAME(unary_chunk)(void *p, long start, long stop) {
    NAME(unary_args) *k = p;
    NAME(unary_run)(k->op, k->x + start, k->out + start, stop - start);
}

/* Unary op (enum tf_unary_op) over n contiguous elements. */
void NAME(tf_unary)(int op, const T *x, T *out, long n) {
    NAME(unary_args) k = {op, x, out};
    tf_parallel_for(n, n, NAME(unary_chunk), &k);
}
