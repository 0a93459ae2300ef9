/* tinyflow's float math that compilers can vectorize: e^x, log, log1p, tanh, sigmoid, erf.
 *
 * libm's expf, logf, tanhf are function calls that GCC will not turn into SIMD code
 * (without -ffast-math, which would also break NaN and inf), so a loop calling them runs
 * one element at a time: a tenth of the memory bandwidth. These are plain arithmetic,
 * bit operations and selects, with numpy's semantics: NaN in gives NaN out, ±inf and
 * overflow give what libm gives, denormals are computed (not flushed), and the accuracy
 * is within 2 ulp of the float64 result over the whole float range
 * (tests/backends/test_math.py measures it). The polynomials come from
 * scripts/fit_math_polynomials.py.
 *
 * Both the C kernel library (ckernels/src) and the fused kernels that tinyflow generates
 * at run time (tinyflow/fusion/codegen_c.py pastes this file into each one) use it, both
 * compiled with -ffp-contract=off, so the two compute the same bits. Double precision
 * calls libm.
 */
#ifndef TF_MATH_H
#define TF_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float tf_bits_to_float(int32_t i) {
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

static inline int32_t tf_float_to_bits(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

/* a b + c in one rounding, written out: everything here is compiled with -ffp-contract=off (the user's a*b+c
 * must round twice, as numpy rounds it), and fmaf is exact everywhere (an instruction where the CPU has FMA,
 * libm elsewhere), so the C library's kernels, each of its per-CPU builds and generated kernels all give the
 * same bits. */
#define TF_FMA(a, b, c) fmaf(a, b, c)

/* c[0] x^(n-1) + ... + c[n-1], by Horner's rule (unrolled by the compiler: n is a constant) */
static inline float tf_poly(const float *c, int n, float x) {
    float p = c[0];
    for (int i = 1; i < n; i++) p = TF_FMA(p, x, c[i]);
    return p;
}

static const float TF_EXP_P[5] = {1.375140739e-03f, 8.368915878e-03f, 4.166953266e-02f, 1.666651815e-01f,
                                  4.999998808e-01f};
static const float TF_LOG_Q[8] = {-7.362867892e-02f, 1.262032688e-01f, -1.320210397e-01f, 1.422711462e-01f,
                                  -1.662137061e-01f, 1.999982595e-01f, -2.500085235e-01f, 3.333335519e-01f};
static const float TF_TANH_T[6] = {2.148990985e-03f, -8.184669539e-03f, 2.170400321e-02f, -5.394745618e-02f,
                                   1.333321184e-01f, -3.333333135e-01f};
static const float TF_ERF_SMALL[7] = {7.933485904e-05f, -8.034844068e-04f, 5.191218108e-03f, -2.685539983e-02f,
                                      1.128362566e-01f, -3.761262894e-01f, 1.283791661e-01f};
static const float TF_ERFC_H[12] = {-3.835798736e-07f, 1.658841825e-06f, -4.009343229e-06f, 1.442577741e-05f,
                                    -5.894270726e-05f, 2.128320484e-04f, -7.337129791e-04f, 2.466092817e-03f,
                                    -8.001474664e-03f, 2.493817359e-02f, -7.434736192e-02f, 2.108063549e-01f};

enum { TF_EXP_SHIFT_BITS = 0x4b400000 }; /* the bits of 1.5 * 2^23: adding it to a float rounds to an integer */
#define TF_EXP_SHIFT 12582912.0f

/* x = k ln2 + r with |r| <= ln2/2: returns r and sets *k_shifted = k + TF_EXP_SHIFT, a float whose low bits hold
 * the integer k. ln2 in two parts: k ln2_hi - x is a multiple of 2^-24 under 1/2, so the first FMA is exact and
 * r rounds once. */
static inline float tf_exp_reduce(float x, float *k_shifted) {
    *k_shifted = TF_FMA(x, 1.44269504088896341f, TF_EXP_SHIFT);
    float k = *k_shifted - TF_EXP_SHIFT;
    return TF_FMA(-k, -1.904654323e-09f, TF_FMA(-k, 0.693147182464599609375f, x));
}

/* k from tf_exp_reduce's k_shifted, as an integer */
static inline int32_t tf_exp_k(float k_shifted) { return tf_float_to_bits(k_shifted) - TF_EXP_SHIFT_BITS; }

/* e^r - 1 for |r| <= ln2/2: r + r^2 p(r) */
static inline float tf_expm1_reduced(float r) { return TF_FMA(r * r, tf_poly(TF_EXP_P, 5, r), r); }

/* e^x for x in [-104, 89], as hi + lo (lo: what rounding hi lost, for callers that need more than float
 * precision). x = k ln2 + r, e^r = 1 + s, then times 2^k, put into the exponent bits. Where 2^k is no normal
 * float (k < -125: the result is denormal; k > 126: near overflow), the scaling is 2^(k+j) then 2^-j, so the
 * last product rounds once: denormals come out right, and +inf just above 88.72. `below_zero`: the caller
 * knows x <= 0 (a constant after inlining: the overflow case then costs nothing). */
static inline float tf_exp_split(float x, float *lo, int below_zero) {
    float k_shifted, s = tf_expm1_reduced(tf_exp_reduce(x, &k_shifted));
    float p = 1.0f + s, p_lo = (1.0f - p) + s; /* Fast2Sum: |s| < 1 */
    int32_t k = tf_exp_k(k_shifted), tiny = k < -125, huge = !below_zero && k > 126;
    float scale = tf_bits_to_float((int32_t)((uint32_t)(k + (tiny ? 24 : huge ? -1 : 0) + 127) << 23));
    float unscale = tiny ? 0x1p-24f : huge ? 2.0f : 1.0f;
    *lo = (p_lo * scale) * unscale;
    return (p * scale) * unscale;
}

/* e^x, with +inf above ln(FLT_MAX), denormals then 0 below -87.3, NaN for NaN. */
static inline float tf_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x; /* keeps n in range; the result is fixed below */
    xc = xc > 89.0f ? 89.0f : xc;
    xc = x != x ? 0.0f : xc; /* NaN would make (int32_t)n undefined */
    float lo, result = tf_exp_split(xc, &lo, 0);
    result = x > 89.0f ? INFINITY : result;
    result = x < -104.0f ? 0.0f : result;
    return x != x ? x : result;
}

