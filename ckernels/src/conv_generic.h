/* im2col / col2im and max pooling on NCHW data, for the type T.
 * Geometry for all: n images, c channels, h x w input, kh x kw window taps, stride sh, sw, leading zero
 * (or, for pooling, ignored) padding ph, pw, dilation dh, dw (taps dh, dw apart), output ho x wo. Taps
 * outside the input read as padding, so trailing padding and ceil_mode need no arguments of their own. */

/* The geometry and arrays of one call; chunks split (tap, image) blocks (im2col) or (image, channel) planes. */
typedef struct {
    const T *x, *src;
    T *dst;
    long n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
    int mode;        /* pooling: see NAME(pool) */
    long multiplier; /* depthwise convolution: filters per input channel */
    const T *bias;   /* convolution epilogue: per output channel, or NULL (none) */
    const T *residual; /* convolution epilogue: added value by value, laid out as the output (n, o, ...), or NULL */
    T low, high;     /* convolution epilogue: the output clipped to [low, high] (relu: 0, inf; none: -inf, inf) */
    int failed;      /* depthwise convolution: set by a chunk that could not allocate its tap blocks */
} NAME(window_args);

/* The convolution's epilogue on n values of one channel: + bias (-0.0 for none: x + -0.0 is x, even for x = -0.0),
 * + the residual's values (if any), then clipped to [low, high] as the elementwise kernels' max and min do (a NaN
 * stays NaN; only the sign of a zero equal to a bound may differ). The sums are rounded in the fused ops' order. */
static inline T NAME(clip)(T v, T low, T high) {
    v = v < low ? low : v; /* no || in the test: a branch per value (random signs) cost 4x the convolution */
    return v > high ? high : v;
}

static inline void NAME(bias_clip)(const T *src, const T *residual, T *dst, long n, T bias, T low, T high) {
    if (residual)
        for (long j = 0; j < n; j++) dst[j] = NAME(clip)(src[j] + bias + residual[j], low, high);
    else
        for (long j = 0; j < n; j++) dst[j] = NAME(clip)(src[j] + bias, low, high);
}

/* The output columns j in [*first, *last) whose tap at column j * sw + offset lies inside 0 .. w - 1; the others
 * read (im2col) or drop (col2im) padding. */
static inline void NAME(inside_columns)(long w, long wo, long sw, long offset, long *first, long *last) {
    long lo = offset >= 0 ? 0 : (sw - 1 - offset) / sw, hi = w - 1 - offset < 0 ? 0 : (w - 1 - offset) / sw + 1;
    *first = lo < wo ? lo : wo;
    *last = hi < *first ? *first : hi < wo ? hi : wo;
}

/* A "same" window (stride 1, output as wide as the input): the tap's block is the plane shifted by `shift` values,
 * dst[q] = plane[q + shift] (size values; the plane has plane_size), one copy that vectorizes whatever the width;
 * then the values a tap beyond the left or right edge took from the row before or after are set to padding
 * (columns outside [first, last)). Rows of 8 one by one cost their loop set-up each (64x1x8x8, 3x3: 22 us against
 * 6 us). */
static inline void NAME(shifted_plane)(const T *plane, T *restrict dst, long plane_size, long size, long shift,
                                       long wo, long first, long last) {
    long lo = shift < 0 ? -shift : 0, hi = plane_size - shift; /* dst[lo .. hi) reads inside the plane */
    lo = lo < size ? lo : size;
    hi = hi < lo ? lo : hi > size ? size : hi;
    for (long q = 0; q < lo; q++) dst[q] = 0;
    for (long q = lo; q < hi; q++) dst[q] = plane[q + shift];
    for (long q = hi; q < size; q++) dst[q] = 0;
    if (first > 0 || last < wo)
        for (long row = 0; row < size; row += wo) {
            for (long j = 0; j < first; j++) dst[row + j] = 0;
            for (long j = last; j < wo; j++) dst[row + j] = 0;
        }
}

/* Tap (di, dj) of one input plane for every output pixel: a block of ho x wo values, zeros where the tap covers
 * padding; `offset` is the tap's column offset dj * dw - pw and [first, last) the columns it finds inside the plane.
 * A run of a row is a run of an input row (stride 1: a plain copy that vectorizes, no test per value). */
