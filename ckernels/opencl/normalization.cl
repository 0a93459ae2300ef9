/* Layer normalization of x viewed as rows x cols, one work-item per row (mirrors ckernels/src/normalization.c):
 * two passes (mean, then squares) for the variance; layer_norm_back is dL/dx for dL/dy = g. */
T row_mean(__global const T *x, long cols) {
    T total = 0;
    for (long j = 0; j < cols; j++) total += x[j];
    return total / cols;
}
T row_inv_std(__global const T *x, long cols, T mean, T eps) {
    T squares = 0;
    for (long j = 0; j < cols; j++) squares += (x[j] - mean) * (x[j] - mean);
    return 1 / sqrt(squares / cols + eps);
}
__kernel void layer_norm(__global const T *x, __global T *y, long cols, T eps) {
    long r = get_global_id(0);
    __global const T *xr = x + r * cols;
    T mean = row_mean(xr, cols), inv_std = row_inv_std(xr, cols, mean, eps);
    for (long j = 0; j < cols; j++) y[r * cols + j] = (xr[j] - mean) * inv_std;
}
__kernel void layer_norm_back(__global const T *x, __global const T *g, __global T *out, long cols, T eps) {
    long r = get_global_id(0);
    __global const T *xr = x + r * cols, *gr = g + r * cols;
    T mean = row_mean(xr, cols), inv_std = row_inv_std(xr, cols, mean, eps), g_total = 0, gx_total = 0;
    for (long j = 0; j < cols; j++) {
        g_total += gr[j];
        gx_total += gr[j] * (xr[j] - mean) * inv_std;
    }
    T g_mean = g_total / cols, gx_mean = gx_total / cols;
    for (long j = 0; j < cols; j++) out[r * cols + j] = inv_std * (gr[j] - g_mean - (xr[j] - mean) * inv_std * gx_mean);
}
