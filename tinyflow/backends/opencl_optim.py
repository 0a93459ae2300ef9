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
    return float(node.value) if isinstance(node, Constant) else float(np.asarray(backend.host(lr)).reshape(()))


def _run(backend, op, name, grad, *args):
    backend._launch(name, grad.dtype, grad.size, *args)
    backend.report.device_ops[op.op_type] += 1
    _changed_on_device(op)


def sgd_kernel(backend, op, param, grad, lr, *slots):
    """SGD with momentum/Nesterov/weight decay on the device."""
    prepared = _prepare(backend, op, grad)
    if prepared is None:
        return backend._on_host(op, (param, grad, lr) + slots)
    arrays, grad = prepared
    h, T = op.hyper, grad.dtype.type
    first_step = int(_next_step(op) == 1) if h["momentum"] else 0
    buf = arrays.get("momentum_buffer")
    _run(backend, op, "sgd", grad, arrays["param"].data, grad.data,
         buf.data if buf is not None else _placeholder_buffer(backend, grad.dtype), np.int32(buf is not None),
         T(_learning_rate(backend, op, lr)), T(h["momentum"]), T(h["dampening"]), T(h["weight_decay"]),
         np.int32(h["nesterov"]), np.int32(first_step))


def adam_kernel(backend, op, param, grad, lr, *slots):
    """Adam / AdamW (optionally AMSGrad) on the device."""
    prepared = _prepare(backend, op, grad)
    if prepared is None:
        return backend._on_host(op, (param, grad, lr) + slots)
    arrays, grad = prepared
    h, T = op.hyper, grad.dtype.type
    (beta1, beta2), lr, step = h["betas"], _learning_rate(backend, op, lr), _next_step(op)
    vmax = arrays.get("max_exp_avg_sq")
    _run(backend, op, "adam", grad, arrays["param"].data, grad.data, arrays["exp_avg"].data, arrays["exp_avg_sq"].data,
         vmax.data if vmax is not None else _placeholder_buffer(backend, grad.dtype), np.int32(vmax is not None),
         T(lr), T(beta1), T(beta2), T(h["eps"]), T(h["weight_decay"]), np.int32(h["decoupled"]),
         T(lr / (1 - beta1 ** step)), T(np.sqrt(1 - beta2 ** step)))


def rmsprop_kernel(backend, op, param, grad, lr, *slots):
    """RMSProp (optionally centered, with momentum) on the device."""
    prepared = _prepare(backend, op, grad)
    if prepared is None:
        return backend._on_host(op, (param, grad, lr) + slots)
    arrays, grad = prepared
    h, T = op.hyper, grad.dtype.type
    gavg, buf = arrays.get("grad_avg"), arrays.get("momentum_buffer")
    dummy = _placeholder_buffer(backend, grad.dtype)
    _run(backend, op, "rmsprop", grad, arrays["param"].data, grad.data, arrays["square_avg"].data,
         gavg.data if gavg is not None else dummy, np.int32(gavg is not None),
         buf.data if buf is not None else dummy, np.int32(buf is not None),
         T(_learning_rate(backend, op, lr)), T(h["alpha"]), T(h["eps"]), T(h["weight_decay"]), T(h["momentum"]))


def adagrad_kernel(backend, op, param, grad, lr, *slots):
    """AdaGrad with learning-rate decay on the device."""
    prepared = _prepare(backend, op, grad)
    if prepared is None:
        return backend._on_host(op, (param, grad, lr) + slots)
    arrays, grad = prepared
    h, T = op.hyper, grad.dtype.type
    clr = _learning_rate(backend, op, lr) / (1 + (_next_step(op) - 1) * h["lr_decay"])
    _run(backend, op, "adagrad", grad, arrays["param"].data, grad.data, arrays["state_sum"].data, T(clr), T(h["eps"]),
         T(h["weight_decay"]))


OPTIMIZER_KERNELS = {"ApplySGD": sgd_kernel, "ApplyAdam": adam_kernel, "ApplyRMSProp": rmsprop_kernel,
                     "ApplyAdaGrad": adagrad_kernel}