/* log x + c for a tiny correction c: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log m = z - z^2/2 + z^3 q(z)
 * for z = m - 1, and c joins the small terms before the large ones; denormals are scaled by 2^24 first;
 * log 0 = -inf, log of a negative number = NaN, log inf = inf. */
static inline float tf_log_plus(float x, float c) {
    int tiny = x < 1.17549435e-38f;
    float xs = tiny ? x * 16777216.0f : x;
    int32_t bits = tf_float_to_bits(xs);
    int32_t e = ((bits >> 23) & 0xff) - 127 - (tiny ? 24 : 0);
    float m = tf_bits_to_float((bits & 0x007fffff) | 0x3f800000); /* in [1, 2) */
    int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    float fe = (float)(e + big);
    float z = m - 1.0f, z2 = z * z;
    float y = z * z2 * tf_poly(TF_LOG_Q, 8, z) + fe * -2.12194440e-4f - 0.5f * z2 + c;
    float result = z + y + fe * 0.693359375f;
    result = x == INFINITY ? x : result;
    result = x == 0.0f ? -INFINITY : result; /* after any correction c: log1p(-1) = -inf */
    result = x < 0.0f ? NAN : result;
    return x != x ? x : result;
}

static inline float tf_logf(float x) { return tf_log_plus(x, 0.0f); }

/* log(1 + x): log u for u = 1 + x, plus (x - (u - 1)) / u, the first-order term of what rounding u lost. */
static inline float tf_log1pf(float x) {
    float u = 1.0f + x;
    return x == 0.0f ? x : tf_log_plus(u, (x - (u - 1.0f)) / u); /* log1p(-0) = -0 */
}

/* tanh x: x + x^3 t(x^2) near 0 (where the formula below would cancel), else 1 - 2 / (e^2|x| + 1) with x's sign. */
static inline float tf_tanhf(float x) {
    float a = fabsf(x), x2 = x * x;
    float small = copysignf(x + x * x2 * tf_poly(TF_TANH_T, 6, x2), x); /* tanh(-0) = -0 */
    float large = copysignf(1.0f - 2.0f / (tf_expf(2.0f * a) + 1.0f), x);
    return a < 0.625f ? small : large;
}

