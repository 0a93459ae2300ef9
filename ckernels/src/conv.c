/* Convolution helpers and max pooling for NCHW tensors (all arrays contiguous); 1-D data is one row of 2-D.
 *
 * tf_im2col(x, cols, n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo)
 *     cols: (c*kh*kw) x (n*ho*wo), tap-major; row (ch, di, dj) holds that tap of every output pixel, image
 *     after image (column (b, i, j)), zeros where it covers padding. A convolution is then one matrix
 *     product, the filters (o, c*kh*kw) times cols, whose rows are the output channels' planes.
 * tf_col2im(cols, x, ...)  the adjoint: x (n, c, h, w) = sum of every window entry back at its pixel
 * tf_depthwise_conv(x, filters, out, multiplier, ..., bias, residual, low, high)   (in depthwise_generic.h)
 *     groups == c: out (n, c * multiplier, ho, wo), directly; each output row then gets + bias[channel] and + the
 *     residual's row (each where not NULL), clipped to [low, high]; nonzero when it could not allocate its scratch
 * tf_depthwise_back_input(g, filters, dx, multiplier, ...)   its input gradient, dx (n, c, h, w), directly
 * tf_depthwise_back_filter(x, g, grad, multiplier, ...)   its filter gradient, grad (c * multiplier, 1, kh, kw),
 *     directly; nonzero when it could not allocate its scratch
 * tf_conv_epilogue(src, dst, n, o, p, bias, residual, low, high)   dst (n, o, p) = clip(src (o, n, p) + bias[o] +
 *     residual (n, o, p), low, high): a convolution's GEMM output (channel-major rows) to NCHW, with its bias,
 *     residual and activation, in one pass
 * tf_maxpool(x, out, ...)                 out (n, c, ho, wo) = max of each window (padding ignored)
 * tf_maxpool_back(x, g, dx, ...)          dx (x's shape) gets g at each window's first maximum
 * tf_maxpool_gather(x, h, out, ...)       out (pooled shape) = h at each window's first maximum
 * Geometry: n images, c channels, h x w input, kh x kw window taps, stride (sh, sw), leading padding
 * (ph, pw), dilation (dh, dw), output ho x wo. Each exists as _f32 and _f64. Grouped convolutions use one
 * im2col of every channel (a group's rows are one block) and a matrix product per group (in Python).
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define LANE_INT int32_t /* a signed integer of T's size: what comparing two T vectors gives */
#define NAME(x) x##_f32
#include "conv_generic.h"
#include "depthwise_generic.h"
#undef T
#undef LANE_INT
#undef NAME

#define T double
#define LANE_INT int64_t
#define NAME(x) x##_f64
#include "conv_generic.h"
#include "depthwise_generic.h"
#undef T
#undef LANE_INT
#undef NAME
