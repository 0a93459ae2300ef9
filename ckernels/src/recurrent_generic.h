/* The recurrent loop for the type T (see recurrent.c). */

enum { NAME(U) = 64 / (int)sizeof(T) }; /* hidden units per block: one cache line of each gate's weights */
#define U NAME(U)
#define ROWS 4 /* rows of the batch per product: ROWS x U sums of a gate in registers */

typedef struct {
    int cell, gates, packs; /* packs: the state's parts (2: an LSTM's h and c) */
    long n, h, blocks;      /* blocks of U hidden units */
    long off[4];            /* where each gate (torch's order) starts in a row of x, of the kept h gates, of dx, dhg */
    const T *wp, *wtp, *bias; /* W_hh packed by block and gate (h gates), and by block as it is (the carry back) */
    const T *x, *prev;      /* the step's x gates (n, G·h) and the state before it (S, n, h) */
    T *next, *kept;         /* forward: the state after the step; what the backward needs (n, G·h: lstm_cells), or NULL */
    const T *kepts, *dh, *dc; /* backward: the step's kept values, and the gradient of the state after it (rows ld apart) */
    long ld;
    const T *grad_before;   /* the forward output's gradient at the state before the step; NULL at the first step */
    T *d;                   /* the step's gradients (n, slab: 2·G·h + S·h, + h for GRU_RESET_FIRST) */
    long slab;
    T *rh, *z;              /* GRU_RESET_FIRST's forward: the step's r h and z (n, h) between its two passes */
} NAME(loop_args);

/* out[i][j] = Σ_p a[i·lda + p] b[p·U + j] over `rows` rows (a constant where it is inlined: the sums stay in
 * registers). With fewer than ROWS rows each row's sum is split in ROWS / rows partial sums over alternate p:
 * one chain of additions alone would wait for each addition to finish. */
static inline __attribute__((always_inline)) void NAME(product)(const T *restrict a, long lda, const T *restrict b,
                                                                 long k, int rows, T out[ROWS][U]) {
    const int split = ROWS / rows;
    T acc[ROWS][U] = {{0}};
    long p = 0;
    for (; p + split <= k; p += split)
        for (int s = 0; s < split; s++)
            for (int i = 0; i < rows; i++) {
                T ai = a[i * lda + p + s];
                const T *bp = b + (p + s) * U;
#pragma omp simd
                for (int j = 0; j < U; j++) acc[s * rows + i][j] += ai * bp[j];
            }
    for (; p < k; p++)
        for (int i = 0; i < rows; i++) {
            T ai = a[i * lda + p];
#pragma omp simd
            for (int j = 0; j < U; j++) acc[i][j] += ai * b[p * U + j];
        }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < U; j++) {
            T sum = acc[i][j];
            for (int s = 1; s < split; s++) sum += acc[s * rows + i][j];
            out[i][j] = sum;
        }
}

static inline __attribute__((always_inline)) void NAME(products)(const T *a, long lda, const T *b, long k, int rows,
                                                                  T acc[ROWS][U]) {
    switch (rows) {
    case 1: NAME(product)(a, lda, b, k, 1, acc); break;
    case 2: NAME(product)(a, lda, b, k, 2, acc); break;
    case 3: NAME(product)(a, lda, b, k, 3, acc); break;
    default: NAME(product)(a, lda, b, k, ROWS, acc);
    }
}

/* The cells on `width` units of one row: x's gates start at off[g], hg's are ROWS·U apart (restrict: the loops
 * vectorize). With `kept` (laid out as x), what the backward needs: an LSTM's activated gates, a GRU's r, z and the
 * hidden part of n's pre-activation. */