/* Sigmoid for |x| <= TF_SIGMOID_COMMON, where no NaN, infinity or denormal can occur: 1 / (1 + e) for e = e^-x,
 * the quotient corrected once for what rounding d = 1 + e lost (Fast2Sum of the larger and the smaller: e > 0,
 * so their bits order as their values). Every float in the range is within 1.5 ulp of the float64 sigmoid
 * (measured exhaustively); 26 operations and a division, no select on the sign. Loops run a block with it while
 * taking the largest tf_magnitude_bits of the arguments, and run the block again with tf_sigmoidf when it is
 * above TF_SIGMOID_COMMON_BITS (an integer maximum per vector: a compare, a select and an or cost W4 4-5%). */
#define TF_SIGMOID_COMMON 86.0f
#define TF_SIGMOID_COMMON_BITS 0x42ac0000 /* the bits of 86.0f */
enum { TF_MATH_BLOCK = 256 }; /* elements per check: 1 KiB of floats, still in L1 when the block runs */

/* |x| as ordered integer bits: NaN and ±inf are larger than the bits of any finite float */
static inline int32_t tf_magnitude_bits(float x) { return tf_float_to_bits(x) & 0x7fffffff; }
static inline int tf_sigmoid_is_common(float x) { return tf_magnitude_bits(x) <= TF_SIGMOID_COMMON_BITS; }

static inline float tf_sigmoidf_common(float x) {
    float k_shifted, s = tf_expm1_reduced(tf_exp_reduce(-x, &k_shifted));
    /* e = (1 + s) 2^k with k added to the exponent bits (k_shifted's low bits, shifted there, are k): the product's
     * bits, since e is a normal float for |x| <= 86, in one integer addition instead of a multiplication. Unsigned,
     * because a block's loop also runs this on arguments beyond 86 (and then discards the results). */
    uint32_t e_unsigned = (uint32_t)tf_float_to_bits(1.0f + s) + ((uint32_t)tf_float_to_bits(k_shifted) << 23);
    float e = tf_bits_to_float((int32_t)e_unsigned);
    float d = 1.0f + e;
    int32_t e_bits = tf_float_to_bits(e), one_bits = 0x3f800000;
    float big = tf_bits_to_float(e_bits > one_bits ? e_bits : one_bits);
    float small = tf_bits_to_float(e_bits > one_bits ? one_bits : e_bits);
    float d_lo = (big - d) + small, q = 1.0f / d;
    return TF_FMA(TF_FMA(-q, d_lo, TF_FMA(-q, d, 1.0f)), q, q); /* q + q (1 - q (d + d_lo)) */
}

/* sigmoid x for every float: the common form, 1 above 86 (1 + e^-x rounds to 1), e^x below -86 (e^x / (1 + e^x)
 * is e^x to far below an ulp, and tf_expf gets the denormals right), NaN for NaN. */
static inline float tf_sigmoidf(float x) {
    float common = tf_sigmoidf_common(tf_sigmoid_is_common(x) ? x : 0.0f);
    float y = x > TF_SIGMOID_COMMON ? 1.0f : x < -TF_SIGMOID_COMMON ? tf_expf(x) : common;
    return x != x ? x : y;
}

/* erf x: x + x s(x^2) for |x| < 1 (adding x last keeps s's rounding small); 1 - e^(-x^2) h(|x|) for 1 <= |x| < 4 (h = erfc e^(x^2) is smooth); ±1 beyond. */
static inline float tf_erff(float x) {
    float a = fabsf(x), x2 = x * x;
    float small = x + x * tf_poly(TF_ERF_SMALL, 7, x2);
    float middle = copysignf(1.0f - tf_expf(-x2) * tf_poly(TF_ERFC_H, 12, a - 2.5f), x);
    float result = a < 4.0f ? middle : copysignf(1.0f, x);
    result = a < 1.0f ? small : result;
    return x != x ? x : result;
}

/* double precision: libm (numpy's float64 results exactly) */
static inline double tf_exp(double x) { return exp(x); }
static inline double tf_log(double x) { return log(x); }
static inline double tf_log1p(double x) { return log1p(x); }
static inline double tf_tanh(double x) { return tanh(x); }
static inline double tf_sigmoid(double x) {
    double e = exp(-fabs(x));
    return x < 0 ? e / (1 + e) : 1 / (1 + e);
}
static inline double tf_erf(double x) { return erf(x); }

#endif
