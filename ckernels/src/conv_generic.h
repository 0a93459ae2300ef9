/* im2col / col2im and max pooling on NCHW data, for the type T.
 * Geometry for all: n images, c channels, h x w input, kh x kw window taps, stride sh, sw, leading zero
 * (or, for pooling, ignored) padding ph, pw, dilation dh, dw (taps dh, dw apart), output ho x wo. Taps
 * outside the input read as padding, so trailing padding and ceil_mode need no arguments of their own. */

/* The geometry and arrays of one call; chunks split output rows (im2col) or (image, channel) planes. */
typedef struct {
    const T *x, *src;
    T *dst;
    long n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
    int mode; /* pooling: see NAME(pool) */
} NAME(window_args);

/* Small padded images (digits, CIFAR-sized feature maps) have a large share of windows on the border, each tap
 * there checked. An image whose padded planes fit in IM2COL_PADDED_MAX values is copied once into a zeroed
 * padded copy, and every window is then read from it without a check (1x8x8, pad 1: 28 of 64 windows on the
 * border; a batch of 64: 29 -> 17 us, and 88 -> 59 us with 8 channels). */
#ifndef IM2COL_PADDED_MAX /* this header is included once per type */
#define IM2COL_PADDED_MAX 4096
#endif

/* the padded extent of an axis: from -pad to the last tap of the last window (trailing padding included) */
static long NAME(padded_extent)(long size, long pad, long out, long stride, long taps, long dilation) {
    long reach = (out - 1) * stride - pad + (taps - 1) * dilation + 1;
    return pad + (reach > size ? reach : size);
}

/* image b's c planes into `padded` (c x hp x wp, zero around), the input at row ph, column pw of each */
static void NAME(pad_image)(const NAME(window_args) *k, long b, T *padded, long hp, long wp) {
    memset(padded, 0, sizeof(T) * k->c * hp * wp);
    for (long ch = 0; ch < k->c; ch++)
        for (long row = 0; row < k->h; row++)
            memcpy(padded + (ch * hp + row + k->ph) * wp + k->pw, k->x + ((b * k->c + ch) * k->h + row) * k->w,
                   sizeof(T) * k->w);
}

/* im2col rows from padded images: every window lies inside, no checks */
static void NAME(im2col_padded)(const NAME(window_args) *k, long start, long stop, long hp, long wp) {
    T padded[IM2COL_PADDED_MAX];
    long c = k->c, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, dh = k->dh, dw = k->dw, ho = k->ho, wo = k->wo;
    long padded_image = -1;
    for (long row_block = start; row_block < stop; row_block++) {
        long b = row_block / ho, i = row_block % ho;
        if (b != padded_image) NAME(pad_image)(k, b, padded, hp, wp), padded_image = b;
        T *dst = k->dst + row_block * wo * c * kh * kw;
        for (long j = 0; j < wo; j++)
            for (long ch = 0; ch < c; ch++) {
                const T *corner = padded + (ch * hp + i * sh) * wp + j * sw;
                for (long di = 0; di < kh; di++, dst += kw) {
                    const T *src = corner + di * dh * wp;
                    if (kw == 3 && dw == 1) dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
                    else for (long dj = 0; dj < kw; dj++) dst[dj] = src[dj * dw];
                }
            }
    }
}