static inline __attribute__((always_inline)) void NAME(lstm_cells)(const T *restrict x, const long *off,
                                                                    const T *restrict hg, const T *restrict cp,
                                                                    T *restrict hn, T *restrict cn,
                                                                    T *restrict kept, long width) {
#pragma omp simd
    for (long j = 0; j < width; j++) {
        T ig = SIGMOID(x[off[0] + j] + hg[j]), fg = SIGMOID(x[off[1] + j] + hg[ROWS * U + j]);
        T gg = TANH(x[off[2] + j] + hg[2 * ROWS * U + j]), og = SIGMOID(x[off[3] + j] + hg[3 * ROWS * U + j]);
        T c = fg * cp[j] + ig * gg;
        cn[j] = c;
        hn[j] = og * TANH(c);
        if (kept)
            kept[off[0] + j] = ig, kept[off[1] + j] = fg, kept[off[2] + j] = gg, kept[off[3] + j] = og;
    }
}

static inline __attribute__((always_inline)) void NAME(gru_cells)(const T *restrict x, const long *off,
                                                                   const T *restrict hg, const T *restrict hp,
                                                                   T *restrict hn, T *restrict kept, long width) {
#pragma omp simd
    for (long j = 0; j < width; j++) {
        T rg = SIGMOID(x[off[0] + j] + hg[j]), zg = SIGMOID(x[off[1] + j] + hg[ROWS * U + j]);
        T ng = TANH(x[off[2] + j] + rg * hg[2 * ROWS * U + j]);
        hn[j] = ng + zg * (hp[j] - ng);
        if (kept)
            kept[off[0] + j] = rg, kept[off[1] + j] = zg, kept[off[2] + j] = hg[2 * ROWS * U + j];
    }
}

static inline __attribute__((always_inline)) void NAME(rnn_cells)(const T *restrict x, const T *restrict hg,
                                                                   T *restrict hn, long width, int relu) {
    if (relu)
#pragma omp simd
        for (long j = 0; j < width; j++) hn[j] = x[j] + hg[j] < 0 ? 0 : x[j] + hg[j]; /* NaN stays, as np.maximum */
    else
#pragma omp simd
        for (long j = 0; j < width; j++) hn[j] = TANH(x[j] + hg[j]);
}

/* The first `count` h gates (torch's order) of block `block`'s units for rows r0 .. r0 + rows: the previous state
 * times the block's packed rows of W_hh, + b_hh. */
static inline __attribute__((always_inline)) void NAME(block_gates)(const NAME(loop_args) *k, long block, long r0,
                                                                     int rows, int count, T hg[][ROWS][U]) {
    long h = k->h, j0 = block * U, width = h - j0 < U ? h - j0 : U;
    for (int g = 0; g < count; g++) {
        NAME(products)(k->prev + r0 * h, h, k->wp + (block * k->gates + g) * h * U, h, rows, hg[g]);
        for (int i = 0; k->bias && i < rows; i++)
            for (long j = 0; j < width; j++) hg[g][i][j] += k->bias[k->off[g] + j0 + j];
    }
}

/* One step's blocks [start, stop): the h gates of the block's units (+ b_hh), then the cell on them. */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(forward_chunk)(void *p, long start,
                                                                                      long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            T hg[4][ROWS][U];
            NAME(block_gates)(k, block, r0, rows, k->gates, hg);
            for (int i = 0; i < rows; i++) {
                long r = r0 + i;
                const T *x = k->x + r * gh + j0, *hp = k->prev + r * h + j0, *cp = hp + n * h;
                T *hn = k->next + r * h + j0, *cn = hn + n * h;
                T *kept = k->kept ? k->kept + r * gh + j0 : NULL;
                if (k->cell == TF_LSTM)
                    NAME(lstm_cells)(x, k->off, hg[0][i], cp, hn, cn, kept, width);
                else if (k->cell == TF_GRU)
                    NAME(gru_cells)(x, k->off, hg[0][i], hp, hn, kept, width);
                else
                    NAME(rnn_cells)(x, hg[0][i], hn, width, k->cell == TF_RNN_RELU);
                if (kept && k->gates == 1) /* an RNN's backward recomputes its one activation from h gates */
                    memcpy(kept, hg[0][i], width * sizeof(T));
            }
        }
    }
}

