/* LSTM and GRU cell kernels for the type T (see recurrent.c). Rows (batch entries) are independent: threads split
 * them; within a row each loop runs over the h values of every gate at once, so it vectorizes. */

typedef struct {
    const T *x, *hg, *state, *grad;
    T *out;
    long n, h;
    int index, back;
} NAME(cell_args);

TF_CLONES static void NAME(lstm_chunk)(void *p, long start, long stop) {
    const NAME(cell_args) *k = p;
    long n = k->n, h = k->h;
    for (long row = start; row < stop; row++) {
        const T *x = k->x + row * 4 * h, *hg = k->hg + row * 4 * h, *c = k->state + (n + row) * h;
        const T *dh = k->grad ? k->grad + row * h : NULL, *dc = k->grad ? k->grad + (n + row) * h : NULL;
        T *out = k->out + row * (k->back && k->index < 2 ? 4 * h : h);
        for (long j = 0; j < h; j++) {
            T i = SIGMOID(x[j] + hg[j]), f = SIGMOID(x[h + j] + hg[h + j]);
            T g = TANH(x[2 * h + j] + hg[2 * h + j]), o = SIGMOID(x[3 * h + j] + hg[3 * h + j]);
            T c_next = f * c[j] + i * g, tanh_c = TANH(c_next);
            if (!k->back) {
                out[j] = o * tanh_c;
                out[n * h + j] = c_next;
                continue;
            }
            T d_c = dc[j] + dh[j] * o * (1 - tanh_c * tanh_c);
            if (k->index == 2) {
                out[j] = 0;
                out[n * h + j] = d_c * f;
                continue;
            }
            out[j] = d_c * g * i * (1 - i);
            out[h + j] = d_c * c[j] * f * (1 - f);
            out[2 * h + j] = d_c * i * (1 - g * g);
            out[3 * h + j] = dh[j] * tanh_c * o * (1 - o);
        }
    }
}

TF_CLONES static void NAME(gru_chunk)(void *p, long start, long stop) {
    const NAME(cell_args) *k = p;
    long h = k->h;
    for (long row = start; row < stop; row++) {
        const T *x = k->x + row * 3 * h, *hg = k->hg + row * 3 * h, *hprev = k->state + row * h;
        const T *grad = k->grad ? k->grad + row * h : NULL;
        T *out = k->out + row * (k->back && k->index < 2 ? 3 * h : h);
        for (long j = 0; j < h; j++) {
            T r = SIGMOID(x[j] + hg[j]), z = SIGMOID(x[h + j] + hg[h + j]);
            T nn = TANH(x[2 * h + j] + r * hg[2 * h + j]);
            if (!k->back) {
                out[j] = nn + z * (hprev[j] - nn);
                continue;
            }
            if (k->index == 2) {
                out[j] = grad[j] * z;
                continue;
            }
            T d_n = grad[j] * (1 - z) * (1 - nn * nn);
            out[j] = d_n * hg[2 * h + j] * r * (1 - r);
            out[h + j] = grad[j] * (hprev[j] - nn) * z * (1 - z);
            out[2 * h + j] = k->index == 0 ? d_n : d_n * r;
        }
    }
}

void NAME(tf_lstm_cell)(const T *x, const T *hg, const T *state, T *out, long n, long h) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = state, .out = out, .n = n, .h = h};
    tf_parallel_for(n, n * h * 8, NAME(lstm_chunk), &k);
}

void NAME(tf_lstm_cell_back)(const T *x, const T *hg, const T *state, const T *grad, T *out, long n, long h,
                             int index) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = state, .grad = grad, .out = out, .n = n, .h = h,
                         .index = index, .back = 1};
    tf_parallel_for(n, n * h * 10, NAME(lstm_chunk), &k);
}

void NAME(tf_gru_cell)(const T *x, const T *hg, const T *hprev, T *out, long n, long h) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = hprev, .out = out, .n = n, .h = h};
    tf_parallel_for(n, n * h * 7, NAME(gru_chunk), &k);
}

void NAME(tf_gru_cell_back)(const T *x, const T *hg, const T *hprev, const T *grad, T *out, long n, long h,
                            int index) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = hprev, .grad = grad, .out = out, .n = n, .h = h,
                         .index = index, .back = 1};
    tf_parallel_for(n, n * h * 8, NAME(gru_chunk), &k);
}
