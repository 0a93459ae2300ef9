/* im2col / col2im and max pooling on NCHW data, for the type T.
 * Geometry for all: n images, c channels, h x w input, kh x kw window, stride sh, sw,
 * zero (or, for pooling, ignored) padding ph, pw, output ho x wo. */

/* The geometry and arrays of one call; chunks split output rows (im2col) or (image, channel) planes. */
typedef struct {
    const T *x, *src;
    T *dst;
    long n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo;
    int mode; /* pooling: see NAME(pool) */
} NAME(window_args);

static void NAME(im2col_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *x = k->x;
    T *cols = k->dst;
    long c = k->c, h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long ho = k->ho, wo = k->wo, width = c * kh * kw;
    for (long row_block = start; row_block < stop; row_block++) {
        long b = row_block / ho, i = row_block % ho;
        for (long j = 0; j < wo; j++) {
            T *dst = cols + ((b * ho + i) * wo + j) * width;
            for (long ch = 0; ch < c; ch++) {
                const T *plane = x + (b * c + ch) * h * w;
                for (long di = 0; di < kh; di++) {
                    long row = i * sh - ph + di;
                    for (long dj = 0; dj < kw; dj++) {
                        long col = j * sw - pw + dj;
                        *dst++ = (row >= 0 && row < h && col >= 0 && col < w) ? plane[row * w + col] : 0;
                    }
                }
            }
        }
    }
}

void NAME(tf_im2col)(const T *x, T *cols, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long ho, long wo) {
    NAME(window_args) k = {x, NULL, cols, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo, 0};
    tf_parallel_for(n * ho, n * ho * wo * c * kh * kw, NAME(im2col_chunk), &k);
}

/* one (image, channel) plane per step: planes are disjoint, so no two threads add to one value */
static void NAME(col2im_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *cols = k->src;
    T *x = k->dst;
    long c = k->c, h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long ho = k->ho, wo = k->wo, width = c * kh * kw;
    for (long plane_index = start; plane_index < stop; plane_index++) {
        long b = plane_index / c, ch = plane_index % c;
        T *plane = x + plane_index * h * w;
        memset(plane, 0, sizeof(T) * h * w);
        for (long i = 0; i < ho; i++)
            for (long j = 0; j < wo; j++) {
                const T *src = cols + ((b * ho + i) * wo + j) * width + ch * kh * kw;
                for (long di = 0; di < kh; di++) {
                    long row = i * sh - ph + di;
                    if (row < 0 || row >= h) continue;
                    for (long dj = 0; dj < kw; dj++) {
                        long col = j * sw - pw + dj;
                        if (col >= 0 && col < w) plane[row * w + col] += src[di * kw + dj];
                    }
                }
            }
    }
}

void NAME(tf_col2im)(const T *cols, T *x, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long ho, long wo) {
    NAME(window_args) k = {NULL, cols, x, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo, 0};
    tf_parallel_for(n * c, n * ho * wo * c * kh * kw, NAME(col2im_chunk), &k);
}

/* Flat index (in the plane) of the first maximum of window (i, j); padding never wins. A NaN is larger
 * than everything (the first NaN wins), as in numpy's max and argmax, so NaN propagates. */
static long NAME(window_argmax)(const T *plane, long h, long w, long kh, long kw, long sh, long sw, long ph,
                                long pw, long i, long j) {
    long best = -1;
    for (long di = 0; di < kh; di++) {
        long row = i * sh - ph + di;
        if (row < 0 || row >= h) continue;
        for (long dj = 0; dj < kw; dj++) {
            long col = j * sw - pw + dj;
            if (col < 0 || col >= w) continue;
            long at = row * w + col;
            if (best < 0 || plane[at] > plane[best] || (plane[at] != plane[at] && plane[best] == plane[best]))
                best = at;
        }
    }
    return best;
}

/* mode 0: out = max of each window; 1: dx (x's shape) += g at each window's first maximum;
 * 2: out (pooled shape) = h (x's shape) picked at each window's first maximum. One plane per step. */
static void NAME(pool_chunk)(void *p, long start, long stop) {
    NAME(window_args) *k = p;
    const T *x = k->x, *src = k->src;
    T *dst = k->dst;
    long h = k->h, w = k->w, kh = k->kh, kw = k->kw, sh = k->sh, sw = k->sw, ph = k->ph, pw = k->pw;
    long ho = k->ho, wo = k->wo;
    int mode = k->mode;
    for (long plane_index = start; plane_index < stop; plane_index++) {
        const T *plane = x + plane_index * h * w;
        if (mode == 1) memset(dst + plane_index * h * w, 0, sizeof(T) * h * w);
        for (long i = 0; i < ho; i++)
            for (long j = 0; j < wo; j++) {
                long at = NAME(window_argmax)(plane, h, w, kh, kw, sh, sw, ph, pw, i, j);
                long pooled = plane_index * ho * wo + i * wo + j;
                if (mode == 0) dst[pooled] = plane[at];
                else if (mode == 1) dst[plane_index * h * w + at] += src[pooled];
                else dst[pooled] = src[plane_index * h * w + at];
            }
    }
}

static void NAME(pool)(int mode, const T *x, const T *src, T *dst, long n, long c, long h, long w, long kh, long kw,
                       long sh, long sw, long ph, long pw, long ho, long wo) {
    NAME(window_args) k = {x, src, dst, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo, mode};
    tf_parallel_for(n * c, n * c * ho * wo * kh * kw, NAME(pool_chunk), &k);
}

void NAME(tf_maxpool)(const T *x, T *out, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                      long ph, long pw, long ho, long wo) {
    NAME(pool)(0, x, NULL, out, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo);
}

void NAME(tf_maxpool_back)(const T *x, const T *g, T *dx, long n, long c, long h, long w, long kh, long kw,
                           long sh, long sw, long ph, long pw, long ho, long wo) {
    NAME(pool)(1, x, g, dx, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo);
}

void NAME(tf_maxpool_gather)(const T *x, const T *src, T *out, long n, long c, long h, long w, long kh, long kw,
                             long sh, long sw, long ph, long pw, long ho, long wo) {
    NAME(pool)(2, x, src, out, n, c, h, w, kh, kw, sh, sw, ph, pw, ho, wo);
}
