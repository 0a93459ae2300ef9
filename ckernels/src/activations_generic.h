/* Activation kernels and their backward kernels (`_back`), for the type T. */

/* Blocks of TF_MATH_BLOCK: when every x of a block is in the common range (tf_math.h), the cheaper common
 * form, else the full one. The check reads x before anything is written: y may be x. */
TF_CLONES static void NAME(sigmoid_run)(const T *x, T *y, long n) {
    long b = 0;
    for (; b + TF_MATH_BLOCK <= n; b += TF_MATH_BLOCK) {
        int special = 0;
        for (long i = b; i < b + TF_MATH_BLOCK; i++) special |= !SIGMOID_IS_COMMON(x[i]);
        if (special)
            for (long i = b; i < b + TF_MATH_BLOCK; i++) y[i] = SIGMOID(x[i]);
        else
            for (long i = b; i < b + TF_MATH_BLOCK; i++) y[i] = SIGMOID_COMMON(x[i]);
    }
    for (; b < n; b++) y[b] = SIGMOID(x[b]);
}

TF_CLONES static void NAME(sigmoid_back_run)(const T *y, const T *g, T *out, long n) {
    for (long i = 0; i < n; i++) out[i] = g[i] * y[i] * ((T)1 - y[i]);
}

TF_CLONES static void NAME(tanh_run)(const T *x, T *y, long n) {
    for (long i = 0; i < n; i++) y[i] = TANH(x[i]);
}

TF_CLONES static void NAME(tanh_back_run)(const T *y, const T *g, T *out, long n) {
    for (long i = 0; i < n; i++) out[i] = g[i] * ((T)1 - y[i] * y[i]);
}

TF_CLONES static void NAME(relu_run)(const T *x, T *y, long n) {
    for (long i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : (x[i] != x[i] ? x[i] : 0);
}

TF_CLONES static void NAME(relu_back_run)(const T *y, const T *g, T *out, long n) {
    for (long i = 0; i < n; i++) out[i] = y[i] > 0 ? g[i] : 0;
}

TF_CLONES static void NAME(leaky_relu_run)(const T *x, T *y, long n, T alpha) {
    for (long i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : alpha * x[i];
}

TF_CLONES static void NAME(leaky_relu_back_run)(const T *x, const T *g, T *out, long n, T alpha) {
    for (long i = 0; i < n; i++) out[i] = x[i] > 0 ? g[i] : alpha * g[i];
}

static void NAME(softplus_run)(const T *x, T *y, long n) {
    for (long i = 0; i < n; i++) {
        T m = x[i] > 0 ? x[i] : 0;
        y[i] = m + LOG1P(EXP(-(x[i] < 0 ? -x[i] : x[i])));
    }
}

/* Every activation kernel runs its loop above on the thread pool, through one argument struct. */
enum { NAME(SIGMOID), NAME(SIGMOID_BACK), NAME(TANH), NAME(TANH_BACK), NAME(RELU), NAME(RELU_BACK),
       NAME(LEAKY_RELU), NAME(LEAKY_RELU_BACK), NAME(SOFTPLUS) };

typedef struct {
    int kind;
    const T *x, *g; /* g: the incoming gradient of _back kernels */
    T *out;
    T alpha;
} NAME(activation_args);

static void NAME(activation_chunk)(void *p, long start, long stop) {
    NAME(activation_args) *k = p;
    const T *x = k->x + start, *g = k->g ? k->g + start : NULL;
    T *out = k->out + start;
    long n = stop - start;
    switch (k->kind) {
    case NAME(SIGMOID): NAME(sigmoid_run)(x, out, n); break;
    case NAME(SIGMOID_BACK): NAME(sigmoid_back_run)(x, g, out, n); break;
    case NAME(TANH): NAME(tanh_run)(x, out, n); break;
    case NAME(TANH_BACK): NAME(tanh_back_run)(x, g, out, n); break;
    case NAME(RELU): NAME(relu_run)(x, out, n); break;
    case NAME(RELU_BACK): NAME(relu_back_run)(x, g, out, n); break;
    case NAME(LEAKY_RELU): NAME(leaky_relu_run)(x, out, n, k->alpha); break;
    case NAME(LEAKY_RELU_BACK): NAME(leaky_relu_back_run)(x, g, out, n, k->alpha); break;
    case NAME(SOFTPLUS): NAME(softplus_run)(x, out, n); break;
    }
}

static void NAME(activation)(int kind, const T *x, const T *g, T *out, long n, double alpha) {
    NAME(activation_args) k = {kind, x, g, out, (T)alpha};
    tf_parallel_for(n, n, NAME(activation_chunk), &k);
}

void NAME(tf_sigmoid)(const T *x, T *y, long n) { NAME(activation)(NAME(SIGMOID), x, NULL, y, n, 0); }
void NAME(tf_sigmoid_back)(const T *y, const T *g, T *out, long n) {
    NAME(activation)(NAME(SIGMOID_BACK), y, g, out, n, 0);
}
void NAME(tf_tanh)(const T *x, T *y, long n) { NAME(activation)(NAME(TANH), x, NULL, y, n, 0); }
void NAME(tf_tanh_back)(const T *y, const T *g, T *out, long n) { NAME(activation)(NAME(TANH_BACK), y, g, out, n, 0); }
void NAME(tf_relu)(const T *x, T *y, long n) { NAME(activation)(NAME(RELU), x, NULL, y, n, 0); }
void NAME(tf_relu_back)(const T *y, const T *g, T *out, long n) { NAME(activation)(NAME(RELU_BACK), y, g, out, n, 0); }
void NAME(tf_leaky_relu)(const T *x, T *y, long n, double alpha) {
    NAME(activation)(NAME(LEAKY_RELU), x, NULL, y, n, alpha);
}
void NAME(tf_leaky_relu_back)(const T *x, const T *g, T *out, long n, double alpha) {
    NAME(activation)(NAME(LEAKY_RELU_BACK), x, g, out, n, alpha);
}
void NAME(tf_softplus)(const T *x, T *y, long n) { NAME(activation)(NAME(SOFTPLUS), x, NULL, y, n, 0); }
