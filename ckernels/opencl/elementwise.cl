/* Elementwise kernels, one work-item per output element (mirrors ckernels/src/elementwise.c).
 *
 * binary(op, pattern, a, b, out, cols): out = a (op) b over rows x cols elements
 *   op 0 add, 1 subtract, 2 multiply, 3 divide, 4 maximum, 5 minimum
 *   pattern 0 same shape, 1 b scalar, 2 a scalar, 3 b a row (cols), 4 a a row, 5 b a column (rows), 6 a a column
 * unary(op, x, out): op 0 negative, 1 square, 2 sqrt, 3 exp, 4 log, 5 abs
 * permute(x, out, dims, out_strides): out[perm(i)] = x[i] for a rank-4 (padded) transpose
 * broadcast_scale(pattern, a, out, cols, scale): out = a broadcast to rows x cols, times scale
 */
__kernel void binary(int op, int pattern, __global const T *a, __global const T *b, __global T *out, long cols) {
    long i = get_global_id(0), r = i / cols, c = i % cols;
    long ia = i, ib = i;
    switch (pattern) {
        case 1: ib = 0; break;
        case 2: ia = 0; break;
        case 3: ib = c; break;
        case 4: ia = c; break;
        case 5: ib = r; break;
        case 6: ia = r; break;
    }
    T x = a[ia], y = b[ib];
    T z;
    switch (op) {
        case 0: z = x + y; break;
        case 1: z = x - y; break;
        case 2: z = x * y; break;
        case 3: z = x / y; break;
        case 4: z = (x > y || isnan(x)) ? x : y; break;
        default: z = (x < y || isnan(x)) ? x : y; break;
    }
    out[i] = z;
}

__kernel void unary(int op, __global const T *x, __global T *out) {
    long i = get_global_id(0);
    T v = x[i];
    switch (op) {
        case 0: out[i] = -v; break;
        case 1: out[i] = v * v; break;
        case 2: out[i] = sqrt(v); break;
        case 3: out[i] = exp(v); break;
        case 4: out[i] = log(v); break;
        default: out[i] = fabs(v); break;
    }
}

/* x has shape dims (rank 4, leading ones for smaller ranks); element i of x goes to
 * out[sum_k index_k * out_strides[k]], which describes the permuted layout. */
__kernel void permute(__global const T *x, __global T *out, long4 dims, long4 out_strides) {
    long i = get_global_id(0);
    long i3 = i % dims.s3, rest = i / dims.s3;
    long i2 = rest % dims.s2; rest /= dims.s2;
    long i1 = rest % dims.s1, i0 = rest / dims.s1;
    out[i0 * out_strides.s0 + i1 * out_strides.s1 + i2 * out_strides.s2 + i3 * out_strides.s3] = x[i];
}

/* out (rows x cols) = a broadcast by `pattern` (0 same shape, 2 a scalar, 4 a row, 6 a column) times scale;
 * the gradients of reductions and of broadcasting use it. */
__kernel void broadcast_scale(int pattern, __global const T *a, __global T *out, long cols, T scale) {
    long i = get_global_id(0);
    long at = pattern == 2 ? 0 : pattern == 4 ? i % cols : pattern == 6 ? i / cols : i;
    out[i] = a[at] * scale;
}
