/* tf_gemm for the type T (see gemm.c): its tiles, computed by BLAS or by the hand-written kernel below.
 *
 * The hand-written kernel is the textbook GotoBLAS scheme, for one thread (the pool shares out the tiles).
 * C (m x n) (+)= A (m x k) @ B (k x n), A and B read through row and column strides (so a transposed operand
 * costs nothing but its packing). Loops, outermost first:
 *   jc: NC columns of B and C          (the packed B panel, KC x NC, stays in the L2/L3 cache)
 *   pc: KC rows of B / columns of A
 *   ic: MC rows of A and C             (the packed MC x KC block of A stays in L2)
 *   jr, ir: an MR x NR tile of C, kept in registers by the micro-kernel for the whole KC loop
 * Packing copies each block into the exact order the micro-kernel reads it, so that inner
 * loads are contiguous; edges are padded with zeros so the micro-kernel never branches.
 */
enum { NAME(MR) = 6, NAME(NR) = 64 / (int)sizeof(T), NAME(KC) = 256, NAME(MC) = 72, NAME(NC) = 2048 };
#define MR NAME(MR)
#define NR NAME(NR)
#define KC NAME(KC)
#define MC NAME(MC)
#define NC NAME(NC)

static void NAME(pack_a)(const T *a, long rs, long cs, long mc, long kc, T *packed) {
    for (long ir = 0; ir < mc; ir += MR)
        for (long p = 0; p < kc; p++)
            for (long i = 0; i < MR; i++)
                *packed++ = ir + i < mc ? a[(ir + i) * rs + p * cs] : 0;
}

static void NAME(pack_b)(const T *b, long rs, long cs, long kc, long nc, T *packed) {
    for (long jr = 0; jr < nc; jr += NR)
        for (long p = 0; p < kc; p++)
            for (long j = 0; j < NR; j++)
                *packed++ = jr + j < nc ? b[p * rs + (jr + j) * cs] : 0;
}

/* c[0:mr, 0:nr] (+)= a_panel (MR x kc) @ b_panel (kc x NR), accumulated in registers:
 * MR rows of NR values each, one FMA per value per step of p (contracted here, where the CPU has FMA). */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(micro_kernel)(long kc, const T *restrict a, const T *restrict b, T *c, long ldc, long mr,
                                         long nr, int accumulate) {
    T acc[MR][NR] = {{0}};
    for (long p = 0; p < kc; p++) {
        const T *bp = b + p * NR;
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) {
            T ai = a[p * MR + i];
#pragma omp simd
            for (int j = 0; j < NR; j++) acc[i][j] += ai * bp[j];
        }
    }
    for (long i = 0; i < mr; i++)
        for (long j = 0; j < nr; j++) c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0) + acc[i][j];
}

static int NAME(own_product)(long m, long n, long k, const T *a, long a_rs, long a_cs, const T *b, long b_rs,
                             long b_cs, T *c, long ldc, int accumulate) {
    /* each thread's packing buffers, kept: a fresh 2 MiB block per tile would cost its page faults every time */
    static __thread T *a_packed, *b_packed;
    if (!a_packed && !(a_packed = malloc(sizeof(T) * MC * KC))) return -1;
    if (!b_packed && !(b_packed = malloc(sizeof(T) * KC * (NC + NR)))) return -1;
    if (k == 0 && !accumulate)
        for (long i = 0; i < m; i++) memset(c + i * ldc, 0, sizeof(T) * n);
    for (long jc = 0; jc < n; jc += NC) {
        long nc = n - jc < NC ? n - jc : NC;
        for (long pc = 0; pc < k; pc += KC) {
            long kc = k - pc < KC ? k - pc : KC;
            NAME(pack_b)(b + pc * b_rs + jc * b_cs, b_rs, b_cs, kc, nc, b_packed);
            for (long ic = 0; ic < m; ic += MC) {
                long mc = m - ic < MC ? m - ic : MC;
                NAME(pack_a)(a + ic * a_rs + pc * a_cs, a_rs, a_cs, mc, kc, a_packed);
                for (long jr = 0; jr < nc; jr += NR)
                    for (long ir = 0; ir < mc; ir += MR)
                        NAME(micro_kernel)(kc, a_packed + ir * kc, b_packed + jr * kc, c + (ic + ir) * ldc + jc + jr,
                                           ldc, mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR,
                                           accumulate || pc > 0);
            }
        }
    }
    return 0;
}

typedef struct {
    const T *a, *b;
    T *c;
    long batch, m, n, k, a_step, lda, b_step, ldb, c_step, row_tiles, col_tiles, tile_rows, tile_cols;
    int a_t, b_t, accumulate, failed;
} NAME(gemm_job);

/* y (+)= op(M) x by BLAS, M row-major (rows x cols, ld), x and y with steps: a tile of one row or column (gemm would
 * pack a whole panel of the other operand for it, 3x slower than this) */
static void NAME(blas_gemv)(int transposed, long rows, long cols, const T *m, long ld, const T *x, long x_step, T *y,
                            long y_step, int accumulate) {
    int trans = transposed ? CBLAS_TRANS : CBLAS_NO_TRANS;
    if (blas.ilp64)
        ((void (*)(int, int, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T, T *,
                   int64_t))blas.gemv[BLAS_INDEX])(CBLAS_ROW_MAJOR, trans, rows, cols, 1, m, ld, x, x_step, accumulate,
                                                   y, y_step);
    else
        ((void (*)(int, int, int, int, T, const T *, int, const T *, int, T, T *, int))blas.gemv[BLAS_INDEX])(
            CBLAS_ROW_MAJOR, trans, (int)rows, (int)cols, 1, m, (int)ld, x, (int)x_step, accumulate, y, (int)y_step);
}

