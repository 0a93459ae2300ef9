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

/* One row of each kernel; rows are independent, so threads split the rows. */
static void NAME(layer_norm_row)(const T *x, T *y, long cols, double eps) {
    T inv_std, mean = NAME(row_moments)(x, cols, eps, &inv_std);
    for (long j = 0; j < cols; j++) y[j] = (x[j] - mean) * inv_std;
}

static void NAME(layer_norm_back_row)(const T *x, const T *g, T *out, long cols, double eps) {
    T inv_std, mean = NAME(row_moments)(x, cols, eps, &inv_std);
    double g_total = 0, gx_total = 0;
#pragma omp simd reduction(+ : g_total, gx_total)
    for (long j = 0; j < cols; j++) {
        g_total += g[j];
        gx_total += g[j] * ((x[j] - mean) * inv_std);
    }
    T g_mean = (T)(g_total / (double)cols), gx_mean = (T)(gx_total / (double)cols);
    for (long j = 0; j < cols; j++) out[j] = inv_std * (g[j] - g_mean - (x[j] - mean) * inv_std * gx_mean);
}

typedef struct {
    const T *x, *g; /* g: the incoming gradient of the backward kernel, NULL for the forward one */
    T *out;
    long cols;
    double eps;
} NAME(layer_norm_args);

static void NAME(layer_norm_chunk)(void *p, long start, long stop) {
    NAME(layer_norm_args) *k = p;
    long cols = k->cols;
    for (long r = start; r < stop; r++) {
        if (k->g) NAME(layer_norm_back_row)(k->x + r * cols, k->g + r * cols, k->out + r * cols, cols, k->eps);
        else NAME(layer_norm_row)(k->x + r * cols, k->out + r * cols, cols, k->eps);
    }
}

void NAME(tf_layer_norm)(const T *x, T *y, long rows, long cols, double eps) {
    NAME(layer_norm_args) k = {x, NULL, y, cols, eps};
    tf_parallel_for(rows, rows * cols, NAME(layer_norm_chunk), &k);
}

void NAME(tf_layer_norm_back)(const T *x, const T *g, T *out, long rows, long cols, double eps) {
    NAME(layer_norm_args) k = {x, g, out, cols, eps};
    tf_parallel_for(rows, rows * cols, NAME(layer_norm_chunk), &k);
}
