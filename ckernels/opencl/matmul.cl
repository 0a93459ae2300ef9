/* C (m x n) = A (m x k) @ B (k x n), row-major: each work-group computes a TILE x TILE block of C,
 * staging TILE x TILE blocks of A and B in local memory so each value is read from global memory
 * once per work-group instead of once per work-item. Edges are padded with zeros. */
#define TILE 16
__kernel void matmul(__global const T *A, __global const T *B, __global T *C, long m, long n, long k) {
    __local T a_tile[TILE][TILE];
    __local T b_tile[TILE][TILE];
    long row = get_global_id(1), col = get_global_id(0);
    int lr = get_local_id(1), lc = get_local_id(0);
    T acc = 0;
    for (long t = 0; t < k; t += TILE) {
        a_tile[lr][lc] = (row < m && t + lc < k) ? A[row * k + t + lc] : 0;
        b_tile[lr][lc] = (col < n && t + lr < k) ? B[(t + lr) * n + col] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int p = 0; p < TILE; p++) acc += a_tile[lr][p] * b_tile[p][lc];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < m && col < n) C[row * n + col] = acc;
}
