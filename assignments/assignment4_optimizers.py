"""Assignment 4 — optimizers, written from their formulas.

A tinyflow optimizer has two parts: an update op (a subclass of ApplyUpdate) whose `update`
method is the formula — current parameter, gradient, learning rate and slot values in, new
parameter and new slot values out, in numpy — and an Optimizer subclass naming its slots
(per-parameter state such as a momentum buffer, kept in non-trainable Variables). Write the
formulas of torch.optim.SGD (with momentum), torch.optim.RMSprop and torch.optim.Adam; the
tests compare your trajectories with tinyflow's own optimizers (which equal PyTorch's).
Check yourself with `pytest tests -m assignment4`.
"""
import numpy as np

import tinyflow as tfl
from tinyflow.optim.optimizer import ApplyUpdate, Optimizer


class MomentumUpdate(ApplyUpdate):
    """First step: b ← g.  Later: b ← μ·b + g.  Then p ← p - lr·b.  (`step` counts the updates done.)"""

    def update(self, param, grad, lr, step, momentum_buffer):
        momentum = self.hyper["momentum"]
        # BEGIN SOLUTION
        # HINT: if step == 0 the buffer is the gradient itself, else momentum * buffer + grad; return (new
        #   param, step + 1, new buffer) in this order
        momentum_buffer = grad if step == 0 else momentum * momentum_buffer + grad
        return param - lr * momentum_buffer, step + 1, momentum_buffer
        # END SOLUTION


class Momentum(Optimizer):
    """SGD with (heavy-ball) momentum, as torch.optim.SGD(lr, momentum)."""

    update_op = MomentumUpdate
    slot_names = ("step", "momentum_buffer")  # the order `update` takes and returns them

    def __init__(self, lr, momentum=0.9):
        super().__init__(lr, momentum=momentum)


class RMSPropUpdate(ApplyUpdate):
    """s ← α·s + (1-α)·g²;  p ← p - lr·g / (√s + ε)."""

    def update(self, param, grad, lr, square_avg):
        alpha, eps = self.hyper["alpha"], self.hyper["eps"]
        # BEGIN SOLUTION
        # HINT: update square_avg first, then the parameter with the new square_avg; return (new param, new
        #   square_avg); note eps goes outside the square root
        square_avg = alpha * square_avg + (1 - alpha) * grad * grad
        return param - lr * grad / (np.sqrt(square_avg) + eps), square_avg
        # END SOLUTION


class RMSProp(Optimizer):
    """RMSProp, as torch.optim.RMSprop(lr, alpha, eps)."""

    update_op = RMSPropUpdate
    slot_names = ("square_avg",)

    def __init__(self, lr=1e-2, alpha=0.99, eps=1e-8):
        super().__init__(lr, alpha=alpha, eps=eps)


class AdamUpdate(ApplyUpdate):
    """t ← t+1;  m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;
    m̂ = m / (1-β1ᵗ);  v̂ = v / (1-β2ᵗ);  p ← p - lr·m̂ / (√v̂ + ε)."""

    def update(self, param, grad, lr, step, exp_avg, exp_avg_sq):
        (beta1, beta2), eps = self.hyper["betas"], self.hyper["eps"]
        # BEGIN SOLUTION
        # HINT: increment step first (t starts at 1 in the bias corrections), update both moments, correct
        #   their bias, then step the parameter; return (param, step, exp_avg, exp_avg_sq)
        step = step + 1
        exp_avg = beta1 * exp_avg + (1 - beta1) * grad
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
        corrected_avg = exp_avg / (1 - beta1 ** int(step))
        corrected_sq = exp_avg_sq / (1 - beta2 ** int(step))
        return param - lr * corrected_avg / (np.sqrt(corrected_sq) + eps), step, exp_avg, exp_avg_sq
        # END SOLUTION


class Adam(Optimizer):
    """Adam, as torch.optim.Adam(lr, betas, eps)."""

    update_op = AdamUpdate
    slot_names = ("step", "exp_avg", "exp_avg_sq")

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(lr, betas=tuple(betas), eps=eps)


tfl.not_differentiable(MomentumUpdate, RMSPropUpdate, AdamUpdate)  # updates have no gradient
