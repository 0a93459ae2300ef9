"""AdaGrad (torch.optim.Adagrad), with learning-rate decay and an initial accumulator value."""
import numpy as np

from ..ops.registry import not_differentiable
from .checks import check_hyper_parameters
from .optimizer import ApplyUpdate, Optimizer


class ApplyAdaGrad(ApplyUpdate):
    """t ← t+1;  lr_t = lr / (1 + (t-1)·decay);  s ← s + g²;  p ← p - lr_t · g / (√s + ε)."""

    def update(self, param, grad, lr, step, state_sum):
        lr_decay, eps, weight_decay = self.hyper["lr_decay"], self.hyper["eps"], self.hyper["weight_decay"]
        step = step + 1
        if weight_decay:
            grad = grad + weight_decay * param
        clr = lr / (1 + (int(step) - 1) * lr_decay)
        state_sum = state_sum + grad * grad
        param = param - clr * grad / (np.sqrt(state_sum) + eps)
        return param, step, state_sum


class AdaGrad(Optimizer):
    """AdaGrad with the hyper-parameters and defaults of torch.optim.Adagrad."""

    update_op = ApplyAdaGrad
    slot_names = ("step", "state_sum")

    def __init__(self, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10):
        check_hyper_parameters(self, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                               initial_accumulator_value=initial_accumulator_value)
        super().__init__(lr, lr_decay=lr_decay, weight_decay=weight_decay,
                         initial_accumulator_value=initial_accumulator_value, eps=eps)

    def initial_slot_value(self, var, slot):
        if slot == "state_sum":
            return np.full_like(var.value, self.hyper["initial_accumulator_value"])
        return super().initial_slot_value(var, slot)


not_differentiable(ApplyAdaGrad)