static void NAME(im2col_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *x = k->x;
    T *cols = k->dst;
    long c = k->c, h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long dh = k->dh, dw = k->dw, ho = k->ho, wo = k->wo, width = c * kh * kw;
    long hp = NAME(padded_extent)(h, ph, ho, sh, kh, dh), wp = NAME(padded_extent)(w, pw, wo, sw, kw, dw);
    if ((ph > 0 || pw > 0 || hp > h || wp > w) && c * hp * wp <= IM2COL_PADDED_MAX) {
        NAME(im2col_padded)(k, start, stop, hp, wp);
        return;
    }
    for (long row_block = start; row_block < stop; row_block++) {
        long b = row_block / ho, i = row_block % ho;
        long top = i * sh - ph;
        int rows_inside = top >= 0 && top + (kh - 1) * dh < h;
        for (long j = 0; j < wo; j++) {
            T *dst = cols + ((b * ho + i) * wo + j) * width;
            long left = j * sw - pw;
            if (rows_inside && left >= 0 && left + (kw - 1) * dw < w) { /* the window inside x: copy, no checks */
                for (long ch = 0; ch < c; ch++) {
                    const T *corner = x + (b * c + ch) * h * w + top * w + left;
                    for (long di = 0; di < kh; di++, dst += kw) {
                        const T *src = corner + di * dh * w;
                        if (kw == 3 && dw == 1) dst[0] = src[0], dst[1] = src[1], dst[2] = src[2];
                        else for (long dj = 0; dj < kw; dj++) dst[dj] = src[dj * dw];
                    }
                }
                continue;
            }
            for (long ch = 0; ch < c; ch++) {
                const T *plane = x + (b * c + ch) * h * w;
                for (long di = 0; di < kh; di++) {
                    long row = i * sh - ph + di * dh;
                    for (long dj = 0; dj < kw; dj++) {
                        long col = j * sw - pw + dj * dw;
                        *dst++ = (row >= 0 && row < h && col >= 0 && col < w) ? plane[row * w + col] : 0;
                    }
                }
            }
        }
    }
}

void NAME(tf_im2col)(const T *x, T *cols, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(window_args) k = {x, NULL, cols, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, 0};
    tf_parallel_for(n * ho, n * ho * wo * c * kh * kw, NAME(im2col_chunk), &k);
}

/* one (image, channel) plane per step: planes are disjoint, so no two threads add to one value */
static void NAME(col2im_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *cols = k->src;
    T *x = k->dst;
    long c = k->c, h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long dh = k->dh, dw = k->dw, ho = k->ho, wo = k->wo, width = c * kh * kw;
    for (long plane_index = start; plane_index < stop; plane_index++) {
        long b = plane_index / c, ch = plane_index % c;
        T *plane = x + plane_index * h * w;
        memset(plane, 0, sizeof(T) * h * w);
        for (long i = 0; i < ho; i++)
            for (long j = 0; j < wo; j++) {
                const T *src = cols + ((b * ho + i) * wo + j) * width + ch * kh * kw;
                for (long di = 0; di < kh; di++) {
                    long row = i * sh - ph + di * dh;
                    if (row < 0 || row >= h) continue;
                    for (long dj = 0; dj < kw; dj++) {
                        long col = j * sw - pw + dj * dw;
                        if (col >= 0 && col < w) plane[row * w + col] += src[di * kw + dj];
                    }
                }
            }
    }
}

void NAME(tf_col2im)(const T *cols, T *x, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(window_args) k = {NULL, cols, x, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, 0};
    tf_parallel_for(n * c, n * ho * wo * c * kh * kw, NAME(col2im_chunk), &k);
}

/* Flat index (in the plane) of the first maximum of window (i, j), or -1 when the window holds no input
 * value; padding never wins. A NaN is larger than everything (the first NaN wins), as in numpy's max and
 * argmax, so NaN propagates. */
static long NAME(window_argmax)(const T *plane, long h, long w, long kh, long kw, long sh, long sw, long ph,
                                long pw, long dh, long dw, long i, long j) {
    long best = -1;
    for (long di = 0; di < kh; di++) {
        long row = i * sh - ph + di * dh;
        if (row < 0 || row >= h) continue;
        for (long dj = 0; dj < kw; dj++) {
            long col = j * sw - pw + dj * dw;
            if (col < 0 || col >= w) continue;
            long at = row * w + col;
            if (best < 0 || plane[at] > plane[best] || (plane[at] != plane[at] && plane[best] == plane[best]))
                best = at;
        }
    }
    return best;
}

