/* Row-wise softmax kernels and the fused softmax cross-entropy, one work-item per row
 * of a rows x cols array (mirrors ckernels/src/softmax.c). */
T row_max(__global const T *x, long cols) {
    T m = x[0];
    for (long j = 1; j < cols; j++) m = fmax(m, x[j]);
    return m;
}
/* log Σ e^(x - m) with m the row's max (stored in *m): callers compute (x - m) - that, which keeps the
 * precision x - (m + log Σ) loses for large logits */
T row_shifted_logsumexp(__global const T *x, long cols, T *m) {
    T s = 0;
    *m = row_max(x, cols);
    for (long j = 0; j < cols; j++) s += exp(x[j] - *m);
    return log(s);
}
__kernel void softmax(__global const T *x, __global T *y, long cols) {
    __global const T *xr = x + get_global_id(0) * cols;
    __global T *yr = y + get_global_id(0) * cols;
    T m = row_max(xr, cols), s = 0;
    for (long j = 0; j < cols; j++) { yr[j] = exp(xr[j] - m); s += yr[j]; }
    for (long j = 0; j < cols; j++) yr[j] /= s;
}
__kernel void log_softmax(__global const T *x, __global T *y, long cols) {
    __global const T *xr = x + get_global_id(0) * cols;
    __global T *yr = y + get_global_id(0) * cols;
    T m;
    T lse = row_shifted_logsumexp(xr, cols, &m);
    for (long j = 0; j < cols; j++) yr[j] = (xr[j] - m) - lse;
}
__kernel void softmax_back(__global const T *y, __global const T *g, __global T *out, long cols) {
    long r = get_global_id(0);
    T dot = 0;
    for (long j = 0; j < cols; j++) dot += g[r * cols + j] * y[r * cols + j];
    for (long j = 0; j < cols; j++) out[r * cols + j] = y[r * cols + j] * (g[r * cols + j] - dot);
}
__kernel void log_softmax_back(__global const T *y, __global const T *g, __global T *out, long cols) {
    long r = get_global_id(0);
    T total = 0;
    for (long j = 0; j < cols; j++) total += g[r * cols + j];
    for (long j = 0; j < cols; j++) out[r * cols + j] = g[r * cols + j] - exp(y[r * cols + j]) * total;
}
/* losses[r] = logsumexp(row r) - row r[label r]; the host side checked the labels and takes the mean. */
__kernel void softmax_xent(__global const T *logits, __global const long *labels, __global T *losses, long cols) {
    long r = get_global_id(0);
    __global const T *zr = logits + r * cols;
    T m;
    T lse = row_shifted_logsumexp(zr, cols, &m);
    losses[r] = lse - (zr[labels[r]] - m);
}
/* out = (softmax(logits) - onehot(labels)) * scale, scale = grad / rows */
__kernel void softmax_xent_back(__global const T *logits, __global const long *labels, T scale, __global T *out,
                                long cols) {
    long r = get_global_id(0);
    __global const T *zr = logits + r * cols;
    __global T *o = out + r * cols;
    T m = row_max(zr, cols), s = 0;
    for (long j = 0; j < cols; j++) { o[j] = exp(zr[j] - m); s += o[j]; }
    for (long j = 0; j < cols; j++) o[j] = o[j] / s * scale;
    o[labels[r]] -= scale;
}
