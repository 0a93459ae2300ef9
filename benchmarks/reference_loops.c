/* The hand-written loops the benchmarks compare tinyflow with: what an expert writes in C
 * for each computation, one pass, OpenMP across the run's threads. benchmarks/reference.py
 * compiles this file once per run with -O3 -march=native -ffast-math -fopenmp and links
 * -lmvec -lm: with -ffast-math, GCC turns expf in a vectorised loop into glibc's vector
 * functions (libmvec), so these are the best a compiler does for a plain loop.
 *
 * float arrays of n elements; `restrict` promises the compiler that they do not overlap. */
#include <math.h>
#include <omp.h>

/* The thread count a parallel loop here uses (the calling thread's OpenMP setting). */
int reference_omp_threads(void) { return omp_get_max_threads(); }

/* STREAM triad a = b + s c: the machine's memory bandwidth, all threads of the run. */
void reference_triad(float *restrict a, const float *restrict b, const float *restrict c, float s, long n) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* The same triad on the calling thread alone: what one core can pull from memory. */
void reference_triad_serial(float *restrict a, const float *restrict b, const float *restrict c, float s, long n) {
    long i;
    for (i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* W4: out = c sigmoid(a x + b), fused into one pass. */
void reference_fused_sigmoid(const float *restrict x, float *restrict out, long n, float a, float b, float c) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) out[i] = c / (1.0f + expf(-(a * x[i] + b)));
}

/* Kernels table: y = sigmoid(x), and its gradient out = g y (1 - y) from the output y. */
void reference_sigmoid(const float *restrict x, float *restrict y, long n) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

void reference_sigmoid_back(const float *restrict y, const float *restrict g, float *restrict out, long n) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) out[i] = g[i] * y[i] * (1.0f - y[i]);
}

/* Kernels table: y = max(x, 0), and its gradient out = g where y > 0. */
void reference_relu(const float *restrict x, float *restrict y, long n) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void reference_relu_back(const float *restrict y, const float *restrict g, float *restrict out, long n) {
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) out[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

/* W6 and the kernels table: one Adam step (bias-corrected, step t >= 1) in one pass over
 * the parameters p, their gradient g and the moments m, v. */
void reference_adam(float *restrict p, const float *restrict g, float *restrict m, float *restrict v, long n,
                    float lr, float beta1, float beta2, float eps, long t) {
    const float step = lr / (1.0f - powf(beta1, (float)t));
    const float inv_sqrt_c2 = 1.0f / sqrtf(1.0f - powf(beta2, (float)t));
    long i;
#pragma omp parallel for schedule(static)
    for (i = 0; i < n; i++) {
        const float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
        const float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        m[i] = mi;
        v[i] = vi;
        p[i] -= step * mi / (sqrtf(vi) * inv_sqrt_c2 + eps);
    }
}