/* A row's gradients on `width` units: of the x gates (dx), of the h gates (dhg, both laid out as x), and of the state
 * before the step but for the carry through W_hh (dhp, dcp: they hold the output's gradient there already). */
static inline __attribute__((always_inline)) void NAME(lstm_back)(const T *restrict a, const long *off,
                                                                   const T *restrict cp, const T *restrict dh,
                                                                   const T *restrict dc, T *restrict dx,
                                                                   T *restrict dhg, T *restrict dcp, long width) {
#pragma omp simd
    for (long j = 0; j < width; j++) { /* a: the activated gates */
        T ig = a[off[0] + j], fg = a[off[1] + j], gg = a[off[2] + j], og = a[off[3] + j];
        T tc = TANH(fg * cp[j] + ig * gg);
        T d_c = dc[j] + dh[j] * og * (1 - tc * tc); /* through c' and through h' = σ(o) tanh(c') */
        dhg[off[0] + j] = dx[off[0] + j] = d_c * gg * ig * (1 - ig);
        dhg[off[1] + j] = dx[off[1] + j] = d_c * cp[j] * fg * (1 - fg);
        dhg[off[2] + j] = dx[off[2] + j] = d_c * ig * (1 - gg * gg);
        dhg[off[3] + j] = dx[off[3] + j] = dh[j] * tc * og * (1 - og);
        dcp[j] += d_c * fg;
    }
}

static inline __attribute__((always_inline)) void NAME(gru_back)(const T *restrict x, const T *restrict a,
                                                                  const long *off, const T *restrict hp,
                                                                  const T *restrict dh, T *restrict dx,
                                                                  T *restrict dhg, T *restrict dhp, long width) {
#pragma omp simd
    for (long j = 0; j < width; j++) { /* a: r, z and the hidden part of n's pre-activation */
        T rg = a[off[0] + j], zg = a[off[1] + j], hg_n = a[off[2] + j];
        T ng = TANH(x[off[2] + j] + rg * hg_n);
        T d_n = dh[j] * (1 - zg) * (1 - ng * ng); /* of n's pre-activation x_n + r hg_n */
        dhg[off[0] + j] = dx[off[0] + j] = d_n * hg_n * rg * (1 - rg);
        dhg[off[1] + j] = dx[off[1] + j] = dh[j] * (hp[j] - ng) * zg * (1 - zg);
        dx[off[2] + j] = d_n;
        dhg[off[2] + j] = d_n * rg;
        dhp[j] += dh[j] * zg;
    }
}

static inline __attribute__((always_inline)) void NAME(rnn_back)(const T *restrict x, const T *restrict hg,
                                                                  const T *restrict dh, T *restrict dx,
                                                                  T *restrict dhg, long width, int relu) {
#pragma omp simd
    for (long j = 0; j < width; j++) {
        T a = x[j] + hg[j], t = TANH(a);
        dhg[j] = dx[j] = relu ? (a > 0 ? dh[j] : 0) : dh[j] * (1 - t * t);
    }
}

/* One step back, blocks [start, stop) of its units: the rows' gradients (above); the carry is carry_chunk's. */
TF_CLONES static void NAME(back_chunk)(void *p, long start, long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h, slab = k->slab;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r = 0; r < n; r++) {
            const T *x = k->x + r * gh + j0, *kept = k->kepts + r * gh + j0, *hp = k->prev + r * h + j0;
            const T *dh = k->dh + r * k->ld + j0, *before = k->grad_before ? k->grad_before + r * h + j0 : NULL;
            T *dx = k->d + r * slab + j0, *dhg = dx + gh, *dhp = dx + 2 * gh;
            for (int part = 0; part < k->packs; part++) /* the output's own gradient at the state before */
                for (long j = 0; j < width; j++) dhp[part * h + j] = before ? before[part * n * h + j] : 0;
            if (k->cell == TF_LSTM)
                NAME(lstm_back)(kept, k->off, hp + n * h, dh, k->dc + r * k->ld + j0, dx, dhg, dhp + h, width);
            else if (k->cell == TF_GRU)
                NAME(gru_back)(x, kept, k->off, hp, dh, dx, dhg, dhp, width);
            else
                NAME(rnn_back)(x, kept, dh, dx, dhg, width, k->cell == TF_RNN_RELU);
        }
    }
}

