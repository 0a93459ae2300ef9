/* Every matrix product of the C backend, run on tinyflow's thread pool.
 *
 * tf_gemm_f32/_f64(batch, m, n, k, a, a_step, lda, a_t, b, b_step, ldb, b_t, c, c_step, accumulate)
 *     for i < batch: C_i (m x n, rows of n values) (+)= op(A_i) @ op(B_i), with A_i = a + i a_step, row-major with
 *     leading dimension lda, op(A) = A, or its transpose when a_t (A is then k x m); B likewise. A step of 0 shares
 *     one matrix among the batch; c_step 0 sums the batch's products into one C. `accumulate` adds to C.
 *     Returns 0, or -1 if scratch memory could not be allocated.
 * tf_hold_blas(hold)
 *     hold numpy's BLAS at one thread (1), or let it go (0): for a product run by numpy on the calling thread.
 * tf_use_blas(sgemm, dgemm, sgemv, dgemv, get_threads, set_threads, ilp64)
 *     the BLAS to compute tiles with (cblas_?gemm, cblas_?gemv for tiles of one row or column, and
 *     openblas_[gs]et_num_threads of numpy's OpenBLAS, found by tinyflow/backends/native.py; ilp64: its integers
 *     are 64-bit); NULLs: the hand-written kernel.
 *
 * Why one owner of the cores: numpy's OpenBLAS keeps threads of its own, which spin for a while after each call
 * and then share the cores with tinyflow's pool running the next kernel (an imported MobileNetV2 on 2 cores with
 * one busy process beside it: 49 ms with BLAS threading itself, 22 ms with one BLAS thread). So the products are
 * cut into tiles that tinyflow's pool shares out, and BLAS computes each tile on the thread that claimed it, held
 * at one thread of its own while a product runs (the count is put back after, for the user's numpy).
 * How a product is cut: into about four tiles a thread (so a thread that is late costs a quarter of its share),
 * along the longer side of C, none thinner than MIN_TILE rows or columns (thinner ones make each tile re-pack
 * most of the other operand); a batch of products shares out whole products first.
 */
#include <pthread.h>

#include "common.h"
#include "tinyflow_kernels.h"

/* TF_GEMM_COST_DIVISOR (tinyflow_kernels.h): a product's cost for tf_parallel_for is its multiply-adds over this,
 * about the values a streaming kernel touches in the same time, so a product goes parallel where an elementwise
 * kernel would: below that, waking a sleeping worker costs more than it saves (506 x 64 x 64 takes 60 us on one
 * thread). */
enum { MIN_TILE = 32, TILES_PER_THREAD = 4, CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

static struct {
    void *gemm[2], *gemv[2]; /* cblas_sgemm, cblas_dgemm; cblas_sgemv, cblas_dgemv */
    int (*get_threads)(void);
    void (*set_threads)(int);
    int ilp64;
} blas;

void tf_use_blas(void *sgemm, void *dgemm, void *sgemv, void *dgemv, void *get_threads, void *set_threads,
                 int ilp64) {
    blas.gemm[0] = sgemm, blas.gemm[1] = dgemm, blas.gemv[0] = sgemv, blas.gemv[1] = dgemv;
    blas.get_threads = (int (*)(void))get_threads, blas.set_threads = (void (*)(int))set_threads;
    blas.ilp64 = ilp64;
}

/* BLAS at one thread while any product runs (the first to start saves its count, the last to end puts it back) */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static int holders, held_from = 1;

void tf_hold_blas(int hold) {
    if (!blas.set_threads) return;
    pthread_mutex_lock(&hold_lock);
    if (hold && holders++ == 0 && (held_from = blas.get_threads()) != 1) blas.set_threads(1);
    if (!hold && --holders == 0 && held_from != 1) blas.set_threads(held_from);
    pthread_mutex_unlock(&hold_lock);
}

/* How many tiles to cut each product's C into, along its rows or its columns. */
static void plan_tiles(long products, long m, long n, long cost, long *row_tiles, long *col_tiles) {
    long threads = tf_threads_for(cost), wanted = TILES_PER_THREAD * threads;
    *row_tiles = *col_tiles = 1;
    if (cost < TF_PARALLEL_MIN || threads == 1 || products >= wanted) return;
    long split = (wanted + products - 1) / products, longer = m >= n ? m : n;
    split = split < longer / MIN_TILE ? split : longer / MIN_TILE;
    *(m >= n ? row_tiles : col_tiles) = split > 1 ? split : 1;
}

#define T float
#define NAME(x) x##_f32
#define BLAS_INDEX 0
#include "gemm_generic.h"
#undef T
#undef NAME
#undef BLAS_INDEX

#define T double
#define NAME(x) x##_f64
#define BLAS_INDEX 1
#include "gemm_generic.h"
#undef T
#undef NAME
#undef BLAS_INDEX