/* Pooling with 2x2 windows of stride 2 and no padding (the usual case), one output row at a time: the same first
 * maximum as window_argmax (a NaN beats a number, the first NaN wins), found with selects in the window's
 * order (a b / c d) from rows r0 and r1, so the loops over j vectorize. `at` is the winner's place, 0 to 3. */
#define NAME_FIRST_MAX(a, b, c, d, best, at)                        \
    T best = a, at = 0;                                             \
    if (b > best || (b != b && best == best)) best = b, at = 1;     \
    if (c > best || (c != c && best == best)) best = c, at = 2;     \
    if (d > best || (d != d && best == best)) best = d, at = 3;

static inline __attribute__((always_inline)) void NAME(pool_2x2_max)(const T *restrict r0, const T *restrict r1,
                                                                     T *restrict out, long wo) {
    for (long j = 0; j < wo; j++) {
        T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        NAME_FIRST_MAX(a, b, c, d, best, at)
        (void)at;
        out[j] = best;
    }
}

/* Four windows of a narrow row at once, with GCC vector types (4 lanes): the loops below stay scalar, with a
 * branch per comparison, where a row has fewer than 16 windows (64x8x8x8: 31 us -> 9.5 us). Each window's
 * first maximum, as flags: a NaN wins, the first NaN first; else the largest, the first of equal ones. */
typedef T NAME(lanes) __attribute__((vector_size(4 * sizeof(T))));
typedef LANE_INT NAME(lane_ints) __attribute__((vector_size(4 * sizeof(T))));

static inline __attribute__((always_inline)) void NAME(pool_2x2_back_4)(const T *restrict r0, const T *restrict r1,
                                                                        const T *restrict g, T *restrict o0,
                                                                        T *restrict o1) {
    const NAME(lane_ints) even = {0, 2, 4, 6}, odd = {1, 3, 5, 7}, low = {0, 4, 1, 5}, high = {2, 6, 3, 7};
    NAME(lanes) top0, top1, bottom0, bottom1, gv;
    memcpy(&top0, r0, sizeof top0), memcpy(&top1, r0 + 4, sizeof top1), memcpy(&gv, g, sizeof gv);
    memcpy(&bottom0, r1, sizeof bottom0), memcpy(&bottom1, r1 + 4, sizeof bottom1);
    NAME(lanes) a = __builtin_shuffle(top0, top1, even), b = __builtin_shuffle(top0, top1, odd);
    NAME(lanes) c = __builtin_shuffle(bottom0, bottom1, even), d = __builtin_shuffle(bottom0, bottom1, odd);
    NAME(lane_ints) na = a != a, nb = b != b, nc = c != c, nd = d != d, gi = (NAME(lane_ints))gv;
    NAME(lane_ints) is_a = na | (~(nb | nc | nd) & (a >= b) & (a >= c) & (a >= d));
    NAME(lane_ints) is_b = ~na & (nb | (~(nc | nd) & (b > a) & (b >= c) & (b >= d)));
    NAME(lane_ints) is_c = ~(na | nb) & (nc | (~nd & (c > a) & (c > b) & (c >= d)));
    NAME(lane_ints) is_d = ~(na | nb | nc) & (nd | ((d > a) & (d > b) & (d > c)));
    NAME(lanes) ga = (NAME(lanes))(gi & is_a), gb = (NAME(lanes))(gi & is_b);
    NAME(lanes) gc = (NAME(lanes))(gi & is_c), gd = (NAME(lanes))(gi & is_d);
    NAME(lanes) o0_low = __builtin_shuffle(ga, gb, low), o0_high = __builtin_shuffle(ga, gb, high);
    NAME(lanes) o1_low = __builtin_shuffle(gc, gd, low), o1_high = __builtin_shuffle(gc, gd, high);
    memcpy(o0, &o0_low, sizeof o0_low); /* one vector at a time: two through a stack array stalled the store */
    memcpy(o0 + 4, &o0_high, sizeof o0_high);
    memcpy(o1, &o1_low, sizeof o1_low);
    memcpy(o1 + 4, &o1_high, sizeof o1_high);
}

