/* Fused optimizer updates: each reads and writes parameter, gradient and slots once.
 * Formulas, names and defaults are torch.optim's (see the modules of tinyflow/optim for the numpy
 * versions these replace). p and the slots are updated in place; n elements each;
 * an optional slot (NULL) is skipped.
 *
 * tf_sgd(p, g, buf, n, lr, momentum, dampening, wd, nesterov, first_step)   buf NULL without momentum
 * tf_adam(p, g, m, v, vmax, n, lr, beta1, beta2, eps, wd, decoupled, step)
 *     step is the new step count (>= 1); decoupled=1 is AdamW; vmax non-NULL for AMSGrad
 * tf_rmsprop(p, g, sq, gavg, buf, n, lr, alpha, eps, wd, momentum)   gavg for centered, buf for momentum
 * tf_adagrad(p, g, sum, n, clr, eps, wd)    clr = lr / (1 + (step - 1) lr_decay)
 * tf_update_multi(kind, count, p[], g[], s1[], s2[], s3[], n[], steps[], h, flag)   one of them on many tensors
 * Each exists as _f32 and _f64.
 */
#include "common.h"
#include "tinyflow_kernels.h"

#define T float
#define NAME(x) x##_f32
#define SQRT sqrtf
#include "optim_generic.h"
#undef T
#undef NAME
#undef SQRT

#define T double
#define NAME(x) x##_f64
#define SQRT sqrt
#include "optim_generic.h"
#undef T
#undef NAME
#undef SQRT
