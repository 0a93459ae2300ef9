/* Depthwise convolution (MobileNet's: one group per input channel, `multiplier` filters each) and its two gradients,
 * on NCHW data, for the type T; included by conv.c after conv_generic.h (window_args, tap blocks, the epilogue).
 * The filters come as (c * multiplier, 1, kh, kw): output plane (b, ch * multiplier + m) is input plane (b, ch)
 * filtered by filter ch * multiplier + m. As a matrix product per channel, (1 x 9) times (9 x P), the GEMM had
 * nothing to block; these kernels work plane by plane, one (image, channel) or one channel per step.
 *
 * Each output value is the weighted sum of its taps in tap order (row by row of the window), taps on padding left
 * out, whichever way a plane is computed: the three ways below give the same bits. */

#ifndef TINYFLOW_DEPTHWISE_MODES
#define TINYFLOW_DEPTHWISE_MODES
/* How tf_depthwise_conv computes a plane (window_args.mode), by its geometry. */
enum { DEPTHWISE_ROWS, DEPTHWISE_SHIFTS, DEPTHWISE_BLOCKS };
#endif

/* The output columns [*inner0, *inner1) whose every tap lies inside the input row. */
static inline void NAME(inner_columns)(const NAME(window_args) *k, long *inner0, long *inner1) {
    *inner0 = 0, *inner1 = k->wo;
    for (long dj = 0; dj < k->kw; dj++) {
        long first, last;
        NAME(inside_columns)(k->w, k->wo, k->sw, dj * k->dw - k->pw, &first, &last);
        *inner0 = first > *inner0 ? first : *inner0;
        *inner1 = last < *inner1 ? last : *inner1;
    }
    *inner1 = *inner1 < *inner0 ? *inner0 : *inner1;
}

/* The rows [*di0, *di1) of the window that lie inside the plane, for output row i. */
static inline void NAME(window_rows)(const NAME(window_args) *k, long i, long *di0, long *di1) {
    long top = i * k->sh - k->ph;
    for (*di0 = 0; *di0 < k->kh && top + *di0 * k->dh < 0; ++*di0) {}
    for (*di1 = k->kh; *di1 > *di0 && top + (*di1 - 1) * k->dh >= k->h; --*di1) {}
}

/* Output values [j0, j1) of output row i, L at a time: each the weighted sum of its taps, every tap's column inside
 * the input row (stride `sw`: callers pass a literal 1 or 2 where it is one, so that the loads vectorize). */
#define DEPTHWISE_RUN(L)                                                                                              \
    for (; j + L <= j1; j += L) {                                                                                     \
        T sum[L] = {0};                                                                                               \
        for (long di = di0; di < di1; di++)                                                                           \
            for (long dj = 0; dj < kw; dj++) {                                                                        \
                const T *src = plane + (top + di * dh) * w + j * sw + dj * dw - pw;                                   \
                T weight = weights[di * kw + dj];                                                                     \
                for (long l = 0; l < L; l++) sum[l] += weight * src[l * sw];                                          \
            }                                                                                                         \
        for (long l = 0; l < L; l++) out[j + l] = sum[l];                                                             \
    }
static inline void NAME(depthwise_run)(const NAME(window_args) *k, const T *plane, const T *weights, T *out, long i,
                                       long j0, long j1, long sw) {
    /* the geometry in locals: with -fno-strict-aliasing the stores to `out` could change k's fields for all the
     * compiler knows, and reloading them each time kept the loops from vectorizing */
    long top = i * k->sh - k->ph, kw = k->kw, w = k->w, dh = k->dh, dw = k->dw, pw = k->pw, di0, di1, j = j0;
    NAME(window_rows)(k, i, &di0, &di1);
    DEPTHWISE_RUN(16)
    DEPTHWISE_RUN(8)
    DEPTHWISE_RUN(1)
}
#undef DEPTHWISE_RUN