/* x's rows o0, o1 get g at each window's first maximum and 0 elsewhere (windows do not overlap) */
static inline __attribute__((always_inline)) void NAME(pool_2x2_back)(const T *restrict r0, const T *restrict r1,
                                                                      const T *restrict g, T *restrict o0,
                                                                      T *restrict o1, long wo) {
    long j = 0;
    if (wo < 16) /* wider rows take the compiler's own vector loop */
        for (; j + 4 <= wo; j += 4) NAME(pool_2x2_back_4)(r0 + 2 * j, r1 + 2 * j, g + j, o0 + 2 * j, o1 + 2 * j);
    for (; j < wo; j++) {
        T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1], gj = g[j];
        NAME_FIRST_MAX(a, b, c, d, best, at)
        (void)best;
        o0[2 * j] = at == 0 ? gj : 0, o0[2 * j + 1] = at == 1 ? gj : 0;
        o1[2 * j] = at == 2 ? gj : 0, o1[2 * j + 1] = at == 3 ? gj : 0;
    }
}

/* out = the values of s0, s1 (rows of an array of x's shape) at each window's first maximum */
static inline __attribute__((always_inline)) void NAME(pool_2x2_gather)(const T *restrict r0, const T *restrict r1,
                                                                        const T *restrict s0, const T *restrict s1,
                                                                        T *restrict out, long wo) {
    for (long j = 0; j < wo; j++) {
        T a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        T p = s0[2 * j], q = s0[2 * j + 1], r = s1[2 * j], s = s1[2 * j + 1];
        NAME_FIRST_MAX(a, b, c, d, best, at)
        (void)best;
        out[j] = at == 0 ? p : at == 1 ? q : at == 2 ? r : s;
    }
}
#undef NAME_FIRST_MAX

/* Planes first .. last-1 (mode as below; planes are x's (h x w), src's and dst's as the mode says). The row
 * loops are inlined here with `wo` a constant where it is small: a row of 4 outputs then takes straight-line
 * SIMD code, where a loop of unknown length ran scalar with a branch per comparison (64x8x8x8 forward: 27 us
 * -> 3 us); wider rows take the vector loop as they are. */
static inline __attribute__((always_inline)) void NAME(pool_2x2_planes)(int mode, const T *x, const T *src, T *dst,
                                                                       long first, long last, long h, long w,
                                                                       long ho, long wo) {
    for (long p = first; p < last; p++) {
        const T *plane = x + p * h * w;
        const T *from = mode == 1 ? src + p * ho * wo : src + p * h * w;
        T *to = dst + (mode == 1 ? p * h * w : p * ho * wo);
        if (mode == 1 && (h != 2 * ho || w != 2 * wo))
            memset(to, 0, sizeof(T) * h * w); /* positions no window covers (odd h or w) */
        for (long i = 0; i < ho; i++) {
            const T *r0 = plane + 2 * i * w, *r1 = r0 + w;
            if (mode == 0) NAME(pool_2x2_max)(r0, r1, to + i * wo, wo);
            else if (mode == 1) NAME(pool_2x2_back)(r0, r1, from + i * wo, to + 2 * i * w, to + (2 * i + 1) * w, wo);
            else NAME(pool_2x2_gather)(r0, r1, from + 2 * i * w, from + (2 * i + 1) * w, to + i * wo, wo);
        }
    }
}

/* one function per mode and clone, with `wo` a constant up to 15 (the mode a constant too: checked per row, it
 * kept the compiler from specialising) */
#define NAME_WIDTH(mode, k) \
    case k: NAME(pool_2x2_planes)(mode, x, src, dst, first, last, h, w, ho, k); break;
