"""OpenCL kernels for the optimizers' fused update ops, in place on the Variables' device copies.

The step counters stay on the host (they are scalars); parameters and slots stay on the
device, where the next run reads them without a transfer.
"""
import numpy as np

from ..nodes import Constant
from .c_optim import _next_step


def _prepare(backend, op, grad):
    """(device arrays by slot name, device gradient) when the update can run on the device, else None."""
    var = op.variables[0]
    if var.dtype not in backend._device_dtypes() or grad.shape != var.shape or grad.dtype != var.dtype \
            or 0 in var.shape:
        return None
    arrays = {"param": backend.variable(var)}
    for name, slot in zip(op.slot_names, op.variables[1:]):
        if name != "step":
            arrays[name] = backend.variable(slot)
    return arrays, backend.device(grad)


def _changed_on_device(op):
    """The device copies are now newer than the hosts' `.value`."""
    for var in op.variables:
        if var._mirror is not None and var.dtype != np.int64:
            var._mirror.host_stale = True


def _placeholder_buffer(backend, dtype):
    """A one-element buffer standing in for an optional slot the kernel will not touch."""
    return backend.runtime.empty((1,), dtype).data


def _learning_rate(backend, op, lr):
    """The learning rate as a float, without a download when it is a Constant (the usual case)."""
    node = op.inputs[2]
    return float(node.value) if isinstance(node, Constant) else float(np.asarray(backend.to_host(lr)).reshape(()))


def _run(backend, op, name, grad, *args):
    backend._launch(name, grad.dtype, grad.size, *args)
    backend.report.device_ops[op.op_type] += 1
    _changed_on_device(op)


def on_device(kernel):
    """Wrap `kernel(backend, op, arrays, grad, lr, T)` with the checks, falling back to the host update.

    `arrays` maps "param" and each float slot to its device copy; T is the element type.
    """
    def run(backend, op, param, grad, lr, *slots):
        prepared = _prepare(backend, op, grad)
        if prepared is None:
            return backend._on_host(op, (param, grad, lr) + slots)
        arrays, grad = prepared
        kernel(backend, op, arrays, grad, _learning_rate(backend, op, lr), grad.dtype.type)
        return None
    run.__doc__ = kernel.__doc__
    return run


def _optional(backend, array, dtype):
    """An optional slot's buffer and its flag (a stand-in buffer when the slot is absent)."""
    if array is None:
        return _placeholder_buffer(backend, dtype), np.int32(0)
    return array.data, np.int32(1)


@on_device
def sgd_kernel(backend, op, arrays, grad, lr, T):
    """SGD with momentum/Nesterov/weight decay on the device."""
    h = op.hyper
    first_step = int(_next_step(op) == 1) if h["momentum"] else 0
    _run(backend, op, "sgd", grad, arrays["param"].data, grad.data,
         *_optional(backend, arrays.get("momentum_buffer"), grad.dtype), T(lr), T(h["momentum"]),
         T(h["dampening"]), T(h["weight_decay"]), np.int32(h["nesterov"]), np.int32(first_step))


@on_device
def adam_kernel(backend, op, arrays, grad, lr, T):
    """Adam / AdamW (optionally AMSGrad) on the device."""
    h = op.hyper
    (beta1, beta2), step = h["betas"], _next_step(op)
    _run(backend, op, "adam", grad, arrays["param"].data, grad.data, arrays["exp_avg"].data,
         arrays["exp_avg_sq"].data, *_optional(backend, arrays.get("max_exp_avg_sq"), grad.dtype),
         T(lr), T(beta1), T(beta2), T(h["eps"]), T(h["weight_decay"]), np.int32(h["decoupled"]),
         T(lr / (1 - beta1 ** step)), T(np.sqrt(1 - beta2 ** step)))


@on_device
def rmsprop_kernel(backend, op, arrays, grad, lr, T):
    """RMSProp (optionally centered, with momentum) on the device."""
    h = op.hyper
    _run(backend, op, "rmsprop", grad, arrays["param"].data, grad.data, arrays["square_avg"].data,
         *_optional(backend, arrays.get("grad_avg"), grad.dtype),
         *_optional(backend, arrays.get("momentum_buffer"), grad.dtype),
         T(lr), T(h["alpha"]), T(h["eps"]), T(h["weight_decay"]), T(h["momentum"]))


@on_device
def adagrad_kernel(backend, op, arrays, grad, lr, T):
    """AdaGrad with learning-rate decay on the device."""
    h = op.hyper
    clr = lr / (1 + (_next_step(op) - 1) * h["lr_decay"])
    _run(backend, op, "adagrad", grad, arrays["param"].data, grad.data, arrays["state_sum"].data, T(clr),
         T(h["eps"]), T(h["weight_decay"]))


OPTIMIZER_KERNELS = {"ApplySGD": sgd_kernel, "ApplyAdam": adam_kernel, "ApplyRMSProp": rmsprop_kernel,
                     "ApplyAdaGrad": adagrad_kernel}
