/* Fused optimizer updates for the type T: one pass over parameter, gradient and slots. */

/* Each update's loop is an always-inlined helper whose optional slots are flags, called once per combination
 * with constants: every case compiles to a loop of its own without tests. Left to unswitch `if (vmax)` itself,
 * GCC stops doing so when the loop grows (a longer square root made it give up) and loads vmax with a masked
 * load, NULL included, which the CPU completes through a microcode assist on every vector: Adam ran 25 times
 * slower. */
#ifndef TF_LOOP /* this header is included once per type */
#define TF_LOOP static inline __attribute__((always_inline)) void
#endif

TF_LOOP NAME(sgd_loop)(T *restrict p, const T *restrict g, T *restrict buf, long n, T lr, T momentum, T dampening,
                       T wd, int nesterov, int first_step, int has_buf) {
    for (long i = 0; i < n; i++) {
        T param = p[i], grad = g[i];
        if (wd != 0) grad += wd * param; /* loop-invariant tests on values: the compiler makes one loop per case */
        if (has_buf) {
            T b = first_step ? grad : momentum * buf[i] + (1 - dampening) * grad;
            buf[i] = b;
            grad = nesterov ? grad + momentum * b : b;
        }
        p[i] = param - lr * grad;
    }
}

TF_LOOP NAME(sgd_run)(T *restrict p, const T *restrict g, T *restrict buf, long n, T lr, T momentum, T dampening,
                      T wd, int nesterov, int first_step) {
    if (buf) NAME(sgd_loop)(p, g, buf, n, lr, momentum, dampening, wd, nesterov, first_step, 1);
    else NAME(sgd_loop)(p, g, NULL, n, lr, momentum, dampening, wd, nesterov, first_step, 0);
}

/* restrict and locals: without them the compiler re-reads m[i] and v[i] after storing them, and the
 * single-thread loop takes 9 ms on 10M elements instead of the 7 ms memory allows (the arrays never overlap). */
TF_LOOP NAME(adam_loop)(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, T *restrict vmax, long n,
                        T lr, T beta1, T beta2, T eps, T wd, int decoupled, T step_size, T inv_sqrt_bc2, int amsgrad) {
    T decay = decoupled ? 1 - lr * wd : 1, coupled_wd = decoupled ? 0 : wd;
    for (long i = 0; i < n; i++) {
        T grad = g[i], param = p[i];
        if (decay != 1) param *= decay; /* loop-invariant tests on values: the compiler makes one loop per case */
        if (coupled_wd != 0) grad += coupled_wd * param;
        T mi = beta1 * m[i] + (1 - beta1) * grad, vi = beta2 * v[i] + (1 - beta2) * grad * grad;
        m[i] = mi;
        v[i] = vi;
        if (amsgrad) {
            vi = vmax[i] > vi ? vmax[i] : vi;
            vmax[i] = vi;
        }
        p[i] = param - step_size * mi / (SQRT(vi) * inv_sqrt_bc2 + eps); /* one division per element, not two */
    }
}

TF_LOOP NAME(adam_run)(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, T *restrict vmax, long n,
                       T lr, T beta1, T beta2, T eps, T wd, int decoupled, T step_size, T inv_sqrt_bc2) {
    if (vmax) NAME(adam_loop)(p, g, m, v, vmax, n, lr, beta1, beta2, eps, wd, decoupled, step_size, inv_sqrt_bc2, 1);
    else NAME(adam_loop)(p, g, m, v, NULL, n, lr, beta1, beta2, eps, wd, decoupled, step_size, inv_sqrt_bc2, 0);
}

TF_LOOP NAME(rmsprop_loop)(T *restrict p, const T *restrict g, T *restrict sq, T *restrict gavg, T *restrict buf,
                           long n, T lr, T alpha, T eps, T wd, T momentum, int centered, int has_buf) {
    for (long i = 0; i < n; i++) {
        T param = p[i], grad = g[i];
        if (wd != 0) grad += wd * param;
        T s = alpha * sq[i] + (1 - alpha) * grad * grad, avg;
        sq[i] = s;
        if (centered) {
            T ga = alpha * gavg[i] + (1 - alpha) * grad;
            gavg[i] = ga;
            avg = SQRT(s - ga * ga) + eps;
        } else {
            avg = SQRT(s) + eps;
        }
        if (has_buf) {
            T b = momentum * buf[i] + grad / avg;
            buf[i] = b;
            p[i] = param - lr * b;
        } else {
            p[i] = param - lr * grad / avg;
        }
    }
}