/* Output values [j0, j1) of output row i where some taps' columns fall on the padding: each tap tested. */
static inline void NAME(depthwise_edge)(const NAME(window_args) *k, const T *plane, const T *weights, T *out, long i,
                                        long j0, long j1) {
    long top = i * k->sh - k->ph, di0, di1;
    NAME(window_rows)(k, i, &di0, &di1);
    for (long j = j0; j < j1; j++) {
        T sum = 0;
        for (long di = di0; di < di1; di++)
            for (long dj = 0; dj < k->kw; dj++) {
                long col = j * k->sw + dj * k->dw - k->pw;
                if (col >= 0 && col < k->w) sum += weights[di * k->kw + dj] * plane[(top + di * k->dh) * k->w + col];
            }
        out[j] = sum;
    }
}

/* Rows of 16 inner values or more at a stride: each output row the weighted sum of the input rows its taps cover,
 * shifted by the tap's column, summed in registers; the edge columns take their taps one by one. No tap blocks are
 * written and read back (MobileNetV2's 112x112 -> 56x56: 3x faster than them on one thread). */
static inline void NAME(plane_by_rows)(const NAME(window_args) *k, const T *plane, const T *weights, T *out,
                                       long inner0, long inner1) {
    for (long i = 0; i < k->ho; i++) {
        T *row = out + i * k->wo;
        if (k->sw == 1)
            NAME(depthwise_run)(k, plane, weights, row, i, inner0, inner1, 1);
        else if (k->sw == 2)
            NAME(depthwise_run)(k, plane, weights, row, i, inner0, inner1, 2);
        else
            NAME(depthwise_run)(k, plane, weights, row, i, inner0, inner1, k->sw);
        NAME(depthwise_edge)(k, plane, weights, row, i, 0, inner0);
        NAME(depthwise_edge)(k, plane, weights, row, i, inner1, k->wo);
    }
}

/* A "same" window at stride 1 (the output plane the input's shape): a tap's values for the whole plane are the plane
 * shifted by `shift`, so each tap adds its weight times the shifted plane in one loop over the flat plane that
 * vectorizes whatever the width; the edge columns, where a shifted row ran into the next one, are then computed tap
 * by tap. On one thread, against tap blocks: 112x112 1.4x, 56x56 1.5x, 28x28 1.6x, 14x14 1.3x, 7x7 1.3x faster
 * (and faster than plane_by_rows, whose rows also start the window over at each one). */
static inline void NAME(plane_by_shifts)(const NAME(window_args) *k, const T *plane, const T *weights, T *restrict out,
                                         long inner0, long inner1) {
    long size = k->h * k->w;
    memset(out, 0, sizeof(T) * size);
    for (long di = 0; di < k->kh; di++)
        for (long dj = 0; dj < k->kw; dj++) {
            long shift = (di * k->dh - k->ph) * k->w + dj * k->dw - k->pw;
            long lo = shift < 0 ? -shift : 0, hi = shift > 0 ? size - shift : size; /* q + shift inside the plane */
            T weight = weights[di * k->kw + dj];
            for (long q = lo; q < hi; q++) out[q] += weight * plane[q + shift];
        }
    for (long i = 0; i < k->ho; i++) {
        NAME(depthwise_edge)(k, plane, weights, out + i * k->wo, i, 0, inner0);
        NAME(depthwise_edge)(k, plane, weights, out + i * k->wo, i, inner1, k->wo);
    }
}

/* Any other window (narrow rows at a stride): the plane's tap blocks (im2col's, made once for all its filters), then
 * each output value the weighted sum of its taps in one loop over the whole plane that vectorizes (digits, 64x1x8x8
 * into 8 planes, 3x3: 3.5 M instructions a call with a loop per output row and tap; this way 0.43 M). */
