"""Adam and AdamW (torch.optim.Adam / AdamW), both with the AMSGrad option."""
import numpy as np

from ..ops.registry import not_differentiable
from .checks import check_hyper_parameters
from .optimizer import ApplyUpdate, Optimizer


class ApplyAdam(ApplyUpdate):
    """t ← t+1;  m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;  p ← p - lr/(1-β1ᵗ) · m / (√v/√(1-β2ᵗ) + ε).

    Adam adds wd·p to g; AdamW instead shrinks p by (1 - lr·wd) first
    (decoupled weight decay). AMSGrad uses the running maximum of v.
    """

    def update(self, param, grad, lr, step, exp_avg, exp_avg_sq, max_exp_avg_sq=None):
        (beta1, beta2), eps = self.hyper["betas"], self.hyper["eps"]
        weight_decay, decoupled = self.hyper["weight_decay"], self.hyper["decoupled"]
        step = step + 1
        if weight_decay and decoupled:
            param = param * (1 - lr * weight_decay)
        elif weight_decay:
            grad = grad + weight_decay * param
        exp_avg = beta1 * exp_avg + (1 - beta1) * grad
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** int(step)
        bias_correction2 = 1 - beta2 ** int(step)
        if max_exp_avg_sq is not None:
            max_exp_avg_sq = np.maximum(max_exp_avg_sq, exp_avg_sq)
            denom = np.sqrt(max_exp_avg_sq) / np.sqrt(bias_correction2) + eps
        else:
            denom = np.sqrt(exp_avg_sq) / np.sqrt(bias_correction2) + eps
        param = param - (lr / bias_correction1) * exp_avg / denom
        extra = () if max_exp_avg_sq is None else (max_exp_avg_sq,)
        return (param, step, exp_avg, exp_avg_sq) + extra


class Adam(Optimizer):
    """Adam with the hyper-parameters and defaults of torch.optim.Adam."""

    update_op = ApplyAdam
    decoupled_weight_decay = False

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        check_hyper_parameters(self, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        betas = tuple(float(b) for b in betas)
        super().__init__(lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         decoupled=self.decoupled_weight_decay)
        self.slot_names = ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())


class AdamW(Adam):
    """AdamW (decoupled weight decay) with the defaults of torch.optim.AdamW."""

    decoupled_weight_decay = True

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False):
        super().__init__(lr, betas, eps, weight_decay, amsgrad)


not_differentiable(ApplyAdam)
