/* tinyflow's C kernel library: every function the Python side may call.
 *
 * This header is the single source of truth: ckernels/build_ckernels.py reads it
 * verbatim into cffi's cdef, so it holds plain declarations only (no macros, no
 * include guards). Each function is documented at the top of the C file named in
 * its group's comment. Sizes are `long`; arrays are contiguous and never alias
 * unless a comment says the update is in place. Python checks dtypes, shapes and
 * contiguity before every call (tinyflow/backends/c_backend.py).
 *
 * The enums below are the one declaration of the codes shared by C, OpenCL and Python:
 * cffi exposes them on `lib`, the OpenCL programs get them as -D build options, and
 * tinyflow/backends/kernel_codes.py parses them from this file (so Python knows them even
 * when the library is not built). Values are explicit, one `NAME = value` per line.
 */

/* how an input of an elementwise kernel is read against its rows x cols output (ckernels/elementwise_codegen.py) */
enum tf_layout_kind {
    TF_FULL = 0,
    TF_ROW = 1,
    TF_COLUMN = 2,
    TF_SCALAR = 3
};

/* how b (or a) broadcasts against the other operand viewed as rows x cols (OpenCL's broadcast_scale) */
enum tf_broadcast_pattern {
    TF_SAME_SHAPE = 0,
    TF_B_SCALAR = 1,
    TF_A_SCALAR = 2,
    TF_B_ROW = 3,
    TF_A_ROW = 4,
    TF_B_COLUMN = 5,
    TF_A_COLUMN = 6
};

/* reductions over the middle axis of (outer, n, inner) */
enum tf_reduce_op {
    TF_REDUCE_SUM = 0,
    TF_REDUCE_MEAN = 1,
    TF_REDUCE_MAX = 2
};

/* the optimizers of tf_update_multi (one step over many tensors) */
enum tf_update_kind {
    TF_UPDATE_SGD = 0,
    TF_UPDATE_ADAM = 1,
    TF_UPDATE_RMSPROP = 2,
    TF_UPDATE_ADAGRAD = 3
};

/* the cells of tf_recurrence (recurrent.c), torch's mode names */
enum tf_recurrent_cell {
    TF_LSTM = 0,
    TF_GRU = 1,
    TF_RNN_TANH = 2,
    TF_RNN_RELU = 3,
    TF_GRU_RESET_FIRST = 4
};

/* tuning constants shared by the C kernels and Python */
enum tf_limits {
    TF_PARALLEL_MIN = 262144,
    TF_MAX_THREADS = 1024,
    TF_STREAMING_BYTES = 8388608, /* optimizer updates over arrays this large run their memory-streaming build */
    TF_GEMM_COST_DIVISOR = 16 /* a product's parallel cost: its multiply-adds over this (gemm.c) */
};

/* runtime.c: what the library was built with, and a STREAM triad for benchmarks */
const char *tf_build_flags(void);
void tf_triad_f32(float *a, const float *b, const float *c, float s, long n);

/* threads.c: tinyflow's own thread pool, which runs every parallel loop of the kernels (and of the
 * generated fused kernels, which get tf_parallel_for's address); threads default to the CPUs this
 * process may use */
typedef void (*tf_chunk_fn)(void *args, long start, long stop);
void tf_parallel_for(long n, long cost, tf_chunk_fn chunk, void *args);
int tf_max_threads(void);
int tf_threads_for(long cost);
void tf_set_num_threads(int n);
int tf_pool_workers(void);
long tf_parallel_trace(long n, long cost, long *log);

/* the elementwise ops of tinyflow/ops/elementwise.py, generated at build time (ckernels/elementwise_codegen.py):
 * out = op number `op` of tf_elementwise_ops() ("Add:fingerprint,...") over rows x cols values, input i read as
 * the tf_layout_kind in bits 2i, 2i+1 of `kinds`, attrs the op's attributes in its row's order; -1 for no such op */
const char *tf_elementwise_ops(void);
int tf_elementwise_f32(int op, const float *x0, const float *x1, const float *x2, const float *x3, float *out,
                       long rows, long cols, int kinds, const double *attrs);
int tf_elementwise_f64(int op, const double *x0, const double *x1, const double *x2, const double *x3, double *out,
                       long rows, long cols, int kinds, const double *attrs);