/* The carry back, blocks [start, stop) of the units of h: dh_before += dhg W_hh. */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(carry_chunk)(void *p, long start,
                                                                                    long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h, slab = k->slab;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            T acc[ROWS][U];
            NAME(products)(k->d + r0 * slab + gh, slab, k->wtp + block * gh * U, gh, rows, acc);
            for (int i = 0; i < rows; i++)
                for (long j = 0; j < width; j++) k->d[(r0 + i) * slab + 2 * gh + j0 + j] += acc[i][j];
        }
    }
}

/* GRU_RESET_FIRST's first pass over one step's blocks [start, stop): r and z of the block's units, and r h. */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(reset_chunk)(void *p, long start,
                                                                                    long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            T hg[2][ROWS][U];
            NAME(block_gates)(k, block, r0, rows, 2, hg); /* r and z */
            for (int i = 0; i < rows; i++) {
                long r = r0 + i;
                const T *x = k->x + r * gh + j0, *hp = k->prev + r * h + j0;
                T *rh = k->rh + r * h + j0, *z = k->z + r * h + j0, *kept = k->kept ? k->kept + r * gh + j0 : NULL;
                for (long j = 0; j < width; j++) {
                    T rg = SIGMOID(x[k->off[0] + j] + hg[0][i][j]), zg = SIGMOID(x[k->off[1] + j] + hg[1][i][j]);
                    rh[j] = rg * hp[j], z[j] = zg;
                    if (kept) kept[k->off[0] + j] = rg, kept[k->off[1] + j] = zg;
                }
            }
        }
    }
}

/* GRU_RESET_FIRST's second pass: n's h gate from every unit's r h, then n and the state after the step. */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(reset_n_chunk)(void *p, long start,
                                                                                      long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            T hg[ROWS][U];
            NAME(products)(k->rh + r0 * h, h, k->wp + (block * k->gates + 2) * h * U, h, rows, hg);
            for (int i = 0; i < rows; i++) {
                long r = r0 + i;
                const T *x = k->x + r * gh + j0, *hp = k->prev + r * h + j0, *z = k->z + r * h + j0;
                T *hn = k->next + r * h + j0, *kept = k->kept ? k->kept + r * gh + j0 : NULL;
                for (long j = 0; j < width; j++) {
                    T hgn = hg[i][j] + (k->bias ? k->bias[k->off[2] + j0 + j] : 0);
                    T ng = TANH(x[k->off[2] + j] + hgn);
                    hn[j] = ng + z[j] * (hp[j] - ng);
                    if (kept) kept[k->off[2] + j] = hgn;
                }
            }
        }
    }
}

/* GRU_RESET_FIRST's step back, first pass over blocks of units: the gradients of n's and z's pre-activations, the
 * state's own share (through z), and the step's r h for W_hn's gradient. */
TF_CLONES static void NAME(reset_back_chunk)(void *p, long start, long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h, slab = k->slab;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r = 0; r < n; r++) {
            const T *x = k->x + r * gh + j0, *a = k->kepts + r * gh + j0, *hp = k->prev + r * h + j0;
            const T *dh = k->dh + r * k->ld + j0, *before = k->grad_before ? k->grad_before + r * h + j0 : NULL;
            T *dx = k->d + r * slab + j0, *dhg = dx + gh, *dhp = dx + 2 * gh, *rh = dx + 2 * gh + h;
            for (long j = 0; j < width; j++) {
                T rg = a[k->off[0] + j], zg = a[k->off[1] + j], ng = TANH(x[k->off[2] + j] + a[k->off[2] + j]);
                T d_n = dh[j] * (1 - zg) * (1 - ng * ng);
                dhg[k->off[2] + j] = dx[k->off[2] + j] = d_n;
                dhg[k->off[1] + j] = dx[k->off[1] + j] = dh[j] * (hp[j] - ng) * zg * (1 - zg);
                dhp[j] = (before ? before[j] : 0) + dh[j] * zg;
                rh[j] = rg * hp[j];
            }
        }
    }
}