static inline void NAME(tap_block)(const NAME(window_args) *k, const T *plane, T *restrict dst, long di, long offset,
                                   long first, long last) {
    long h = k->h, w = k->w, sh = k->sh, sw = k->sw, ho = k->ho, wo = k->wo;
    if (sh == 1 && sw == 1 && wo == w) {
        NAME(shifted_plane)(plane, dst, h * w, ho * wo, (di * k->dh - k->ph) * w + offset, wo, first, last);
        return;
    }
    for (long i = 0; i < ho; i++, dst += wo) {
        long row = i * sh - k->ph + di * k->dh;
        if (row < 0 || row >= h) {
            memset(dst, 0, sizeof(T) * wo);
            continue;
        }
        const T *src = plane + row * w; /* the tap of column j is src[j * sw + offset] */
        for (long j = 0; j < first; j++) dst[j] = 0;
        if (sw == 1)
            for (long j = first; j < last; j++) dst[j] = src[j + offset];
        else
            for (long j = first; j < last; j++) dst[j] = src[j * sw + offset];
        for (long j = last; j < wo; j++) dst[j] = 0;
    }
}

/* Tap-major columns: row (ch, di, dj) of cols holds that tap of every output pixel, image after image, so the
 * product with the filters, (O, C·K) times (C·K, N·P), comes out one channel plane after another. Rows of
 * (output pixel) windows instead made each value a scalar store behind border tests, and the product
 * (N·P, O) a transposition away from NCHW (digits, 64x1x8x8, 3x3: im2col 15.6 us and the transposition 12 us).
 * One (tap, image) block of ho x wo values per step, in memory order. */
TF_CLONES static void NAME(im2col_chunk)(void *p, long start, long stop) {
    const NAME(window_args) *k = p;
    long n = k->n, kh = k->kh, kw = k->kw, plane_size = k->h * k->w, block_size = k->ho * k->wo;
    long block = start, b = start % n;
    /* the tap's numbers once per tap, not per block: seven integer divisions per 8x8 block were half its time */
    for (long tap = start / n; block < stop; tap++, b = 0) {
        long ch = tap / (kh * kw), di = tap / kw % kh, dj = tap % kw, offset = dj * k->dw - k->pw, first, last;
        NAME(inside_columns)(k->w, k->wo, k->sw, offset, &first, &last);
        for (; b < n && block < stop; b++, block++)
            NAME(tap_block)(k, k->x + (b * k->c + ch) * plane_size, k->dst + block * block_size, di, offset, first,
                            last);
    }
}

void NAME(tf_im2col)(const T *x, T *cols, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long dh, long dw, long ho, long wo) {
    NAME(window_args) k = {x, NULL, cols, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, 0};
    tf_parallel_for(c * kh * kw * n, n * ho * wo * c * kh * kw, NAME(im2col_chunk), &k);
}

/* Every tap's block of one input plane (kh x kw blocks of ho x wo values) into `blocks`. */
static inline void NAME(tap_blocks)(const NAME(window_args) *k, const T *plane, T *blocks) {
    for (long tap = 0, size = k->ho * k->wo; tap < k->kh * k->kw; tap++) {
        long offset = tap % k->kw * k->dw - k->pw, first, last;
        NAME(inside_columns)(k->w, k->wo, k->sw, offset, &first, &last);
        NAME(tap_block)(k, plane, blocks + tap * size, tap / k->kw, offset, first, last);
    }
}

/* One (image, channel) plane per step, summing its kh x kw tap rows of cols into it: planes are disjoint, so no
 * two threads add to one value. */