/* One tile: C's rows x cols block at c (+)= the matching rows of op(A) @ the matching columns of op(B). */
static int NAME(tile_product)(const NAME(gemm_job) *j, const T *a, const T *b, T *c, long rows, long cols,
                              int accumulate) {
    long k = j->k, lda = j->lda, ldb = j->ldb, ldc = j->n;
    void *gemm = blas.gemm[BLAS_INDEX];
    int ints_fit = blas.ilp64 || (rows | cols | k | lda | ldb | ldc) <= 0x7fffffffL;
    if (gemm && ints_fit && k > 0 && lda >= (j->a_t ? rows : k) && ldb >= (j->b_t ? k : cols)) { /* so lda, ldb >= 1 */
        int ta = j->a_t ? CBLAS_TRANS : CBLAS_NO_TRANS, tb = j->b_t ? CBLAS_TRANS : CBLAS_NO_TRANS;
        if (rows == 1) /* c's row = op(B)^T a's row */
            NAME(blas_gemv)(!j->b_t, j->b_t ? cols : k, j->b_t ? k : cols, b, ldb, a, j->a_t ? lda : 1, c, 1,
                            accumulate);
        else if (cols == 1) /* c's column = op(A) b's column */
            NAME(blas_gemv)(j->a_t, j->a_t ? k : rows, j->a_t ? rows : k, a, lda, b, j->b_t ? 1 : ldb, c, ldc,
                            accumulate);
        else if (blas.ilp64)
            ((void (*)(int, int, int, int64_t, int64_t, int64_t, T, const T *, int64_t, const T *, int64_t, T, T *,
                       int64_t))gemm)(CBLAS_ROW_MAJOR, ta, tb, rows, cols, k, 1, a, lda, b, ldb, accumulate, c, ldc);
        else
            ((void (*)(int, int, int, int, int, int, T, const T *, int, const T *, int, T, T *, int))gemm)(
                CBLAS_ROW_MAJOR, ta, tb, (int)rows, (int)cols, (int)k, 1, a, (int)lda, b, (int)ldb, accumulate, c,
                (int)ldc);
        return 0;
    }
    return NAME(own_product)(rows, cols, k, a, j->a_t ? 1 : lda, j->a_t ? lda : 1, b, j->b_t ? 1 : ldb,
                             j->b_t ? ldb : 1, c, ldc, accumulate);
}

/* Tiles [start, stop): tile t is tile t mod (tiles a product) of product t / (tiles a product), or of every
 * product in turn, added up, when they share one C. */
static void NAME(gemm_tiles)(void *p, long start, long stop) {
    NAME(gemm_job) *j = p;
    long per_product = j->row_tiles * j->col_tiles;
    for (long t = start; t < stop; t++) {
        long tile = t % per_product, first = j->c_step ? t / per_product : 0, last = j->c_step ? first + 1 : j->batch;
        long row = tile / j->col_tiles * j->tile_rows, col = tile % j->col_tiles * j->tile_cols;
        long rows = j->m - row < j->tile_rows ? j->m - row : j->tile_rows;
        long cols = j->n - col < j->tile_cols ? j->n - col : j->tile_cols;
        for (long i = first; i < last; i++) {
            const T *a = j->a + i * j->a_step + (j->a_t ? row : row * j->lda);
            const T *b = j->b + i * j->b_step + (j->b_t ? col * j->ldb : col);
            if (NAME(tile_product)(j, a, b, j->c + i * j->c_step + row * j->n + col, rows, cols,
                                   j->accumulate || i > first))
                __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        }
    }
}

int NAME(tf_gemm)(long batch, long m, long n, long k, const T *a, long a_step, long lda, int a_t, const T *b,
                  long b_step, long ldb, int b_t, T *c, long c_step, int accumulate) {
    if (batch <= 0 || m <= 0 || n <= 0) return 0;
    NAME(gemm_job) j = {a, b, c, batch, m, n, k, a_step, lda, b_step, ldb, c_step, 1, 1, m, n, a_t, b_t, accumulate, 0};
    long products = c_step ? batch : 1;
    double work = (double)batch * m * n * (k > 0 ? k : 1) / TF_GEMM_COST_DIVISOR;
    long cost = work < 4e18 ? (long)work : (long)4e18;
    plan_tiles(products, m, n, cost, &j.row_tiles, &j.col_tiles);
    j.tile_rows = (m + j.row_tiles - 1) / j.row_tiles;
    j.tile_cols = ((n + j.col_tiles - 1) / j.col_tiles + 15) / 16 * 16; /* whole cache lines of C to each tile */
    j.col_tiles = (n + j.tile_cols - 1) / j.tile_cols;
    tf_hold_blas(1);
    tf_parallel_for(products * j.row_tiles * j.col_tiles, cost, NAME(gemm_tiles), &j);
    tf_hold_blas(0);
    return j.failed ? -1 : 0;
}
#undef MR
#undef NR
#undef KC
#undef MC
#undef NC