/* GRU_RESET_FIRST's step back, second pass over blocks of units q: the gradient of r h (n's pre-activation's times
 * W_hn), which gives r's and the state's share through r h. */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(reset_back_r_chunk)(void *p, long start,
                                                                                           long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h, slab = k->slab;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            T d_rh[ROWS][U];
            NAME(products)(k->d + r0 * slab + gh + k->off[2], slab, k->wtp + (block * gh + k->off[2]) * U, h, rows,
                           d_rh);
            for (int i = 0; i < rows; i++) {
                long r = r0 + i;
                const T *a = k->kepts + r * gh + j0, *hp = k->prev + r * h + j0;
                T *dx = k->d + r * slab + j0, *dhg = dx + gh, *dhp = dx + 2 * gh;
                for (long j = 0; j < width; j++) {
                    T rg = a[k->off[0] + j];
                    dhg[k->off[0] + j] = dx[k->off[0] + j] = d_rh[i][j] * hp[j] * rg * (1 - rg);
                    dhp[j] += d_rh[i][j] * rg;
                }
            }
        }
    }
}

/* GRU_RESET_FIRST's carry back, over blocks of units: dh_before += dhg_r W_hr + dhg_z W_hz (W_hn's went through r h). */
TF_CLONES __attribute__((optimize("fp-contract=fast"))) static void NAME(reset_carry_chunk)(void *p, long start,
                                                                                          long stop) {
    const NAME(loop_args) *k = p;
    long n = k->n, h = k->h, gh = k->gates * h, slab = k->slab;
    for (long block = start; block < stop; block++) {
        long j0 = block * U, width = h - j0 < U ? h - j0 : U;
        for (long r0 = 0; r0 < n; r0 += ROWS) {
            int rows = n - r0 < ROWS ? (int)(n - r0) : ROWS;
            for (int g = 0; g < 2; g++) {
                T acc[ROWS][U];
                NAME(products)(k->d + r0 * slab + gh + k->off[g], slab, k->wtp + (block * gh + k->off[g]) * U, h,
                               rows, acc);
                for (int i = 0; i < rows; i++)
                    for (long j = 0; j < width; j++) k->d[(r0 + i) * slab + 2 * gh + j0 + j] += acc[i][j];
            }
        }
    }
}

/* The forward loop, every step's state into `states` (and what the backward needs into `kepts` unless NULL). */
static void NAME(run_forward)(NAME(loop_args) *k, const T *x, const T *state, T *states, T *kepts, long steps,
                              int reverse) {
    long gh = k->gates * k->h, size = k->packs * k->n * k->h;
    for (long s = 0; s < steps; s++) {
        long t = reverse ? steps - 1 - s : s;
        k->x = x + t * k->n * gh;
        k->prev = s == 0 ? state : states + (reverse ? t + 1 : t - 1) * size;
        k->next = states + t * size;
        k->kept = kepts ? kepts + t * k->n * gh : NULL;
        if (k->cell == TF_GRU_RESET_FIRST) { /* two passes: n's product reads every unit's r h */
            tf_parallel_for(k->blocks, k->n * 2 * k->h * k->h, NAME(reset_chunk), k);
            tf_parallel_for(k->blocks, k->n * k->h * k->h, NAME(reset_n_chunk), k);
        } else {
            tf_parallel_for(k->blocks, k->n * gh * k->h, NAME(forward_chunk), k);
        }
    }
}