TF_CLONES static void NAME(col2im_chunk)(void *p, long start, long stop) {
    const NAME(window_args) *k = p;
    long n = k->n, c = k->c, h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw;
    long ho = k->ho, wo = k->wo;
    for (long plane_index = start; plane_index < stop; plane_index++) {
        long b = plane_index / c, ch = plane_index % c;
        T *plane = k->dst + plane_index * h * w;
        memset(plane, 0, sizeof(T) * h * w);
        for (long di = 0; di < kh; di++)
            for (long dj = 0; dj < kw; dj++) {
                const T *src = k->src + (((ch * kh + di) * kw + dj) * n + b) * ho * wo;
                long offset = dj * k->dw - k->pw, first, last;
                NAME(inside_columns)(w, wo, sw, offset, &first, &last);
                for (long i = 0; i < ho; i++, src += wo) {
                    long row = i * sh - k->ph + di * k->dh;
                    if (row < 0 || row >= h) continue;
                    T *dst = plane + row * w; /* column j's tap lands on dst[j * sw + offset] */
                    if (sw == 1)
                        for (long j = first; j < last; j++) dst[j + offset] += src[j];
                    else
                        for (long j = first; j < last; j++) dst[j * sw + offset] += src[j];
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

/* The maximum of each window of one plane (-inf for a window of padding only; a NaN wins, as window_argmax's first
 * maximum): each output row is the running maximum of its window's taps, one tap at a time over the whole row, only
 * where the tap falls inside the plane, so the loop over j has no bounds checks and vectorizes. */
TF_CLONES static void NAME(max_plane)(const T *plane, T *out, long h, long w, long kh, long kw, long sh, long sw,
                                      long ph, long pw, long dh, long dw, long ho, long wo) {
    for (long i = 0; i < ho; i++) {
        T *restrict o = out + i * wo;
        for (long j = 0; j < wo; j++) o[j] = (T)-INFINITY;
        for (long di = 0; di < kh; di++) {
            long r = i * sh - ph + di * dh;
            if (r < 0 || r >= h) continue;
            const T *restrict row = plane + r * w;
            for (long dj = 0; dj < kw; dj++) {
                long off = dj * dw - pw; /* the tap reads column j * sw + off */
                long j0 = off < 0 ? (-off + sw - 1) / sw : 0, j1 = w - 1 - off < 0 ? 0 : (w - 1 - off) / sw + 1;
                if (j1 > wo) j1 = wo;
#pragma omp simd
                for (long j = j0; j < j1; j++) { /* the table's max, spelled so that it vectorizes */
                    T v = row[j * sw + off];
                    o[j] = o[j] <= v ? v : (v != v ? v : o[j]);
                }
            }
        }
    }
}

/* mode 0: out = max of each window (-inf for a window of padding only); 1: dx (x's shape) += g at each
 * window's first maximum; 2: out (pooled shape) = h (x's shape) picked at each window's first maximum (0 for
 * a window of padding only). One plane per step; the first maximum's place only where the mode needs it. */
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
    for (long plane_index = start; mode == 0 && plane_index < stop; plane_index++)
        NAME(max_plane)(x + plane_index * h * w, dst + plane_index * ho * wo, h, w, kh, kw, sh, sw, ph, pw, dh, dw,
                        ho, wo);
    for (long plane_index = start; mode != 0 && plane_index < stop; plane_index++) {
        const T *plane = x + plane_index * h * w;
        if (mode == 1) memset(dst + plane_index * h * w, 0, sizeof(T) * h * w);
        for (long i = 0; i < ho; i++)
            for (long j = 0; j < wo; j++) {
                long at = NAME(window_argmax)(plane, h, w, kh, kw, sh, sw, ph, pw, dh, dw, i, j);
                long pooled = plane_index * ho * wo + i * wo + j;
                if (mode == 1) { if (at >= 0) dst[plane_index * h * w + at] += src[pooled]; }
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

/* One (image, channel) plane per step of dst (n, o, p) = clip(src + bias[channel] + residual), src laid out (o, n, p):
 * the GEMM's rows of output planes, channel-major (with n == 1, src may be dst); the residual is laid out as dst. */
TF_CLONES static void NAME(bias_clip_chunk)(void *p, long start, long stop) {
    const NAME(window_args) *k = p;
    long n = k->n, o = k->c, size = k->ho;
    for (long plane = start; plane < stop; plane++) {
        long b = plane / o, ch = plane % o;
        T bias = k->bias ? k->bias[ch] : (T)-0.0;
        NAME(bias_clip)(k->src + (ch * n + b) * size, k->residual ? k->residual + plane * size : NULL,
                        k->dst + plane * size, size, bias, k->low, k->high);
    }
}

void NAME(tf_conv_epilogue)(const T *src, T *dst, long n, long o, long p, const T *bias, const T *residual, T low,
                            T high) {
    NAME(window_args) k = {.src = src, .dst = dst, .n = n, .c = o, .ho = p, .bias = bias, .residual = residual,
                           .low = low, .high = high};
    tf_parallel_for(n * o, n * o * p, NAME(bias_clip_chunk), &k);
}
