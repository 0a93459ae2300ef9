/* Activation kernels and their backward kernels (`_back`), for the type T. */

TF_CLONES static void NAME(sigmoid_run)(const T *x, T *y, long n) {
    for (long i = 0; i < n; i++) y[i] = (T)1 / ((T)1 + EXP(-x[i]));
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

void NAME(tf_sigmoid)(const T *x, T *y, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(sigmoid_run)(x + start, y + start, stop - start));
}
void NAME(tf_sigmoid_back)(const T *y, const T *g, T *out, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(sigmoid_back_run)(y + start, g + start, out + start, stop - start));
}
void NAME(tf_tanh)(const T *x, T *y, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(tanh_run)(x + start, y + start, stop - start));
}
void NAME(tf_tanh_back)(const T *y, const T *g, T *out, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(tanh_back_run)(y + start, g + start, out + start, stop - start));
}
void NAME(tf_relu)(const T *x, T *y, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(relu_run)(x + start, y + start, stop - start));
}
void NAME(tf_relu_back)(const T *y, const T *g, T *out, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(relu_back_run)(y + start, g + start, out + start, stop - start));
}
void NAME(tf_leaky_relu)(const T *x, T *y, long n, double alpha) {
    TF_PARALLEL_CHUNKS(n, NAME(leaky_relu_run)(x + start, y + start, stop - start, (T)alpha));
}
void NAME(tf_leaky_relu_back)(const T *x, const T *g, T *out, long n, double alpha) {
    TF_PARALLEL_CHUNKS(n, NAME(leaky_relu_back_run)(x + start, g + start, out + start, stop - start, (T)alpha));
}
void NAME(tf_softplus)(const T *x, T *y, long n) {
    TF_PARALLEL_CHUNKS(n, NAME(softplus_run)(x + start, y + start, stop - start));
}