/* indexing.c: the gradient of gather: rows of g added into zeros at their indices */
void tf_scatter_add_f32(const int64_t *index, long n, const float *g, float *out, long outer, long dim, long inner);
void tf_scatter_add_f64(const int64_t *index, long n, const double *g, double *out, long outer, long dim,
                        long inner);

/* reductions.c: sum, mean, max over the middle axis of (outer, n, inner) */
void tf_reduce_f32(int op, const float *x, float *out, long outer, long n, long inner);
void tf_reduce_f64(int op, const double *x, double *out, long outer, long n, long inner);

/* softmax.c: row-wise softmax, log-softmax, their backward kernels, fused softmax cross-entropy, attention */
void tf_softmax_f32(const float *x, float *y, long rows, long cols);
void tf_softmax_f64(const double *x, double *y, long rows, long cols);
void tf_log_softmax_f32(const float *x, float *y, long rows, long cols);
void tf_log_softmax_f64(const double *x, double *y, long rows, long cols);
void tf_softmax_back_f32(const float *y, const float *g, float *out, long rows, long cols);
void tf_softmax_back_f64(const double *y, const double *g, double *out, long rows, long cols);
void tf_log_softmax_back_f32(const float *y, const float *g, float *out, long rows, long cols);
void tf_log_softmax_back_f64(const double *y, const double *g, double *out, long rows, long cols);
long tf_softmax_xent_f32(const float *logits, const int64_t *labels, long rows, long cols, float *scratch,
                         double *loss);
long tf_softmax_xent_f64(const double *logits, const int64_t *labels, long rows, long cols, double *scratch,
                         double *loss);
void tf_softmax_xent_back_f32(const float *logits, const int64_t *labels, long rows, long cols, double grad,
                              float *out);
void tf_softmax_xent_back_f64(const double *logits, const int64_t *labels, long rows, long cols, double grad,
                              double *out);
int tf_attention_f32(const float *q, const float *k, const float *v, const float *mask, const long *mask_offsets,
                     long mask_row, long mask_col, float *out, long batch, long l, long s, long e, long ev, float scale);
int tf_attention_f64(const double *q, const double *k, const double *v, const double *mask, const long *mask_offsets,
                     long mask_row, long mask_col, double *out, long batch, long l, long s, long e, long ev,
                     double scale);

/* conv.c: im2col / col2im, depthwise convolution and max pooling, NCHW, with strides, leading pads and dilations */
void tf_im2col_f32(const float *x, float *cols, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                   long ph, long pw, long dh, long dw, long ho, long wo);
void tf_im2col_f64(const double *x, double *cols, long n, long c, long h, long w, long kh, long kw, long sh,
                   long sw, long ph, long pw, long dh, long dw, long ho, long wo);
void tf_col2im_f32(const float *cols, float *x, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                   long ph, long pw, long dh, long dw, long ho, long wo);
void tf_col2im_f64(const double *cols, double *x, long n, long c, long h, long w, long kh, long kw, long sh,
                   long sw, long ph, long pw, long dh, long dw, long ho, long wo);
int tf_depthwise_conv_f32(const float *x, const float *filters, float *out, long multiplier, long n, long c, long h,
                          long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,
                          long wo, const float *bias, const float *residual, float low, float high);
int tf_depthwise_conv_f64(const double *x, const double *filters, double *out, long multiplier, long n, long c, long h,
                          long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,
                          long wo, const double *bias, const double *residual, double low, double high);
void tf_depthwise_back_input_f32(const float *g, const float *filters, float *dx, long multiplier, long n, long c,
                                long h, long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw,
                                long ho, long wo);
void tf_depthwise_back_input_f64(const double *g, const double *filters, double *dx, long multiplier, long n, long c,
                                long h, long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw,
                                long ho, long wo);
int tf_depthwise_back_filter_f32(const float *x, const float *g, float *grad, long multiplier, long n, long c, long h,
                                 long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw,
                                 long ho, long wo);
int tf_depthwise_back_filter_f64(const double *x, const double *g, double *grad, long multiplier, long n, long c,
                                 long h, long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw,
                                 long ho, long wo);
void tf_conv_epilogue_f32(const float *src, float *dst, long n, long o, long p, const float *bias,
                          const float *residual, float low, float high);
