/* Fused optimizer updates, in place, one work-item per parameter (mirrors ckernels/src/optim.c).
 * Optional slots are passed as a 1-element dummy buffer with its flag set to 0. */
__kernel void sgd(__global T *p, __global const T *g, __global T *buf, int has_buf, T lr, T momentum,
                  T dampening, T wd, int nesterov, int first_step) {
    long i = get_global_id(0);
    T grad = g[i] + wd * p[i];
    if (has_buf) {
        buf[i] = first_step ? grad : momentum * buf[i] + (1 - dampening) * grad;
        grad = nesterov ? grad + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * grad;
}

__kernel void adam(__global T *p, __global const T *g, __global T *m, __global T *v, __global T *vmax, int amsgrad,
                   T lr, T beta1, T beta2, T eps, T wd, int decoupled, T step_size, T sqrt_bc2) {
    long i = get_global_id(0);
    T grad = g[i];
    if (decoupled) p[i] *= 1 - lr * wd;
    else grad += wd * p[i];
    m[i] = beta1 * m[i] + (1 - beta1) * grad;
    v[i] = beta2 * v[i] + (1 - beta2) * grad * grad;
    T second = v[i];
    if (amsgrad) { vmax[i] = fmax(vmax[i], v[i]); second = vmax[i]; }
    p[i] -= step_size * m[i] / (sqrt(second) / sqrt_bc2 + eps);
}

__kernel void rmsprop(__global T *p, __global const T *g, __global T *sq, __global T *gavg, int centered,
                      __global T *buf, int has_buf, T lr, T alpha, T eps, T wd, T momentum) {
    long i = get_global_id(0);
    T grad = g[i] + wd * p[i];
    sq[i] = alpha * sq[i] + (1 - alpha) * grad * grad;
    T avg;
    if (centered) { gavg[i] = alpha * gavg[i] + (1 - alpha) * grad; avg = sqrt(sq[i] - gavg[i] * gavg[i]) + eps; }
    else avg = sqrt(sq[i]) + eps;
    if (has_buf) { buf[i] = momentum * buf[i] + grad / avg; p[i] -= lr * buf[i]; }
    else p[i] -= lr * grad / avg;
}

__kernel void adagrad(__global T *p, __global const T *g, __global T *sum, T clr, T eps, T wd) {
    long i = get_global_id(0);
    T grad = g[i] + wd * p[i];
    sum[i] += grad * grad;
    p[i] -= clr * grad / (sqrt(sum[i]) + eps);
}
