/* im2col / col2im and max pooling on NCHW data, for the type T.
 * Geometry for all: n images, c channels, h x w input, kh x kw window taps, stride sh, sw, leading zero
 * (or, for pooling, ignored) padding ph, pw, dilation dh, dw (taps dh, dw apart), output ho x wo. Taps
 * outside the input read as padding, so trailing padding and ceil_mode need no arguments of their own. */

void NAME(tf_im2col)(const T *x, T *cols, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long dh, long dw, long ho, long wo) {
    long width = c * kh * kw, row_block;
#pragma omp parallel for if (n * ho * wo * width >= TF_PARALLEL_MIN) schedule(static)
    for (row_block = 0; row_block < n * ho; row_block++) {
        long b = row_block / ho, i = row_block % ho;
        for (long j = 0; j < wo; j++) {
            T *dst = cols + ((b * ho + i) * wo + j) * width;
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

void NAME(tf_col2im)(const T *cols, T *x, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                     long ph, long pw, long dh, long dw, long ho, long wo) {
    long width = c * kh * kw, plane_index;
    /* one (image, channel) plane per iteration: planes are disjoint, so no two threads add to one value */
#pragma omp parallel for if (n * ho * wo * width >= TF_PARALLEL_MIN) schedule(static)
    for (plane_index = 0; plane_index < n * c; plane_index++) {
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

/* mode 0: out = max of each window (-inf for a window of padding only); 1: dx (x's shape) += g at each
 * window's first maximum; 2: out (pooled shape) = h (x's shape) picked at each window's first maximum (0 for
 * a window of padding only). */
static void NAME(pool)(int mode, const T *x, const T *src, T *dst, long n, long c, long h, long w, long kh, long kw,
                       long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo) {
    long plane_index;
#pragma omp parallel for if (n * c * ho * wo * kh * kw >= TF_PARALLEL_MIN) schedule(static)
    for (plane_index = 0; plane_index < n * c; plane_index++) {
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
