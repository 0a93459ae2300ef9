/* Fused optimizer updates for the type T: one pass over parameter, gradient and slots. */

TF_CLONES static void NAME(sgd_run)(T *p, const T *g, T *buf, long n, T lr, T momentum, T dampening, T wd,
                                    int nesterov, int first_step) {
    for (long i = 0; i < n; i++) {
        T grad = g[i] + wd * p[i];
        if (buf) {
            buf[i] = first_step ? grad : momentum * buf[i] + (1 - dampening) * grad;
            grad = nesterov ? grad + momentum * buf[i] : buf[i];
        }
        p[i] -= lr * grad;
    }
}

TF_CLONES static void NAME(adam_run)(T *p, const T *g, T *m, T *v, T *vmax, long n, T lr, T beta1, T beta2,
                                     T eps, T wd, int decoupled, T step_size, T sqrt_bc2) {
    for (long i = 0; i < n; i++) {
        T grad = g[i];
        if (decoupled) p[i] *= 1 - lr * wd;
        else grad += wd * p[i];
        m[i] = beta1 * m[i] + (1 - beta1) * grad;
        v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
        T second = v[i];
        if (vmax) {
            vmax[i] = vmax[i] > v[i] ? vmax[i] : v[i];
            second = vmax[i];
        }
        p[i] -= step_size * m[i] / (SQRT(second) / sqrt_bc2 + eps);
    }
}

TF_CLONES static void NAME(rmsprop_run)(T *p, const T *g, T *sq, T *gavg, T *buf, long n, T lr, T alpha, T eps,
                                        T wd, T momentum) {
    for (long i = 0; i < n; i++) {
        T grad = g[i] + wd * p[i];
        sq[i] = alpha * sq[i] + (1 - alpha) * grad * grad;
        T avg;
        if (gavg) {
            gavg[i] = alpha * gavg[i] + (1 - alpha) * grad;
            avg = SQRT(sq[i] - gavg[i] * gavg[i]) + eps;
        } else {
            avg = SQRT(sq[i]) + eps;
        }
        if (buf) {
            buf[i] = momentum * buf[i] + grad / avg;
            p[i] -= lr * buf[i];
        } else {
            p[i] -= lr * grad / avg;
        }
    }
}

TF_CLONES static void NAME(adagrad_run)(T *p, const T *g, T *sum, long n, T clr, T eps, T wd) {
    for (long i = 0; i < n; i++) {
        T grad = g[i] + wd * p[i];
        sum[i] += grad * grad;
        p[i] -= clr * grad / (SQRT(sum[i]) + eps);
    }
}

void NAME(tf_sgd)(T *p, const T *g, T *buf, long n, double lr, double momentum, double dampening, double wd,
                  int nesterov, int first_step) {
    TF_PARALLEL_CHUNKS(n, NAME(sgd_run)(p + start, g + start, buf ? buf + start : NULL, stop - start, (T)lr,
                                        (T)momentum, (T)dampening, (T)wd, nesterov, first_step));
}

void NAME(tf_adam)(T *p, const T *g, T *m, T *v, T *vmax, long n, double lr, double beta1, double beta2,
                   double eps, double wd, int decoupled, long step) {
    double bc1 = 1 - pow(beta1, (double)step), bc2 = 1 - pow(beta2, (double)step);
    TF_PARALLEL_CHUNKS(n, NAME(adam_run)(p + start, g + start, m + start, v + start, vmax ? vmax + start : NULL,
                                         stop - start, (T)lr, (T)beta1, (T)beta2, (T)eps, (T)wd, decoupled,
                                         (T)(lr / bc1), (T)sqrt(bc2)));
}

void NAME(tf_rmsprop)(T *p, const T *g, T *sq, T *gavg, T *buf, long n, double lr, double alpha, double eps,
                      double wd, double momentum) {
    TF_PARALLEL_CHUNKS(n, NAME(rmsprop_run)(p + start, g + start, sq + start, gavg ? gavg + start : NULL,
                                            buf ? buf + start : NULL, stop - start, (T)lr, (T)alpha, (T)eps, (T)wd,
                                            (T)momentum));
}

void NAME(tf_adagrad)(T *p, const T *g, T *sum, long n, double clr, double eps, double wd) {
    TF_PARALLEL_CHUNKS(n, NAME(adagrad_run)(p + start, g + start, sum + start, stop - start, (T)clr, (T)eps, (T)wd));
}
