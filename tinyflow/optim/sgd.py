"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay (torch.optim.SGD)."""
from .checks import check_hyper_parameters
from .optimizer import ApplyUpdate, Optimizer
from ..ops.registry import not_differentiable


class ApplySGD(ApplyUpdate):
    """g ← g + wd·p;  b ← g (first step) or μ·b + (1-τ)·g;  g ← g + μ·b (Nesterov) or b;  p ← p - lr·g."""

    def update(self, param, grad, lr, step=None, momentum_buffer=None):
        momentum, dampening = self.hyper["momentum"], self.hyper["dampening"]
        nesterov, weight_decay = self.hyper["nesterov"], self.hyper["weight_decay"]
        if weight_decay:
            grad = grad + weight_decay * param
        if not momentum:
            return (param - lr * grad,)
        if step == 0:
            momentum_buffer = grad
        else:
            momentum_buffer = momentum * momentum_buffer + (1 - dampening) * grad
        grad = grad + momentum * momentum_buffer if nesterov else momentum_buffer
        return param - lr * grad, step + 1, momentum_buffer


class SGD(Optimizer):
    """SGD with the hyper-parameters and defaults of torch.optim.SGD."""

    update_op = ApplySGD

    def __init__(self, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0):
        check_hyper_parameters(self, lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                               weight_decay=weight_decay)
        super().__init__(lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                         weight_decay=weight_decay)
        self.slot_names = ("step", "momentum_buffer") if momentum else ()


not_differentiable(ApplySGD)