TF_LOOP NAME(rmsprop_run)(T *restrict p, const T *restrict g, T *restrict sq, T *restrict gavg, T *restrict buf,
                          long n, T lr, T alpha, T eps, T wd, T momentum) {
    if (gavg && buf) NAME(rmsprop_loop)(p, g, sq, gavg, buf, n, lr, alpha, eps, wd, momentum, 1, 1);
    else if (gavg) NAME(rmsprop_loop)(p, g, sq, gavg, NULL, n, lr, alpha, eps, wd, momentum, 1, 0);
    else if (buf) NAME(rmsprop_loop)(p, g, sq, NULL, buf, n, lr, alpha, eps, wd, momentum, 0, 1);
    else NAME(rmsprop_loop)(p, g, sq, NULL, NULL, n, lr, alpha, eps, wd, momentum, 0, 0);
}

TF_LOOP NAME(adagrad_run)(T *restrict p, const T *restrict g, T *restrict sum, long n, T clr, T eps, T wd) {
    for (long i = 0; i < n; i++) {
        T param = p[i], grad = g[i];
        if (wd != 0) grad += wd * param;
        T s = sum[i] + grad * grad;
        sum[i] = s;
        p[i] = param - clr * grad / (SQRT(s) + eps);
    }
}

/* Every update runs its loop above on the thread pool, through one argument struct (kind: enum tf_update_kind). */

typedef struct {
    int kind;
    T *p;
    const T *g;
    T *s1, *s2, *s3;   /* the slots: momentum / m, v, vmax / square average, gradient average, buffer */
    T h[8];            /* hyper-parameters, in the order of the kind's run function */
    int flag1, flag2;  /* nesterov, first step / decoupled weight decay */
} NAME(update_args);

static T *NAME(at)(T *slot, long start) { return slot ? slot + start : NULL; }

TF_LOOP NAME(update_range)(const NAME(update_args) *k, long start, long stop) {
    T *param = k->p + start;
    const T *h = k->h;
    const T *g = k->g + start;
    long n = stop - start;
    switch (k->kind) {
    case TF_UPDATE_SGD:
        NAME(sgd_run)(param, g, NAME(at)(k->s1, start), n, h[0], h[1], h[2], h[3], k->flag1, k->flag2);
        break;
    case TF_UPDATE_ADAM:
        NAME(adam_run)(param, g, k->s1 + start, k->s2 + start, NAME(at)(k->s3, start), n, h[0], h[1], h[2], h[3],
                       h[4], k->flag1, h[5], h[6]);
        break;
    case TF_UPDATE_RMSPROP:
        NAME(rmsprop_run)(param, g, k->s1 + start, NAME(at)(k->s2, start), NAME(at)(k->s3, start), n, h[0], h[1],
                          h[2], h[3], h[4]);
        break;
    case TF_UPDATE_ADAGRAD: NAME(adagrad_run)(param, g, k->s1 + start, n, h[0], h[1], h[2]); break;
    }
}

/* Each chunk runs in one of two builds of the loops above, chosen by the arrays' size. Where they stay in the caches
 * from one step to the next, the loops are bound by arithmetic and 512-bit vectors do the most (Adam over 256K
 * floats on one thread, 512-bit: 0.90x the -ffast-math loop, 256-bit: 1.31x). Where they stream from memory,
 * wider vectors cannot fetch faster, and on AMD Zen 5 the 512-bit loops ran slower (10M floats: 1.09-1.13x
 * against 0.90-0.94x on one thread; 1.19x against 1.06x on two). TF_STREAMING_BYTES (tinyflow_kernels.h),
 * 8 MiB per array, is about where Adam's four arrays outgrow a 32 MiB last-level cache: a rule of thumb. A step
 * over many tensors (tf_update_multi) counts all of them: together they leave the caches every step. */
TF_CLONES static void NAME(update_chunk)(void *p, long start, long stop) { NAME(update_range)(p, start, stop); }

TF_CLONES_256 static void NAME(update_chunk_streaming)(void *p, long start, long stop) {
    NAME(update_range)(p, start, stop);
}

/* One update over n elements, in the streaming build when its step touches `bytes` per array or more. */
static void NAME(run_update)(NAME(update_args) *k, long n, long bytes) {
    tf_parallel_for(n, n, bytes >= TF_STREAMING_BYTES ? NAME(update_chunk_streaming) : NAME(update_chunk), k);
}

/* Each update's arguments for the chunks, from the hyper-parameters of its entry point below. */
static NAME(update_args) NAME(sgd_args)(T *p, const T *g, T *buf, double lr, double momentum, double dampening,
                                        double wd, int nesterov, int first_step) {
    NAME(update_args) k = {TF_UPDATE_SGD, p, g, buf, NULL, NULL, {(T)lr, (T)momentum, (T)dampening, (T)wd},
                           nesterov, first_step};
    return k;
}

