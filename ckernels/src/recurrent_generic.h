/* LSTM and GRU cell kernels for the type T (see recurrent.c). Rows (batch entries) are independent: threads split
 * them; within a row each loop runs over the h values of every gate at once, without branches, so it vectorizes. */

typedef struct {
    const T *x, *hg, *state, *grad;
    T *out;
    long n, h;
    int index; /* with grad: the input whose gradient is computed */
} NAME(cell_args);

TF_CLONES static void NAME(lstm_row)(const T *restrict x, const T *restrict hg, const T *restrict c,
                                     T *restrict h_out, T *restrict c_out, long h) {
    for (long j = 0; j < h; j++) {
        T i = SIGMOID(x[j] + hg[j]), f = SIGMOID(x[h + j] + hg[h + j]);
        T g = TANH(x[2 * h + j] + hg[2 * h + j]), o = SIGMOID(x[3 * h + j] + hg[3 * h + j]);
        T c_next = f * c[j] + i * g;
        c_out[j] = c_next;
        h_out[j] = o * TANH(c_next);
    }
}

/* The gradient of the gates (d_gates, 4h values) or of c (d_gates NULL: d_c_prev, h values) of one row. */
TF_CLONES static void NAME(lstm_back_row)(const T *restrict x, const T *restrict hg, const T *restrict c,
                                          const T *restrict dh, const T *restrict dc, T *restrict d_gates,
                                          T *restrict d_c_prev, long h) {
    for (long j = 0; j < h; j++) {
        T i = SIGMOID(x[j] + hg[j]), f = SIGMOID(x[h + j] + hg[h + j]);
        T g = TANH(x[2 * h + j] + hg[2 * h + j]), o = SIGMOID(x[3 * h + j] + hg[3 * h + j]);
        T tanh_c = TANH(f * c[j] + i * g);
        T d_c = dc[j] + dh[j] * o * (1 - tanh_c * tanh_c);
        if (d_gates) {
            d_gates[j] = d_c * g * i * (1 - i);
            d_gates[h + j] = d_c * c[j] * f * (1 - f);
            d_gates[2 * h + j] = d_c * i * (1 - g * g);
            d_gates[3 * h + j] = dh[j] * tanh_c * o * (1 - o);
        } else {
            d_c_prev[j] = d_c * f;
        }
    }
}

TF_CLONES static void NAME(lstm_chunk)(void *p, long start, long stop) {
    const NAME(cell_args) *k = p;
    long n = k->n, h = k->h;
    for (long row = start; row < stop; row++) {
        const T *x = k->x + row * 4 * h, *hg = k->hg + row * 4 * h, *c = k->state + (n + row) * h;
        if (!k->grad) {
            NAME(lstm_row)(x, hg, c, k->out + row * h, k->out + (n + row) * h, h);
        } else if (k->index < 2) {
            NAME(lstm_back_row)(x, hg, c, k->grad + row * h, k->grad + (n + row) * h, k->out + row * 4 * h, NULL, h);
        } else {
            memset(k->out + row * h, 0, h * sizeof(T)); /* h reaches the cell through h_gates only */
            NAME(lstm_back_row)(x, hg, c, k->grad + row * h, k->grad + (n + row) * h, NULL, k->out + (n + row) * h, h);
        }
    }
}

TF_CLONES static void NAME(gru_row)(const T *restrict x, const T *restrict hg, const T *restrict hprev,
                                    const T *restrict grad, T *restrict out, long h, int index) {
    for (long j = 0; j < h; j++) {
        T r = SIGMOID(x[j] + hg[j]), z = SIGMOID(x[h + j] + hg[h + j]);
        T nn = TANH(x[2 * h + j] + r * hg[2 * h + j]);
        if (!grad) {
            out[j] = nn + z * (hprev[j] - nn);
        } else if (index == 2) {
            out[j] = grad[j] * z;
        } else {
            T d_n = grad[j] * (1 - z) * (1 - nn * nn);
            out[j] = d_n * hg[2 * h + j] * r * (1 - r);
            out[h + j] = grad[j] * (hprev[j] - nn) * z * (1 - z);
            out[2 * h + j] = index == 0 ? d_n : d_n * r;
        }
    }
}

TF_CLONES static void NAME(gru_chunk)(void *p, long start, long stop) {
    const NAME(cell_args) *k = p;
    long h = k->h, width = k->grad && k->index < 2 ? 3 * h : h;
    for (long row = start; row < stop; row++)
        NAME(gru_row)(k->x + row * 3 * h, k->hg + row * 3 * h, k->state + row * h,
                      k->grad ? k->grad + row * h : NULL, k->out + row * width, h, k->index);
}

/* grad NULL: the cell's output; else the gradient of its input `index` for the gradient `grad` of the output */
void NAME(tf_lstm_cell)(const T *x, const T *hg, const T *state, const T *grad, T *out, long n, long h, int index) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = state, .grad = grad, .out = out, .n = n, .h = h, .index = index};
    tf_parallel_for(n, n * h * (grad ? 10 : 8), NAME(lstm_chunk), &k);
}

void NAME(tf_gru_cell)(const T *x, const T *hg, const T *hprev, const T *grad, T *out, long n, long h, int index) {
    NAME(cell_args) k = {.x = x, .hg = hg, .state = hprev, .grad = grad, .out = out, .n = n, .h = h, .index = index};
    tf_parallel_for(n, n * h * (grad ? 8 : 7), NAME(gru_chunk), &k);
}
