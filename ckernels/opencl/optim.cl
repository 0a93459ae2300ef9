/* Fused optimizer updates, in place, one work-item per parameter (mirrors ckernels/src/optim.c's tf_update_multi).
 * kind: enum tf_update_kind; h: lr, then the kind's hyper-parameters in tf_update_multi's order (Adam: beta1,
 * beta2, eps, wd; SGD: momentum, dampening, wd; RMSProp: alpha, eps, wd, momentum; AdaGrad: lr_decay, eps, wd);
 * flag: Adam's decoupled weight decay or SGD's Nesterov; step: the new step count (0 without a step slot).
 * Slot k (s1, s2, s3) is there when bit k-1 of `present` is set, else a one-element stand-in buffer. */
__kernel void update(int kind, __global T *p, __global const T *g, __global T *s1, __global T *s2, __global T *s3,
                     int present, long step, T h0, T h1, T h2, T h3, T h4, int flag) {
    long i = get_global_id(0);
    T param = p[i], grad = g[i];
    if (kind == TF_UPDATE_SGD) {
        if (h3 != 0) grad += h3 * param;
        if (present & 1) {
            T b = (h1 != 0 && step == 1) ? grad : h1 * s1[i] + (1 - h2) * grad;
            s1[i] = b;
            grad = flag ? grad + h1 * b : b;
        }
        p[i] = param - h0 * grad;
    } else if (kind == TF_UPDATE_ADAM) {
        if (flag) param *= 1 - h0 * h4;
        else if (h4 != 0) grad += h4 * param;
        T m = h1 * s1[i] + (1 - h1) * grad, v = h2 * s2[i] + (1 - h2) * grad * grad;
        s1[i] = m;
        s2[i] = v;
        if (present & 4) { v = fmax(s3[i], v); s3[i] = v; }
        T step_size = h0 / (1 - pown(h1, (int)step)), sqrt_bc2 = sqrt(1 - pown(h2, (int)step));
        p[i] = param - step_size * m / (sqrt(v) / sqrt_bc2 + h3);
    } else if (kind == TF_UPDATE_RMSPROP) {
        if (h3 != 0) grad += h3 * param;
        T s = h1 * s1[i] + (1 - h1) * grad * grad, avg;
        s1[i] = s;
        if (present & 2) {
            T ga = h1 * s2[i] + (1 - h1) * grad;
            s2[i] = ga;
            avg = sqrt(s - ga * ga) + h2;
        } else {
            avg = sqrt(s) + h2;
        }
        if (present & 4) { T b = h4 * s3[i] + grad / avg; s3[i] = b; p[i] = param - h0 * b; }
        else p[i] = param - h0 * grad / avg;
    } else if (kind == TF_UPDATE_ADAGRAD) {
        if (h3 != 0) grad += h3 * param;
        T s = s1[i] + grad * grad;
        s1[i] = s;
        p[i] = param - h0 / (1 + (step - 1) * h1) * grad / (sqrt(s) + h2);
    }
}
