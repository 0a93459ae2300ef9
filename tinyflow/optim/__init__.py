"""Optimizers with the formulas, hyper-parameter names and defaults of torch.optim, each an Optimizer naming its slots
and an ApplyUpdate op whose `update` is the formula (the C and OpenCL backends run fused kernels of the op types)."""
import numpy as np

from ..ops.registry import not_differentiable
from .optimizer import Optimizer
from .updates import ApplyUpdate  # its module registers the optimiser's multi_tensor pass


class ApplySGD(ApplyUpdate):
    """g ← g + wd·p;  b ← g (first step) or μ·b + (1-τ)·g;  g ← g + μ·b (Nesterov) or b;  p ← p - lr·g."""

    def update(self, param, grad, lr, step=None, momentum_buffer=None):
        momentum, dampening = self.hyper["momentum"], self.hyper["dampening"]
        if not momentum:
            return (param - lr * grad,)
        momentum_buffer = grad if step == 0 else momentum * momentum_buffer + (1 - dampening) * grad
        grad = grad + momentum * momentum_buffer if self.hyper["nesterov"] else momentum_buffer
        return param - lr * grad, step + 1, momentum_buffer


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay, as torch.optim.SGD."""

    update_op = ApplySGD

    def __init__(self, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
        super().__init__(lr, momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=weight_decay)
        self.slot_names = ("step", "momentum_buffer") if momentum else ()


class ApplyAdam(ApplyUpdate):
    """t ← t+1;  m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;  p ← p - lr/(1-β1ᵗ) · m / (√v/√(1-β2ᵗ) + ε).
    Adam adds wd·p to g; AdamW instead shrinks p by (1 - lr·wd) first; AMSGrad uses the running max of v."""

    def update(self, param, grad, lr, step, exp_avg, exp_avg_sq, max_exp_avg_sq=None):
        (beta1, beta2), eps = self.hyper["betas"], self.hyper["eps"]
        step = step + 1
        if self.hyper["decoupled"]:  # (the L2 form, decoupled=False, is ApplyUpdate's)
            param = param * (1 - lr * self.hyper["weight_decay"])
        exp_avg = beta1 * exp_avg + (1 - beta1) * grad
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
        bias_correction1, bias_correction2 = 1 - beta1 ** int(step), 1 - beta2 ** int(step)
        if max_exp_avg_sq is not None:
            max_exp_avg_sq = np.maximum(max_exp_avg_sq, exp_avg_sq)
        denom = np.sqrt(exp_avg_sq if max_exp_avg_sq is None else max_exp_avg_sq) / np.sqrt(bias_correction2) + eps
        param = param - (lr / bias_correction1) * exp_avg / denom
        return (param, step, exp_avg, exp_avg_sq) + (() if max_exp_avg_sq is None else (max_exp_avg_sq,))


class Adam(Optimizer):
    """Adam (with the AMSGrad option) with the hyper-parameters and defaults of torch.optim.Adam."""

    update_op = ApplyAdam

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        super().__init__(lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, decoupled=False)
        self.hyper["betas"] = tuple(float(b) for b in betas)
        self.slot_names = ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())


class AdamW(Adam):
    """AdamW (decoupled weight decay) with the defaults of torch.optim.AdamW."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad)
        self.hyper["decoupled"] = True


class ApplyRMSProp(ApplyUpdate):
    """s ← α·s + (1-α)·g²;  d ← √(s - ḡ²) + ε (centered, ḡ ← α·ḡ + (1-α)·g) or √s + ε;
    b ← μ·b + g/d and p ← p - lr·b (momentum) or p ← p - lr·g/d."""

    def update(self, param, grad, lr, square_avg, grad_avg=None, momentum_buffer=None):
        alpha, eps = self.hyper["alpha"], self.hyper["eps"]
        square_avg = alpha * square_avg + (1 - alpha) * grad * grad
        if grad_avg is not None:
            grad_avg = alpha * grad_avg + (1 - alpha) * grad
        avg = np.sqrt(square_avg if grad_avg is None else square_avg - grad_avg * grad_avg) + eps
        if momentum_buffer is not None:
            momentum_buffer = self.hyper["momentum"] * momentum_buffer + grad / avg
        param = param - lr * (grad / avg if momentum_buffer is None else momentum_buffer)
        return tuple(v for v in (param, square_avg, grad_avg, momentum_buffer) if v is not None)


class RMSProp(Optimizer):
    """RMSProp (with momentum and the centered variant) with the hyper-parameters and defaults of torch.optim."""

    update_op = ApplyRMSProp

    def __init__(self, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
        super().__init__(lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered)
        optional = {"grad_avg": centered, "momentum_buffer": momentum}
        self.slot_names = ("square_avg",) + tuple(slot for slot, wanted in optional.items() if wanted)


class ApplyAdaGrad(ApplyUpdate):
    """t ← t+1;  lr_t = lr / (1 + (t-1)·decay);  s ← s + g²;  p ← p - lr_t · g / (√s + ε)."""

    def update(self, param, grad, lr, step, state_sum):
        step = step + 1
        clr = lr / (1 + (int(step) - 1) * self.hyper["lr_decay"])
        state_sum = state_sum + grad * grad
        return param - clr * grad / (np.sqrt(state_sum) + self.hyper["eps"]), step, state_sum


class AdaGrad(Optimizer):
    """AdaGrad (learning-rate decay, initial accumulator value) with the defaults of torch.optim.Adagrad."""

    update_op = ApplyAdaGrad
    slot_names = ("step", "state_sum")

    def __init__(self, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
        super().__init__(lr, lr_decay=lr_decay, weight_decay=weight_decay,
                         initial_accumulator_value=initial_accumulator_value, eps=eps)

    def initial_slot_value(self, var, slot):
        if slot == "state_sum":  # torch's initial_accumulator_value
            return np.full_like(var.value, self.hyper["initial_accumulator_value"])
        return super().initial_slot_value(var, slot)


not_differentiable(ApplySGD, ApplyAdam, ApplyRMSProp, ApplyAdaGrad)

RMSprop, Adagrad = RMSProp, AdaGrad  # torch's spellings, for code ported from PyTorch

__all__ = ["Optimizer", "ApplyUpdate", "SGD", "Adam", "AdamW", "RMSProp", "AdaGrad", "RMSprop", "Adagrad"]