static NAME(update_args) NAME(adam_args)(T *p, const T *g, T *m, T *v, T *vmax, double lr, double beta1,
                                         double beta2, double eps, double wd, int decoupled, long step) {
    double bc1 = 1 - pow(beta1, (double)step), bc2 = 1 - pow(beta2, (double)step);
    NAME(update_args) k = {TF_UPDATE_ADAM, p, g, m, v, vmax,
                           {(T)lr, (T)beta1, (T)beta2, (T)eps, (T)wd, (T)(lr / bc1), (T)(1 / sqrt(bc2))}, decoupled, 0};
    return k;
}

static NAME(update_args) NAME(rmsprop_args)(T *p, const T *g, T *sq, T *gavg, T *buf, double lr, double alpha,
                                            double eps, double wd, double momentum) {
    NAME(update_args) k = {TF_UPDATE_RMSPROP, p, g, sq, gavg, buf, {(T)lr, (T)alpha, (T)eps, (T)wd, (T)momentum}, 0, 0};
    return k;
}

static NAME(update_args) NAME(adagrad_args)(T *p, const T *g, T *sum, double clr, double eps, double wd) {
    NAME(update_args) k = {TF_UPDATE_ADAGRAD, p, g, sum, NULL, NULL, {(T)clr, (T)eps, (T)wd}, 0, 0};
    return k;
}

void NAME(tf_sgd)(T *p, const T *g, T *buf, long n, double lr, double momentum, double dampening, double wd,
                  int nesterov, int first_step) {
    NAME(update_args) k = NAME(sgd_args)(p, g, buf, lr, momentum, dampening, wd, nesterov, first_step);
    NAME(run_update)(&k, n, n * (long)sizeof(T));
}

void NAME(tf_adam)(T *p, const T *g, T *m, T *v, T *vmax, long n, double lr, double beta1, double beta2,
                   double eps, double wd, int decoupled, long step) {
    NAME(update_args) k = NAME(adam_args)(p, g, m, v, vmax, lr, beta1, beta2, eps, wd, decoupled, step);
    NAME(run_update)(&k, n, n * (long)sizeof(T));
}

void NAME(tf_rmsprop)(T *p, const T *g, T *sq, T *gavg, T *buf, long n, double lr, double alpha, double eps,
                      double wd, double momentum) {
    NAME(update_args) k = NAME(rmsprop_args)(p, g, sq, gavg, buf, lr, alpha, eps, wd, momentum);
    NAME(run_update)(&k, n, n * (long)sizeof(T));
}

void NAME(tf_adagrad)(T *p, const T *g, T *sum, long n, double clr, double eps, double wd) {
    NAME(update_args) k = NAME(adagrad_args)(p, g, sum, clr, eps, wd);
    NAME(run_update)(&k, n, n * (long)sizeof(T));
}

/* One optimizer step over `count` tensors in one call (torch's "foreach" form): tensor i has n[i] elements
 * at p[i] and g[i], slots s1[i], s2[i], s3[i] (NULL where the optimizer has none; see the kernels above for
 * their order) and a step counter steps[i] (NULL for RMSProp), incremented here. kind: enum tf_update_kind;
 * h: the hyper-parameters in the order of the kind's kernel above (Adam: lr, beta1, beta2, eps, wd;
 * SGD: lr, momentum, dampening, wd; RMSProp: lr, alpha, eps, wd, momentum; AdaGrad: lr, lr_decay, eps, wd);
 * flag: Adam's decoupled weight decay or SGD's Nesterov. Each tensor runs on the thread pool as above. */
void NAME(tf_update_multi)(int kind, long count, T *const *p, const T *const *g, T *const *s1, T *const *s2,
                           T *const *s3, const long *n, int64_t *const *steps, const double *h, int flag) {
    long bytes = 0; /* the step's arrays stream from memory when all of them together outgrow the caches */
    for (long i = 0; i < count; i++) bytes += n[i] * (long)sizeof(T);
    for (long i = 0; i < count; i++) {
        long step = steps && steps[i] ? ++*steps[i] : 0;
        NAME(update_args) k;
        switch (kind) {
        case TF_UPDATE_SGD:
            k = NAME(sgd_args)(p[i], g[i], s1[i], h[0], h[1], h[2], h[3], flag, h[1] != 0 && step == 1);
            break;
        case TF_UPDATE_ADAM:
            k = NAME(adam_args)(p[i], g[i], s1[i], s2[i], s3[i], h[0], h[1], h[2], h[3], h[4], flag, step);
            break;
        case TF_UPDATE_RMSPROP:
            k = NAME(rmsprop_args)(p[i], g[i], s1[i], s2[i], s3[i], h[0], h[1], h[2], h[3], h[4]);
            break;
        case TF_UPDATE_ADAGRAD:
            k = NAME(adagrad_args)(p[i], g[i], s1[i], h[0] / (1 + (step - 1) * h[1]), h[2], h[3]);
            break;
        default: return;
        }
        NAME(run_update)(&k, n[i], bytes);
    }
}
