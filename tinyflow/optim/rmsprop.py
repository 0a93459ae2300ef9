"""RMSProp (torch.optim.RMSprop), with momentum and the centered variant."""
import numpy as np

from ..ops.registry import not_differentiable
from .checks import check_hyper_parameters
from .optimizer import ApplyUpdate, Optimizer


class ApplyRMSProp(ApplyUpdate):
    """s ← α·s + (1-α)·g²;  d ← √(s - ḡ²) + ε (centered, ḡ ← α·ḡ + (1-α)·g) or √s + ε;
    b ← μ·b + g/d and p ← p - lr·b (momentum) or p ← p - lr·g/d."""

    def update(self, param, grad, lr, square_avg, grad_avg=None, momentum_buffer=None):
        alpha, eps = self.hyper["alpha"], self.hyper["eps"]
        weight_decay, momentum = self.hyper["weight_decay"], self.hyper["momentum"]
        if weight_decay:
            grad = grad + weight_decay * param
        square_avg = alpha * square_avg + (1 - alpha) * grad * grad
        if grad_avg is not None:
            grad_avg = alpha * grad_avg + (1 - alpha) * grad
            avg = np.sqrt(square_avg - grad_avg * grad_avg) + eps
        else:
            avg = np.sqrt(square_avg) + eps
        if momentum_buffer is not None:
            momentum_buffer = momentum * momentum_buffer + grad / avg
            param = param - lr * momentum_buffer
        else:
            param = param - lr * grad / avg
        return tuple(v for v in (param, square_avg, grad_avg, momentum_buffer) if v is not None)


class RMSProp(Optimizer):
    """RMSProp with the hyper-parameters and defaults of torch.optim.RMSprop."""

    update_op = ApplyRMSProp

    def __init__(self, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
        check_hyper_parameters(self, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
        super().__init__(lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                         centered=centered)
        self.slot_names = ("square_avg",) + (("grad_avg",) if centered else ()) + \
                          (("momentum_buffer",) if momentum else ())


not_differentiable(ApplyRMSProp)
