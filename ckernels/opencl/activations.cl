/* Activations and their backward kernels, one work-item per element (mirrors ckernels/src/activations.c). */
__kernel void sigmoid(__global const T *x, __global T *y) {
    long i = get_global_id(0);
    T e = exp(-fabs(x[i]));
    y[i] = x[i] >= 0 ? 1 / (1 + e) : e / (1 + e);
}
__kernel void sigmoid_back(__global const T *y, __global const T *g, __global T *out) {
    long i = get_global_id(0);
    out[i] = g[i] * y[i] * (1 - y[i]);
}
__kernel void tanh_(__global const T *x, __global T *y) {
    long i = get_global_id(0);
    y[i] = tanh(x[i]);
}
__kernel void tanh_back(__global const T *y, __global const T *g, __global T *out) {
    long i = get_global_id(0);
    out[i] = g[i] * (1 - y[i] * y[i]);
}
__kernel void relu(__global const T *x, __global T *y) {
    long i = get_global_id(0);
    y[i] = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0);
}
__kernel void relu_back(__global const T *y, __global const T *g, __global T *out) {
    long i = get_global_id(0);
    out[i] = y[i] > 0 ? g[i] : 0;
}
__kernel void leaky_relu(__global const T *x, __global T *y, T alpha) {
    long i = get_global_id(0);
    y[i] = x[i] > 0 ? x[i] : alpha * x[i];
}
__kernel void leaky_relu_back(__global const T *x, __global const T *g, __global T *out, T alpha) {
    long i = get_global_id(0);
    out[i] = x[i] > 0 ? g[i] : alpha * g[i];
}
__kernel void softplus(__global const T *x, __global T *y) {
    long i = get_global_id(0);
    y[i] = fmax(x[i], (T)0) + log1p(exp(-fabs(x[i])));
}