#define NAME_POOL_2X2_MODE(mode)                                                                                   \
    TF_CLONES static void NAME(pool_2x2_mode##mode)(const T *x, const T *src, T *dst, long first, long last, long h, \
                                                    long w, long ho, long wo) {                                    \
        switch (wo) {                                                                                              \
            NAME_WIDTH(mode, 1) NAME_WIDTH(mode, 2) NAME_WIDTH(mode, 3) NAME_WIDTH(mode, 4) NAME_WIDTH(mode, 5)    \
            NAME_WIDTH(mode, 6) NAME_WIDTH(mode, 7) NAME_WIDTH(mode, 8) NAME_WIDTH(mode, 9) NAME_WIDTH(mode, 10)   \
            NAME_WIDTH(mode, 11) NAME_WIDTH(mode, 12) NAME_WIDTH(mode, 13) NAME_WIDTH(mode, 14)                    \
            NAME_WIDTH(mode, 15)                                                                                   \
        default: NAME(pool_2x2_planes)(mode, x, src, dst, first, last, h, w, ho, wo);                              \
        }                                                                                                          \
    }
NAME_POOL_2X2_MODE(0)
NAME_POOL_2X2_MODE(1)
NAME_POOL_2X2_MODE(2)
#undef NAME_POOL_2X2_MODE
#undef NAME_WIDTH

static void NAME(pool_2x2)(int mode, const T *x, const T *src, T *dst, long first, long last, long h, long w, long ho,
                           long wo) {
    if (mode == 0) NAME(pool_2x2_mode0)(x, src, dst, first, last, h, w, ho, wo);
    else if (mode == 1) NAME(pool_2x2_mode1)(x, src, dst, first, last, h, w, ho, wo);
    else NAME(pool_2x2_mode2)(x, src, dst, first, last, h, w, ho, wo);
}

/* mode 0: out = max of each window (-inf for a window of padding only); 1: dx (x's shape) += g at each
 * window's first maximum; 2: out (pooled shape) = h (x's shape) picked at each window's first maximum (0 for
 * a window of padding only). One plane per step. */
static void NAME(pool_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *x = k->x, *src = k->src;
    T *dst = k->dst;
    long h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long dh = k->dh, dw = k->dw, ho = k->ho, wo = k->wo;
    int mode = k->mode;
    if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1 && 2 * ho <= h &&
        2 * wo <= w) {
        NAME(pool_2x2)(mode, x, src, dst, start, stop, h, w, ho, wo);
        return;
    }
    for (long plane_index = start; plane_index < stop; plane_index++) {
        const T *plane = x + plane_index * h * w;
        if (mode == 1) memset(dst + plane_index * h * w, 0, sizeof(T) * h * w);
        for (long i = 0; i < ho; i++)
            for (long j = 0; j < wo; j++) {
                long at = NAME(window_argmax)(plane, h, w, kh, kw, sh, sw, ph, pw, dh, dw, i, j);
                long pooled = plane_index * ho * wo + i * wo + j;
                if (mode == 0) dst[pooled] = at < 0 ? (T)-INFINITY : plane[at];
                else if (mode == 1) { if (at >= 0) dst[plane_index * h * w + at] += src[pooled]; }
                else dst[pooled] = at < 0 ? (T)0 : src[plane_index * h * w + at];
            }
    }
}

static void NAME(pool)(int mode, const T *x, const T *src, T *dst, long n, long c, long h, long w, long kh, long kw,
                       long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(window_args) k = {x, src, dst, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, mode};
    tf_parallel_for(n * c, n * c * ho * wo * kh * kw, NAME(pool_chunk), &k);
}

void NAME(tf_maxpool)(const T *x, T *out, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                      long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(pool)(0, x, NULL, out, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo);
}

void NAME(tf_maxpool_back)(const T *x, const T *g, T *dx, long n, long c, long h, long w, long kh, long kw,
                           long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(pool)(1, x, g, dx, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo);
}

void NAME(tf_maxpool_gather)(const T *x, const T *src, T *out, long n, long c, long h, long w, long kh, long kw,
                             long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(pool)(2, x, src, out, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo);
}