int NAME(tf_recurrence)(int cell, const int *order, const T *x, const T *w, const T *bias, const T *state,
                        const T *grad, T *out, long steps, long n, long h, int reverse) {
    int reset_first = cell == TF_GRU_RESET_FIRST;
    int gates = cell == TF_LSTM ? 4 : cell == TF_GRU || reset_first ? 3 : 1, packs = cell == TF_LSTM ? 2 : 1;
    long blocks = (h + U - 1) / U, gh = gates * h, size = packs * n * h, slab = 2 * gh + packs * h + reset_first * h;
    T *wp = malloc(sizeof(T) * blocks * gh * U), *wtp = NULL, *states = NULL, *kepts = NULL;
    T *mix = reset_first ? malloc(sizeof(T) * 2 * n * h) : NULL; /* r h and z between a step's two passes */
    if (!wp || (reset_first && !mix)) {
        free(wp), free(mix);
        return -1;
    }
    for (long block = 0; block < blocks; block++) /* W_hh (G·h, h): each gate's U rows of the block, transposed */
        for (int g = 0; g < gates; g++)
            for (long j = 0, j0 = block * U; j < U; j++) /* one row of W_hh after the other: read in order */
                for (long q = 0; q < h; q++)
                    wp[((block * gates + g) * h + q) * U + j] = j0 + j < h ? w[(order[g] * h + j0 + j) * h + q] : 0;
    NAME(loop_args) k = {.cell = cell, .gates = gates, .packs = packs, .n = n, .h = h, .blocks = blocks, .wp = wp,
                         .bias = bias, .slab = slab, .rh = mix, .z = mix ? mix + n * h : NULL};
    for (int g = 0; g < gates; g++) k.off[g] = order[g] * h;
    if (!grad) {
        NAME(run_forward)(&k, x, state, out, NULL, steps, reverse);
        free(wp), free(mix);
        return 0;
    }
    wtp = malloc(sizeof(T) * blocks * gh * U);
    states = malloc(sizeof(T) * steps * size);
    kepts = malloc(sizeof(T) * steps * n * gh);
    if (wtp && states && kepts) {
        for (long block = 0; block < blocks; block++) /* W_hh (G·h, h): the block's U columns, row by row */
            for (long q = 0; q < gh; q++)
                for (long j = 0, j0 = block * U; j < U; j++)
                    wtp[(block * gh + q) * U + j] = j0 + j < h ? w[q * h + j0 + j] : 0;
        NAME(run_forward)(&k, x, state, states, kepts, steps, reverse);
        k.wtp = wtp;
        for (long s = steps - 1; s >= 0; s--) { /* s: the step's place in the forward order */
            long t = reverse ? steps - 1 - s : s, before = reverse ? t + 1 : t - 1, after = reverse ? t - 1 : t + 1;
            k.x = x + t * n * gh, k.kepts = kepts + t * n * gh;
            k.prev = s == 0 ? state : states + before * size;
            if (s == steps - 1) /* the last step: only the output's gradient; else the total the step after found */
                k.dh = grad + t * size, k.dc = k.dh + n * h, k.ld = h;
            else
                k.dh = out + after * n * slab + 2 * gh, k.dc = k.dh + h, k.ld = slab;
            k.grad_before = s == 0 ? NULL : grad + before * size;
            k.d = out + t * n * slab;
            if (reset_first) { /* r's gradient needs every unit's n gradient (through W_hn), the carry every r's */
                tf_parallel_for(blocks, n * gh * 8, NAME(reset_back_chunk), &k);
                tf_parallel_for(blocks, n * h * h, NAME(reset_back_r_chunk), &k);
                tf_parallel_for(blocks, n * 2 * h * h, NAME(reset_carry_chunk), &k);
            } else {
                tf_parallel_for(blocks, n * gh * 8, NAME(back_chunk), &k);
                tf_parallel_for(blocks, n * gh * h, NAME(carry_chunk), &k);
            }
        }
    }
    int failed = !(wtp && states && kepts);
    free(wp), free(wtp), free(states), free(kepts), free(mix);
    return failed ? -1 : 0;
}
#undef U
#undef ROWS