static inline void NAME(plane_by_blocks)(const NAME(window_args) *k, const T *blocks, const T *weights,
                                         T *restrict out) {
    long taps = k->kh * k->kw, size = k->ho * k->wo, q = 0;
    for (; q + 16 <= size; q += 16) { /* 16 sums in registers (a count the compiler knows), tap after tap */
        T sum[16] = {0};
        for (long tap = 0; tap < taps; tap++)
            for (long l = 0; l < 16; l++) sum[l] += weights[tap] * blocks[tap * size + q + l];
        for (long l = 0; l < 16; l++) out[q + l] = sum[l];
    }
    for (; q < size; q++) {
        T sum = 0;
        for (long tap = 0; tap < taps; tap++) sum += weights[tap] * blocks[tap * size + q];
        out[q] = sum;
    }
}

/* *blocks = the chunk's own scratch for the tap blocks of one plane when `mode` computes through them, else NULL;
 * 0 (and `failed` set) when it cannot be had. */
static inline int NAME(chunk_blocks)(NAME(window_args) *k, T **blocks) {
    *blocks = k->mode == DEPTHWISE_BLOCKS ? malloc(sizeof(T) * k->kh * k->kw * k->ho * k->wo) : NULL;
    int missing = k->mode == DEPTHWISE_BLOCKS && !*blocks;
    if (missing) k->failed = 1;
    return !missing;
}

/* One (image, input channel) per step: its planes in the way `mode` says, then each gets the epilogue (bias,
 * residual, clipping). Tap blocks are the chunk's own scratch. */
TF_CLONES static void NAME(depthwise_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    long taps = k->kh * k->kw, multiplier = k->multiplier, size = k->ho * k->wo, inner0, inner1;
    NAME(inner_columns)(k, &inner0, &inner1);
    T *blocks;
    if (!NAME(chunk_blocks)(k, &blocks)) return;
    for (long unit = start; unit < stop; unit++) {
        long ch = unit % k->c;
        const T *plane = k->x + unit * k->h * k->w;
        if (blocks) NAME(tap_blocks)(k, plane, blocks);
        for (long m = 0; m < multiplier; m++) {
            const T *weights = k->src + (ch * multiplier + m) * taps;
            T *out = k->dst + (unit * multiplier + m) * size;
            if (k->mode == DEPTHWISE_ROWS)
                NAME(plane_by_rows)(k, plane, weights, out, inner0, inner1);
            else if (k->mode == DEPTHWISE_SHIFTS)
                NAME(plane_by_shifts)(k, plane, weights, out, inner0, inner1);
            else
                NAME(plane_by_blocks)(k, blocks, weights, out);
            if (k->bias || k->residual || k->low > -INFINITY || k->high < INFINITY)
                NAME(bias_clip)(out, k->residual ? k->residual + (out - k->dst) : NULL, out, size,
                                k->bias ? k->bias[ch * multiplier + m] : (T)-0.0, k->low, k->high);
        }
    }
    free(blocks);
}

int NAME(tf_depthwise_conv)(const T *x, const T *filters, T *out, long multiplier, long n, long c, long h, long w,
                            long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo,
                            const T *bias, const T *residual, T low, T high) {
    NAME(window_args) k = {x, filters, out, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, DEPTHWISE_BLOCKS,
                           multiplier, bias, residual, low, high, 0};
    long inner0, inner1;
    NAME(inner_columns)(&k, &inner0, &inner1);
    if (sh == 1 && sw == 1 && ho == h && wo == w)
        k.mode = DEPTHWISE_SHIFTS;
    else if (inner1 - inner0 >= 16)
        k.mode = DEPTHWISE_ROWS;
    tf_parallel_for(n * c, n * c * multiplier * ho * wo * kh * kw, NAME(depthwise_chunk), &k);
    return k.failed;
}

/* Output-gradient values [j0, j1) of one row, times the tap's weight, added back to the input row values the tap read
 * (columns j * sw + offset; `sw` a literal where it is 1 or 2, so that the loop vectorizes). */
