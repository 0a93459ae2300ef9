/* Assignment 5: leaky ReLU in C, forward and backward, for float32 arrays of n elements.
 *
 *   forward:  y[i]  = x[i] > 0 ? x[i] : alpha * x[i]
 *   backward: dx[i] = x[i] > 0 ? g[i] : alpha * g[i]      (g: the gradient of the output)
 *
 * The Python wrapper (assignment5_c_kernel.py) checks dtypes, contiguity and sizes before
 * calling these, so they may assume n valid elements in each buffer.
 */

void leaky_relu_f32(const float *x, float *y, long n, float alpha) {
    // BEGIN SOLUTION
    // HINT: one loop for (long i = 0; i < n; i++) writing y[i] from x[i]; every y[i] must be written
    for (long i = 0; i < n; i++) {
        y[i] = x[i] > 0 ? x[i] : alpha * x[i];
    }
    // END SOLUTION
}

void leaky_relu_back_f32(const float *x, const float *g, float *dx, long n, float alpha) {
    // BEGIN SOLUTION
    // HINT: the same loop; the test on x[i] > 0 picks g[i] or alpha * g[i]
    for (long i = 0; i < n; i++) {
        dx[i] = x[i] > 0 ? g[i] : alpha * g[i];
    }
    // END SOLUTION
}
