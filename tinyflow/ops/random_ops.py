"""Dropout: zero a random fraction of the inputs during training, scaling the rest."""
import numpy as np

from ..arguments import Arguments
from ..nodes import Node, Operation
from ..random import generator
from .math_ops import multiply
from .registry import not_differentiable


class DropoutMask(Operation):
    """Random keep-mask (0 or 1/(1-rate)) of x's run-time shape; all ones when `training` is false.

    Dropout multiplies x by this mask, so its gradient is the same mask times g
    and the mask is drawn once per run for both the forward and backward pass.
    """

    def __init__(self, x, rate, training=None, seed=None, name=None):
        check = Arguments(self, name, x)
        self.rate = check.number("rate", rate, 0.0, 1.0, high_open=True)
        self.rng = generator(None if seed is None else check.integer("seed", seed, minimum=0))
        inputs = (x,) if training is None else (x, training)
        super().__init__(*inputs, name=name)

    def compute(self, x, training=True):
        if not training or self.rate == 0.0:
            return np.ones_like(x)
        keep = self.rng.random(x.shape) >= self.rate
        return keep.astype(x.dtype) / np.asarray(1.0 - self.rate, x.dtype)

    def infer_shape(self, x_shape, training_shape=()):
        return x_shape


not_differentiable(DropoutMask)


def dropout(x, rate, training=True, seed=None, name=None):
    """x with each entry zeroed with probability `rate` and the rest scaled by 1/(1-rate).

    `training` is a bool or a boolean node (e.g. a Placeholder with a default),
    so one graph serves training and evaluation.
    """
    check = Arguments(DropoutMask, name, x)
    rate = check.number("rate", rate, 0.0, 1.0, high_open=True)
    if not isinstance(training, Node):
        training = check.flag("training", training)
    if training is False or rate == 0.0:
        return x
    mask = DropoutMask(x, rate, training if isinstance(training, Node) else None, seed,
                       name=None if name is None else name + "_mask")
    return multiply(x, mask, name=name)