static inline void NAME(tap_scatter)(T *restrict row, const T *restrict grad, T weight, long offset, long j0, long j1,
                                     long sw) {
    for (long j = j0; j < j1; j++) row[j * sw + offset] += weight * grad[j];
}

/* The input gradient, the convolution's exact adjoint: each output gradient value, times each tap's weight, added
 * back to the input value that tap read (the inner columns in one loop per tap and row, the edge columns tested).
 * Any stride, padding and multiplier, and no multiply-add by the zeros that spreading the gradient out by the stride
 * for a convolution with the flipped filters made (3 in 4 at stride 2): 2.3x-6.6x faster than that on MobileNetV2's
 * planes of 28x28 and more. src holds the filters, x the output gradient (n, c * multiplier, ho, wo), dst the input
 * gradient. One (image, input channel) per step: its plane is written by that step alone. */
TF_CLONES static void NAME(depthwise_back_input_chunk)(void *p, long start, long stop) {
    const NAME(window_args) *k = p;
    long kh = k->kh, kw = k->kw, taps = kh * kw, multiplier = k->multiplier, ho = k->ho, wo = k->wo, inner0, inner1;
    NAME(inner_columns)(k, &inner0, &inner1);
    for (long unit = start; unit < stop; unit++) {
        long ch = unit % k->c;
        T *plane = k->dst + unit * k->h * k->w;
        memset(plane, 0, sizeof(T) * k->h * k->w);
        for (long m = 0; m < multiplier; m++) {
            const T *weights = k->src + (ch * multiplier + m) * taps, *g = k->x + (unit * multiplier + m) * ho * wo;
            for (long i = 0; i < ho; i++)
                for (long di = 0; di < kh; di++) {
                    long row = i * k->sh - k->ph + di * k->dh;
                    if (row < 0 || row >= k->h) continue;
                    for (long dj = 0; dj < kw; dj++) {
                        long offset = dj * k->dw - k->pw;
                        T weight = weights[di * kw + dj], *dst = plane + row * k->w;
                        if (k->sw == 1)
                            NAME(tap_scatter)(dst, g + i * wo, weight, offset, inner0, inner1, 1);
                        else if (k->sw == 2)
                            NAME(tap_scatter)(dst, g + i * wo, weight, offset, inner0, inner1, 2);
                        else
                            NAME(tap_scatter)(dst, g + i * wo, weight, offset, inner0, inner1, k->sw);
                        for (long j = 0; j < wo; j++) {
                            j = j == inner0 ? inner1 : j; /* the edge columns */
                            long col = j * k->sw + offset;
                            if (j < wo && col >= 0 && col < k->w) dst[col] += weight * g[i * wo + j];
                        }
                    }
                }
        }
    }
}

void NAME(tf_depthwise_back_input)(const T *g, const T *filters, T *dx, long multiplier, long n, long c, long h, long w,
                                   long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,
                                   long wo) {
    NAME(window_args) k = {g, filters, dx, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, 0, multiplier,
                           NULL, NULL, 0, 0, 0};
    tf_parallel_for(n * c, n * c * multiplier * ho * wo * kh * kw, NAME(depthwise_back_input_chunk), &k);
}

/* Tap (di, dj)'s sum of a gradient plane times the input plane its window reads: over the output rows whose tap row
 * lies inside the plane, the inner columns 16 at a time (stride `sw`: a literal where it is 1 or 2, as above), then
 * the edge columns whose tap lands inside. */
