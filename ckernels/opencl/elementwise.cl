/* Elementwise kernels, one work-item per output element (mirrors ckernels/src/elementwise.c).
 *
 * The TF_* codes are the enums of ckernels/tinyflow_kernels.h, passed as -D build options.
 * binary(op, pattern, a, b, out, cols): out = a (op) b over rows x cols elements (tf_binary_op, tf_broadcast_pattern)
 * unary(op, x, out): tf_unary_op
 * permute(x, out, dims, out_strides): out[perm(i)] = x[i] for a rank-4 (padded) transpose
 * broadcast_scale(pattern, a, out, cols, scale): out = a broadcast to rows x cols, times scale
 */
__kernel void binary(int op, int pattern, __global const T *a, __global const T *b, __global T *out, long cols) {
    long i = get_global_id(0), r = i / cols, c = i % cols;
    long ia = i, ib = i;
    switch (pattern) {
        case TF_B_SCALAR: ib = 0; break;
        case TF_A_SCALAR: ia = 0; break;
        case TF_B_ROW: ib = c; break;
        case TF_A_ROW: ia = c; break;
        case TF_B_COLUMN: ib = r; break;
        case TF_A_COLUMN: ia = r; break;
    }
    T x = a[ia], y = b[ib];
    T z;
    switch (op) {
        case TF_ADD: z = x + y; break;
        case TF_SUBTRACT: z = x - y; break;
        case TF_MULTIPLY: z = x * y; break;
        case TF_DIVIDE: z = x / y; break;
        case TF_MAXIMUM: z = (x > y || isnan(x)) ? x : y; break;
        default: z = (x < y || isnan(x)) ? x : y; break;
    }
    out[i] = z;
}

__kernel void unary(int op, __global const T *x, __global T *out) {
    long i = get_global_id(0);
    T v = x[i];
    switch (op) {
        case TF_NEGATIVE: out[i] = -v; break;
        case TF_SQUARE: out[i] = v * v; break;
        case TF_SQRT: out[i] = sqrt(v); break;
        case TF_EXP: out[i] = exp(v); break;
        case TF_LOG: out[i] = log(v); break;
        case TF_ERF: out[i] = erf(v); break;
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

/* out (rows x cols) = a broadcast by `pattern` (TF_SAME_SHAPE, TF_A_SCALAR, TF_A_ROW or TF_A_COLUMN) times scale;
 * the gradients of reductions and of broadcasting use it. */
__kernel void broadcast_scale(int pattern, __global const T *a, __global T *out, long cols, T scale) {
    long i = get_global_id(0);
    long at = pattern == TF_A_SCALAR ? 0 : pattern == TF_A_ROW ? i % cols : pattern == TF_A_COLUMN ? i / cols : i;
    out[i] = a[at] * scale;
}
