"""C kernels for the optimizers' fused update ops: one pass, in place, over parameter and slots.

The numpy `update` of each op (tinyflow/optim) stays the reference; these call
ckernels/src/optim.c with the same hyper-parameters and fall back to it for
anything unusual (mixed dtypes, a gradient of another shape).
"""
import numpy as np

from . import native
from .c_backend import contiguous

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _owned_buffers(variables):
    """Each Variable's value as a contiguous, writeable array it alone owns (copied once if not)."""
    arrays = []
    for var in variables:
        value = var.value
        if not (value.flags.c_contiguous and value.flags.writeable):
            var.value = value  # the setter stores a private contiguous copy
        arrays.append(var.value)
    return arrays


def _ptr(array, suffix):
    if array is None:
        return native.ffi.NULL
    return native.ffi.from_buffer("float[]" if suffix == "f32" else "double[]", array)


def _next_step(op):
    """Increment the op's step slot and return the new count."""
    step_var = op.variables[1 + op.slot_names.index("step")]
    step_var.value = np.asarray(int(step_var.value) + 1)
    return int(step_var.value)


def fused_update(kernel):
    """Wrap `kernel(op, suffix, grad, arrays, lr)` with the checks, falling back to the numpy update.

    The C path needs a float parameter and a gradient of its shape; `arrays`
    maps "param" and each slot name to its contiguous, privately owned buffer.
    """
    def run(op, param, grad, lr, *slots):
        param_value = op.variables[0].value
        suffix = _SUFFIX.get(param_value.dtype)
        grad = np.asarray(grad)
        if suffix is None or grad.shape != param_value.shape or param_value.size == 0:
            return op.compute(param, grad, lr, *slots)
        arrays = dict(zip(("param",) + op.slot_names, _owned_buffers(op.variables)))
        kernel(op, suffix, contiguous(grad, param_value.dtype), arrays, float(lr))
        return None
    run.__doc__ = kernel.__doc__
    return run


@fused_update
def sgd_kernel(op, suffix, grad, arrays, lr):
    """SGD with momentum/Nesterov/weight decay in one pass."""
    h = op.hyper
    first_step = int(_next_step(op) == 1) if h["momentum"] else 0
    getattr(native.lib, f"tf_sgd_{suffix}")(
        _ptr(arrays["param"], suffix), _ptr(grad, suffix), _ptr(arrays.get("momentum_buffer"), suffix),
        grad.size, lr, h["momentum"], h["dampening"], h["weight_decay"], int(h["nesterov"]), first_step)


@fused_update
def adam_kernel(op, suffix, grad, arrays, lr):
    """Adam / AdamW (optionally AMSGrad) in one pass."""
    h = op.hyper
    getattr(native.lib, f"tf_adam_{suffix}")(
        _ptr(arrays["param"], suffix), _ptr(grad, suffix), _ptr(arrays["exp_avg"], suffix),
        _ptr(arrays["exp_avg_sq"], suffix), _ptr(arrays.get("max_exp_avg_sq"), suffix), grad.size, lr,
        h["betas"][0], h["betas"][1], h["eps"], h["weight_decay"], int(h["decoupled"]), _next_step(op))


@fused_update
def rmsprop_kernel(op, suffix, grad, arrays, lr):
    """RMSProp (optionally centered, with momentum) in one pass."""
    h = op.hyper
    getattr(native.lib, f"tf_rmsprop_{suffix}")(
        _ptr(arrays["param"], suffix), _ptr(grad, suffix), _ptr(arrays["square_avg"], suffix),
        _ptr(arrays.get("grad_avg"), suffix), _ptr(arrays.get("momentum_buffer"), suffix), grad.size, lr,
        h["alpha"], h["eps"], h["weight_decay"], h["momentum"])


@fused_update
def adagrad_kernel(op, suffix, grad, arrays, lr):
    """AdaGrad with learning-rate decay in one pass."""
    h = op.hyper
    clr = lr / (1 + (_next_step(op) - 1) * h["lr_decay"])
    getattr(native.lib, f"tf_adagrad_{suffix}")(
        _ptr(arrays["param"], suffix), _ptr(grad, suffix), _ptr(arrays["state_sum"], suffix), grad.size, clr,
        h["eps"], h["weight_decay"])


OPTIMIZER_KERNELS = {"ApplySGD": sgd_kernel, "ApplyAdam": adam_kernel, "ApplyRMSProp": rmsprop_kernel,
                     "ApplyAdaGrad": adagrad_kernel}
