/* Layout kernels, one work-item per output element (the table's elementwise ops are generated: opencl_backend.py).
 *
 * The TF_* codes are the enums of ckernels/tinyflow_kernels.h, passed as -D build options.
 * permute(x, out, dims, out_strides): out[perm(i)] = x[i] for a rank-4 (padded) transpose
 * broadcast_scale(pattern, a, out, cols, scale): out = a broadcast to rows x cols, times scale
 */
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