static inline T NAME(tap_dot)(const NAME(window_args) *k, const T *plane, const T *g, long di, long dj, long inner0,
                              long inner1, long sw) {
    long offset = dj * k->dw - k->pw;
    T sum[16] = {0}, total = 0;
    for (long i = 0; i < k->ho; i++) {
        long row = i * k->sh - k->ph + di * k->dh;
        if (row < 0 || row >= k->h) continue;
        const T *src = plane + row * k->w, *grad = g + i * k->wo;
        long j = inner0;
        for (; j + 16 <= inner1; j += 16)
            for (long l = 0; l < 16; l++) sum[l] += grad[j + l] * src[(j + l) * sw + offset];
        for (; j < inner1; j++) total += grad[j] * src[j * sw + offset];
        for (long e = 0; e < k->wo; e++) {
            e = e == inner0 ? inner1 : e; /* the edges: the columns left and right of the inner ones */
            long col = e * sw + offset;
            if (e < k->wo && col >= 0 && col < k->w) total += grad[e] * src[col];
        }
    }
    for (long l = 0; l < 16; l++) total += sum[l];
    return total;
}

/* The filter gradient: tap t of filter (ch * multiplier + m) is the sum, over images and output pixels, of that output
 * channel's gradient times the input values tap t read. Rows of 16 inner values or more are read straight (tap_dot);
 * narrower planes through their tap blocks (the chunk's own scratch), in cache while the gradient planes pass over
 * them. As im2col and a matrix product per channel, (1 x N·P) times (N·P x 9), it wrote and read every tap of every
 * image once more (MobileNetV2's 17 depthwise layers, batch 8: 150 ms a training step; 2.3x faster so). One input
 * channel per step, so that its filters' sums over the images are that step's alone. */
TF_CLONES static void NAME(depthwise_filter_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    long taps = k->kh * k->kw, multiplier = k->multiplier, size = k->ho * k->wo, inner0, inner1;
    NAME(inner_columns)(k, &inner0, &inner1);
    T *blocks;
    if (!NAME(chunk_blocks)(k, &blocks)) return;
    for (long ch = start; ch < stop; ch++) {
        T *grad = k->dst + ch * multiplier * taps;
        memset(grad, 0, sizeof(T) * multiplier * taps);
        for (long b = 0; b < k->n; b++) {
            const T *plane = k->x + (b * k->c + ch) * k->h * k->w;
            if (blocks) NAME(tap_blocks)(k, plane, blocks);
            for (long j = 0; j < multiplier * taps; j++) { /* filter j / taps, tap j % taps */
                const T *g = k->src + ((b * k->c + ch) * multiplier + j / taps) * size;
                long di = j % taps / k->kw, dj = j % k->kw;
                if (!blocks) {
                    grad[j] += k->sw == 1   ? NAME(tap_dot)(k, plane, g, di, dj, inner0, inner1, 1)
                               : k->sw == 2 ? NAME(tap_dot)(k, plane, g, di, dj, inner0, inner1, 2)
                                            : NAME(tap_dot)(k, plane, g, di, dj, inner0, inner1, k->sw);
                    continue;
                }
                const T *block = blocks + j % taps * size;
                T sum[16] = {0}, total = 0;
                long q = 0;
                for (; q + 16 <= size; q += 16) /* 16 partial sums that vectorize */
                    for (long l = 0; l < 16; l++) sum[l] += g[q + l] * block[q + l];
                for (; q < size; q++) total += g[q] * block[q];
                for (long l = 0; l < 16; l++) total += sum[l];
                grad[j] += total;
            }
        }
    }
    free(blocks);
}

int NAME(tf_depthwise_back_filter)(const T *x, const T *g, T *grad, long multiplier, long n, long c, long h, long w,
                                   long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,
                                   long wo) {
    NAME(window_args) k = {x, g, grad, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, DEPTHWISE_BLOCKS,
                           multiplier, NULL, NULL, 0, 0, 0};
    long inner0, inner1;
    NAME(inner_columns)(&k, &inner0, &inner1);
    k.mode = inner1 - inner0 >= 16 ? DEPTHWISE_ROWS : DEPTHWISE_BLOCKS;
    tf_parallel_for(c, n * c * multiplier * ho * wo * kh * kw, NAME(depthwise_filter_chunk), &k);
    return k.failed;
}
