/* A cache-blocked, parallel matrix product for the type T (the textbook GotoBLAS scheme).
 *
 * C (m x n) = A (m x k) @ B (k x n), row-major. Loops, outermost first:
 *   jc: NC columns of B and C          (the packed B panel, KC x NC, stays in the L2/L3 cache)
 *   pc: KC rows of B / columns of A
 *   ic: MC rows of A and C, in parallel (each thread packs its own MC x KC block of A into L2)
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

static void NAME(pack_a)(const T *a, long lda, long mc, long kc, T *packed) {
    for (long ir = 0; ir < mc; ir += MR)
        for (long p = 0; p < kc; p++)
            for (long i = 0; i < MR; i++)
                *packed++ = ir + i < mc ? a[(ir + i) * lda + p] : 0;
}

static void NAME(pack_b)(const T *b, long ldb, long kc, long nc, T *packed) {
    for (long jr = 0; jr < nc; jr += NR)
        for (long p = 0; p < kc; p++)
            for (long j = 0; j < NR; j++)
                *packed++ = jr + j < nc ? b[p * ldb + jr + j] : 0;
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

/* The MC-row blocks [start, stop) of C for one (jc, pc) step: each chunk packs its own blocks of A. */
typedef struct {
    const T *a, *b_packed;
    T *c;
    long m, n, k, jc, pc, nc, kc;
    int failed;
} NAME(gemm_args);

static void NAME(gemm_chunk)(void *p, long start, long stop) {
    NAME(gemm_args) *g = p;
    T *a_packed = malloc(sizeof(T) * MC * KC);
    if (!a_packed) {
        __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (long block = start; block < stop; block++) {
        long ic = block * MC, mc = g->m - ic < MC ? g->m - ic : MC;
        NAME(pack_a)(g->a + ic * g->k + g->pc, g->k, mc, g->kc, a_packed);
        for (long jr = 0; jr < g->nc; jr += NR)
            for (long ir = 0; ir < mc; ir += MR)
                NAME(micro_kernel)(g->kc, a_packed + ir * g->kc, g->b_packed + jr * g->kc,
                                   g->c + (ic + ir) * g->n + g->jc + jr, g->n, mc - ir < MR ? mc - ir : MR,
                                   g->nc - jr < NR ? g->nc - jr : NR, g->pc > 0);
    }
    free(a_packed);
}

int NAME(tf_gemm)(long m, long n, long k, const T *a, const T *b, T *c) {
    if (k == 0) {
        memset(c, 0, sizeof(T) * m * n);
        return 0;
    }
    T *b_packed = malloc(sizeof(T) * KC * (NC + NR));
    if (!b_packed) return -1;
    NAME(gemm_args) g = {a, b_packed, c, m, n, k, 0, 0, 0, 0, 0};
    for (long jc = 0; jc < n; jc += NC) {
        long nc = n - jc < NC ? n - jc : NC;
        for (long pc = 0; pc < k; pc += KC) {
            long kc = k - pc < KC ? k - pc : KC;
            NAME(pack_b)(b + pc * n + jc, n, kc, nc, b_packed);
            g.jc = jc, g.pc = pc, g.nc = nc, g.kc = kc;
            tf_parallel_for((m + MC - 1) / MC, m * n * k, NAME(gemm_chunk), &g);
        }
    }
    free(b_packed);
    return g.failed ? -1 : 0;
}
#undef MR
#undef NR
#undef KC
#undef MC
#undef NC
