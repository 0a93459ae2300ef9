/* Row-wise layer normalization and its backward kernel, for the type T. */

/* The row's mean, and 1/sqrt(var + eps) in *inv_std. */
TF_CLONES static T NAME(row_moments)(const T *x, long cols, double eps, T *inv_std) {
    double total = 0;
#pragma omp simd reduction(+ : total)
    for (long j = 0; j < cols; j++) total += x[j];
    T mean = (T)(total / (double)cols);
    double squares = 0;
#pragma omp simd reduction(+ : squares)
    for (long j = 0; j < cols; j++) {
        T d = x[j] - mean;
        squares += d * d;
    }
    *inv_std = (T)1 / SQRT((T)(squares / (double)cols) + (T)eps);
    return mean;
}

void NAME(tf_layer_norm)(const T *x, T *y, long rows, long cols, double eps) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        T inv_std, mean = NAME(row_moments)(xr, cols, eps, &inv_std);
        for (long j = 0; j < cols; j++) yr[j] = (xr[j] - mean) * inv_std;
    }
}

void NAME(tf_layer_norm_back)(const T *x, const T *g, T *out, long rows, long cols, double eps) {
    long r;
#pragma omp parallel for if (rows * cols >= TF_PARALLEL_MIN) schedule(static)
    for (r = 0; r < rows; r++) {
        const T *xr = x + r * cols, *gr = g + r * cols;
        T *o = out + r * cols;
        T inv_std, mean = NAME(row_moments)(xr, cols, eps, &inv_std);
        double g_total = 0, gx_total = 0;
#pragma omp simd reduction(+ : g_total, gx_total)
        for (long j = 0; j < cols; j++) {
            g_total += gr[j];
            gx_total += gr[j] * ((xr[j] - mean) * inv_std);
        }
        T g_mean = (T)(g_total / (double)cols), gx_mean = (T)(gx_total / (double)cols);
        for (long j = 0; j < cols; j++) o[j] = inv_std * (gr[j] - g_mean - (xr[j] - mean) * inv_std * gx_mean);
    }
}
