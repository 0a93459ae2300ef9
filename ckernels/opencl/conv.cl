/* im2col / col2im and max pooling on NCHW data (mirrors ckernels/src/conv.c).
 * geometry (long8): n, c, h, w, kh, kw, sh, sw;  pad_out (long4): ph, pw, ho, wo */

/* one work-item per element of cols ((n*ho*wo) x (c*kh*kw)) */
__kernel void im2col(__global const T *x, __global T *cols, long8 g, long4 p) {
    long idx = get_global_id(0), width = g.s1 * g.s4 * g.s5;
    long row = idx / width, col = idx % width;
    long b = row / (p.s2 * p.s3), i = (row / p.s3) % p.s2, j = row % p.s3;
    long ch = col / (g.s4 * g.s5), di = (col / g.s5) % g.s4, dj = col % g.s5;
    long y = i * g.s6 - p.s0 + di, xx = j * g.s7 - p.s1 + dj;
    cols[idx] = (y >= 0 && y < g.s2 && xx >= 0 && xx < g.s3) ? x[((b * g.s1 + ch) * g.s2 + y) * g.s3 + xx] : 0;
}

/* one work-item per input pixel: gathers every window entry that covers it (no atomics needed) */
__kernel void col2im(__global const T *cols, __global T *x, long8 g, long4 p) {
    long idx = get_global_id(0), width = g.s1 * g.s4 * g.s5;
    long xx = idx % g.s3, y = (idx / g.s3) % g.s2, ch = (idx / (g.s2 * g.s3)) % g.s1, b = idx / (g.s1 * g.s2 * g.s3);
    T acc = 0;
    for (long di = 0; di < g.s4; di++) {
        long ti = y + p.s0 - di;
        if (ti < 0 || ti % g.s6) continue;
        long i = ti / g.s6;
        if (i >= p.s2) continue;
        for (long dj = 0; dj < g.s5; dj++) {
            long tj = xx + p.s1 - dj;
            if (tj < 0 || tj % g.s7) continue;
            long j = tj / g.s7;
            if (j >= p.s3) continue;
            acc += cols[((b * p.s2 + i) * p.s3 + j) * width + (ch * g.s4 + di) * g.s5 + dj];
        }
    }
    x[idx] = acc;
}

/* flat index in its plane of the first maximum of window (i, j); padding never wins; the first NaN wins */
long window_argmax(__global const T *plane, long h, long w, long kh, long kw, long sh, long sw, long ph, long pw,
                   long i, long j) {
    long best = -1;
    for (long di = 0; di < kh; di++) {
        long y = i * sh - ph + di;
        if (y < 0 || y >= h) continue;
        for (long dj = 0; dj < kw; dj++) {
            long xx = j * sw - pw + dj;
            if (xx < 0 || xx >= w) continue;
            T v = plane[y * w + xx];
            if (best < 0 || v > plane[best] || (isnan(v) && !isnan(plane[best]))) best = y * w + xx;
        }
    }
    return best;
}
#define ARGMAX(plane, i, j) window_argmax(plane, g.s2, g.s3, g.s4, g.s5, g.s6, g.s7, p.s0, p.s1, i, j)

/* one work-item per pooled output */
__kernel void maxpool(__global const T *x, __global T *out, long8 g, long4 p) {
    long idx = get_global_id(0), plane = idx / (p.s2 * p.s3), i = (idx / p.s3) % p.s2, j = idx % p.s3;
    __global const T *xp = x + plane * g.s2 * g.s3;
    out[idx] = xp[ARGMAX(xp, i, j)];
}

/* one work-item per pooled output: picks h at the window's first maximum */
__kernel void maxpool_gather(__global const T *x, __global const T *h, __global T *out, long8 g, long4 p) {
    long idx = get_global_id(0), plane = idx / (p.s2 * p.s3), i = (idx / p.s3) % p.s2, j = idx % p.s3;
    out[idx] = h[plane * g.s2 * g.s3 + ARGMAX(x + plane * g.s2 * g.s3, i, j)];
}

/* one work-item per input pixel: sums g over the windows whose first maximum is this pixel */
__kernel void maxpool_back(__global const T *x, __global const T *grad, __global T *dx, long8 g, long4 p) {
    long idx = get_global_id(0), plane = idx / (g.s2 * g.s3), at = idx % (g.s2 * g.s3);
    long y = at / g.s3, xx = at % g.s3;
    __global const T *xp = x + plane * g.s2 * g.s3;
    T acc = 0;
    for (long i = 0; i < p.s2; i++) {
        long top = i * g.s6 - p.s0;
        if (y < top || y >= top + g.s4) continue;
        for (long j = 0; j < p.s3; j++) {
            long left = j * g.s7 - p.s1;
            if (xx < left || xx >= left + g.s5) continue;
            if (ARGMAX(xp, i, j) == at) acc += grad[(plane * p.s2 + i) * p.s3 + j];
        }
    }
    dx[idx] = acc;
}
