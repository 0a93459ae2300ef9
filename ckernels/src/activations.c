/* Activations and their backward kernels; every array holds n contiguous elements.
 *
 * tf_sigmoid(x, y, n)               y = 1 / (1 + e^-x)
 * tf_sigmoid_back(y, g, out, n)     out = g y (1 - y), y the sigmoid's output
 * tf_tanh(x, y, n)                  y = tanh x
 * tf_tanh_back(y, g, out, n)        out = g (1 - y²), y the tanh's output
 * tf_relu(x, y, n)                  y = max(x, 0)
 * tf_relu_back(y, g, out, n)        out = g where y > 0, else 0
 * tf_leaky_relu(x, y, n, alpha)     y = x if x > 0 else alpha x
 * tf_leaky_relu_back(x, g, out, n, alpha)   out = g if x > 0 else alpha g
 * tf_softplus(x, y, n)              y = ln(1 + e^x), without overflow
 * Each exists as _f32 and _f64.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define EXP tf_expf
#define LOG1P tf_log1pf
#define SIGMOID tf_sigmoidf
#define SIGMOID_COMMON tf_sigmoidf_common
#define SIGMOID_IS_COMMON tf_sigmoid_is_common
#define TANH tf_tanhf
#include "activations_generic.h"
#undef T
#undef NAME
#undef EXP
#undef LOG1P
#undef TANH
#undef SIGMOID
#undef SIGMOID_COMMON
#undef SIGMOID_IS_COMMON

#define T double
#define NAME(x) x##_f64
#define EXP tf_exp
#define LOG1P log1p
#define SIGMOID tf_sigmoid
#define SIGMOID_COMMON tf_sigmoid
#define SIGMOID_IS_COMMON(x) 1
#define TANH tanh
#include "activations_generic.h"
#undef T
#undef NAME
#undef EXP
#undef LOG1P
#undef TANH
#undef SIGMOID
#undef SIGMOID_COMMON
#undef SIGMOID_IS_COMMON
