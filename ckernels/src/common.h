/* Shared by every kernel file (not part of the cffi interface).
 *
 * Kernels split their work into contiguous chunks, one per OpenMP thread, but
 * only above TF_PARALLEL_MIN elements (declared once, in tinyflow_kernels.h): waking sleeping threads costs ~60 µs
 * (tinyflow makes them sleep at once so they leave the cores to BLAS), about
 * what one core needs for 2^18 elements of a simple kernel. The loops over a chunk are plain C that GCC vectorizes; on
 * x86-64 with GCC they are compiled for AVX-512, AVX2+FMA and baseline SSE2,
 * and the best version for the running CPU is picked at load time.
 */
#ifndef TINYFLOW_COMMON_H
#define TINYFLOW_COMMON_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(TINYFLOW_NO_CLONES)
#define TF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TF_CLONES
#endif

/* Run CALL (which uses `start` and `stop`) over [0, n): one contiguous chunk per thread. */
#ifdef _OPENMP
#define TF_PARALLEL_CHUNKS(n, CALL)                                                   \
    do {                                                                              \
        long n_ = (n);                                                                \
        if (n_ < TF_PARALLEL_MIN || omp_get_max_threads() == 1) {                     \
            long start = 0, stop = n_;                                                \
            CALL;                                                                     \
        } else {                                                                      \
            _Pragma("omp parallel")                                                   \
            {                                                                         \
                long threads_ = omp_get_num_threads(), id_ = omp_get_thread_num();   \
                long start = n_ * id_ / threads_, stop = n_ * (id_ + 1) / threads_;   \
                CALL;                                                                 \
            }                                                                         \
        }                                                                             \
    } while (0)
#else
#define TF_PARALLEL_CHUNKS(n, CALL) \
    do {                            \
        long start = 0, stop = (n); \
        CALL;                       \
    } while (0)
#endif

/* e^x for float, written so that GCC can vectorize it (libm's expf is a scalar call).
 * Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, then a degree-6 polynomial
 * for e^r (Cephes' coefficients) and 2^n put straight into the exponent bits, in two
 * halves so that every n from -150 to 129 is a normal float: results are accurate
 * (relative error below 1e-7) over the whole float range, up to FLT_MAX at x = 88.72,
 * and IEEE beyond it: +inf above, denormals then 0 below -87.3, NaN stays NaN. */
static inline float tf_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x; /* keeps n in range; the result is fixed below */
    xc = xc > 89.0f ? 89.0f : xc;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - n * 0.693359375f - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, half = ni / 2;
    int32_t bits_low = (half + 127) << 23, bits_high = (ni - half + 127) << 23;
    float low, high;
    memcpy(&low, &bits_low, sizeof low);
    memcpy(&high, &bits_high, sizeof high);
    float result = (p * low) * high; /* overflows to +inf by itself just above ln(FLT_MAX) */
    result = x > 89.0f ? INFINITY : result;
    result = x < -104.0f ? 0.0f : result;
    return x != x ? x : result;
}

static inline double tf_exp(double x) { return exp(x); }

/* tanh for float, vectorizable: an odd Taylor polynomial near 0 (where (1-e)/(1+e) would cancel),
 * (1 - e^-2|x|) / (1 + e^-2|x|) with the sign restored elsewhere. */
static inline float tf_tanhf(float x) {
    float a = x < 0 ? -x : x;
    float x2 = x * x;
    float small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * 0.0218694885f))));
    float e = tf_expf(-2.0f * a);
    float t = (1.0f - e) / (1.0f + e);
    float large = x < 0 ? -t : t;
    return a < 0.3f ? small : large;
}

#endif