void tf_conv_epilogue_f64(const double *src, double *dst, long n, long o, long p, const double *bias,
                          const double *residual, double low, double high);
void tf_maxpool_f32(const float *x, float *out, long n, long c, long h, long w, long kh, long kw, long sh, long sw,
                    long ph, long pw, long dh, long dw, long ho, long wo);
void tf_maxpool_f64(const double *x, double *out, long n, long c, long h, long w, long kh, long kw, long sh,
                    long sw, long ph, long pw, long dh, long dw, long ho, long wo);
void tf_maxpool_back_f32(const float *x, const float *g, float *dx, long n, long c, long h, long w, long kh,
                         long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo);
void tf_maxpool_back_f64(const double *x, const double *g, double *dx, long n, long c, long h, long w, long kh,
                         long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo);
void tf_maxpool_gather_f32(const float *x, const float *src, float *out, long n, long c, long h, long w, long kh,
                           long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo);
void tf_maxpool_gather_f64(const double *x, const double *src, double *out, long n, long c, long h, long w,
                           long kh, long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo);

/* normalization.c: layer normalization of rows, and its backward kernel */
void tf_layer_norm_f32(const float *x, float *y, long rows, long cols, double eps);
void tf_layer_norm_f64(const double *x, double *y, long rows, long cols, double eps);
void tf_layer_norm_back_f32(const float *x, const float *g, float *out, long rows, long cols, double eps);
void tf_layer_norm_back_f64(const double *x, const double *g, double *out, long rows, long cols, double eps);

/* recurrent.c: a recurrent layer's loop over time (grad NULL), or its backward through time */
int tf_recurrence_f32(int cell, const int *order, const float *x, const float *w, const float *bias,
                      const float *state, const float *grad, float *out, long steps, long n, long h, int reverse);
int tf_recurrence_f64(int cell, const int *order, const double *x, const double *w, const double *bias,
                      const double *state, const double *grad, double *out, long steps, long n, long h, int reverse);

/* optim.c: fused optimizer updates, in place */
void tf_sgd_f32(float *p, const float *g, float *buf, long n, double lr, double momentum, double dampening,
                double wd, int nesterov, int first_step);
void tf_sgd_f64(double *p, const double *g, double *buf, long n, double lr, double momentum, double dampening,
                double wd, int nesterov, int first_step);
void tf_adam_f32(float *p, const float *g, float *m, float *v, float *vmax, long n, double lr, double beta1,
                 double beta2, double eps, double wd, int decoupled, long step);
void tf_adam_f64(double *p, const double *g, double *m, double *v, double *vmax, long n, double lr, double beta1,
                 double beta2, double eps, double wd, int decoupled, long step);
void tf_rmsprop_f32(float *p, const float *g, float *sq, float *gavg, float *buf, long n, double lr, double alpha,
                    double eps, double wd, double momentum);
void tf_rmsprop_f64(double *p, const double *g, double *sq, double *gavg, double *buf, long n, double lr,
                    double alpha, double eps, double wd, double momentum);
void tf_adagrad_f32(float *p, const float *g, float *sum, long n, double clr, double eps, double wd);
void tf_adagrad_f64(double *p, const double *g, double *sum, long n, double clr, double eps, double wd);

void tf_update_multi_f32(int kind, long count, float *const *p, const float *const *g, float *const *s1,
                         float *const *s2, float *const *s3, const long *n, int64_t *const *steps, const double *h,
                         int flag);
void tf_update_multi_f64(int kind, long count, double *const *p, const double *const *g, double *const *s1,
                         double *const *s2, double *const *s3, const long *n, int64_t *const *steps,
                         const double *h, int flag);

/* gemm.c: every matrix product (a batch of them, operands transposed or not), tiles shared out on the pool */
int tf_gemm_f32(long batch, long m, long n, long k, const float *a, long a_step, long lda, int a_t, const float *b,
                long b_step, long ldb, int b_t, float *c, long c_step, int accumulate);
int tf_gemm_f64(long batch, long m, long n, long k, const double *a, long a_step, long lda, int a_t,
                const double *b, long b_step, long ldb, int b_t, double *c, long c_step, int accumulate);
void tf_use_blas(void *sgemm, void *dgemm, void *sgemv, void *dgemv, void *get_threads, void *set_threads,
                 int ilp64);
void tf_hold_blas(int hold);
