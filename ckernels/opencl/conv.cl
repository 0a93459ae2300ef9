/* im2col / col2im and max pooling on NCHW data (the geometry of ckernels/src/conv.c, but window-major columns
 * (n*ho*wo) x (c*kh*kw), where conv.c's are tap-major; 1-D data is one row of 2-D).
 * g (long16): s0 n, s1 c, s2 h, s3 w, s4 kh, s5 kw, s6 sh, s7 sw, s8 ph, s9 pw (leading pads),
 *             sa dh, sb dw (dilations), sc ho, sd wo */
#define N g.s0
#define C g.s1
#define H g.s2
#define W g.s3
#define KH g.s4
#define KW g.s5
#define SH g.s6
#define SW g.s7
#define PH g.s8
#define PW g.s9
#define DH g.sa
#define DW g.sb
#define HO g.sc
#define WO g.sd

/* one work-item per element of cols ((n*ho*wo) x (c*kh*kw)) */
__kernel void im2col(__global const T *x, __global T *cols, long16 g) {
    long idx = get_global_id(0), width = C * KH * KW;
    long row = idx / width, col = idx % width;
    long b = row / (HO * WO), i = (row / WO) % HO, j = row % WO;
    long ch = col / (KH * KW), di = (col / KW) % KH, dj = col % KW;
    long y = i * SH - PH + di * DH, xx = j * SW - PW + dj * DW;
    cols[idx] = (y >= 0 && y < H && xx >= 0 && xx < W) ? x[((b * C + ch) * H + y) * W + xx] : 0;
}

/* one work-item per input pixel: gathers every window entry that covers it (no atomics needed) */
__kernel void col2im(__global const T *cols, __global T *x, long16 g) {
    long idx = get_global_id(0), width = C * KH * KW;
    long xx = idx % W, y = (idx / W) % H, ch = (idx / (H * W)) % C, b = idx / (C * H * W);
    T acc = 0;
    for (long di = 0; di < KH; di++) {
        long ti = y + PH - di * DH;
        if (ti < 0 || ti % SH) continue;
        long i = ti / SH;
        if (i >= HO) continue;
        for (long dj = 0; dj < KW; dj++) {
            long tj = xx + PW - dj * DW;
            if (tj < 0 || tj % SW) continue;
            long j = tj / SW;
            if (j >= WO) continue;
            acc += cols[((b * HO + i) * WO + j) * width + (ch * KH + di) * KW + dj];
        }
    }
    x[idx] = acc;
}

/* flat index in its plane of the first maximum of window (i, j), -1 for a window of padding only;
 * padding never wins; the first NaN wins */
long window_argmax(__global const T *plane, long16 g, long i, long j) {
    long best = -1;
    for (long di = 0; di < KH; di++) {
        long y = i * SH - PH + di * DH;
        if (y < 0 || y >= H) continue;
        for (long dj = 0; dj < KW; dj++) {
            long xx = j * SW - PW + dj * DW;
            if (xx < 0 || xx >= W) continue;
            T v = plane[y * W + xx];
            if (best < 0 || v > plane[best] || (isnan(v) && !isnan(plane[best]))) best = y * W + xx;
        }
    }
    return best;
}

/* one work-item per pooled output */
__kernel void maxpool(__global const T *x, __global T *out, long16 g) {
    long idx = get_global_id(0), plane = idx / (HO * WO), i = (idx / WO) % HO, j = idx % WO;
    __global const T *xp = x + plane * H * W;
    long at = window_argmax(xp, g, i, j);
    out[idx] = at < 0 ? (T)(-INFINITY) : xp[at];
}

/* one work-item per pooled output: picks h at the window's first maximum */
__kernel void maxpool_gather(__global const T *x, __global const T *h, __global T *out, long16 g) {
    long idx = get_global_id(0), plane = idx / (HO * WO), i = (idx / WO) % HO, j = idx % WO;
    long at = window_argmax(x + plane * H * W, g, i, j);
    out[idx] = at < 0 ? (T)0 : h[plane * H * W + at];
}

/* one work-item per input pixel: sums g over the windows whose first maximum is this pixel */
__kernel void maxpool_back(__global const T *x, __global const T *grad, __global T *dx, long16 g) {
    long idx = get_global_id(0), plane = idx / (H * W), at = idx % (H * W);
    long y = at / W, xx = at % W;
    __global const T *xp = x + plane * H * W;
    T acc = 0;
    for (long i = 0; i < HO; i++) {
        long top = i * SH - PH;
        if (y < top || y >= top + (KH - 1) * DH + 1 || (y - top) % DH) continue;
        for (long j = 0; j < WO; j++) {
            long left = j * SW - PW;
            if (xx < left || xx >= left + (KW - 1) * DW + 1 || (xx - left) % DW) continue;
            if (window_argmax(xp, g, i, j) == at) acc += grad[(plane * HO + i) * WO + j];
        }
    }
    dx[idx] = acc;
}

#undef N
#undef C
#undef H
#undef W
#undef KH
#undef KW
#undef SH
#undef SW
#undef PH
#undef PW
#undef DH
#undef DW
#undef HO
#undef WO
