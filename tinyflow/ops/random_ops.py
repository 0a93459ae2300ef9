"""Dropout: zero a random fraction of the inputs during training, scaling the rest."""
import numpy as np

from ..arguments import Arguments
from ..nodes import Node, Operation, is_eager
from ..random import next_seed
from .elementwise_ops import multiply
from .registry import not_differentiable


class DropoutMask(Operation):
    """Random keep-mask (0 or 1/(1-rate)) of x's run-time shape, all ones when `training` is false; drawn once per run,
    so dropout's gradient (g times the mask) sees the forward pass's. `rate` is a number or a scalar node (ONNX's
    Dropout input). Uniform draws of RandomState(seed) kept where >= rate: ONNX's reference implementation's mask."""

    shape_of = 0

    def __init__(self, x, rate, training=None, seed=None, name=None):
        check = Arguments(self, name, x)
        tensor = isinstance(rate, Node) or is_eager(rate)
        self.rate = None if tensor else check.number("rate", rate, 0.0, 1.0, high_open=True)
        if seed is not None:
            self.seed = check.integer("seed", seed, minimum=0)
            if self.seed >= 2 ** 32:
                check.fail("seed", seed, "is not below 2**32", "pass a seed in [0, 2**32)")
        # a Generator drawing what RandomState(seed) draws (checkpoints save it like any Generator)
        state = np.random.RandomState(next_seed() if seed is None else self.seed).get_state(legacy=False)
        bits = np.random.MT19937()
        bits.state = {"bit_generator": state["bit_generator"], "state": state["state"]}
        self.rng = np.random.Generator(bits)
        inputs = (x,) + (() if self.rate is not None else (rate,)) + (() if training is None else (training,))
        super().__init__(*inputs, name=name)

    @property
    def training_input(self):
        """The node saying whether to drop (None: always)."""
        return self.inputs[-1] if len(self.inputs) == (2 if self.rate is not None else 3) else None

    def compute(self, x, *rate_and_training):
        rate = self.rate
        if rate is None:
            rate = float(np.asarray(rate_and_training[0]).reshape(()))
            rate_and_training = rate_and_training[1:]
            if not 0.0 <= rate < 1.0:
                raise ValueError(f"the dropout rate fed is {rate}; it must be in [0, 1)")
        training = rate_and_training[0] if rate_and_training else True
        if not training or rate == 0.0:
            return np.ones_like(x)
        keep = self.rng.random(x.shape) >= rate
        return keep.astype(x.dtype) / np.asarray(1.0 - rate, x.dtype)


not_differentiable(DropoutMask)


def dropout(x, rate, training=True, seed=None, name=None):
    """x with each entry zeroed with probability `rate`, the rest scaled by 1/(1-rate); `training` may be a node."""
    check = Arguments(DropoutMask, name, x)
    rate = check.number("rate", rate, 0.0, 1.0, high_open=True)
    if not isinstance(training, Node):
        training = check.flag("training", training)
    if training is False or rate == 0.0:
        return x
    mask = DropoutMask(x, rate, training if isinstance(training, Node) else None, seed,
                       name=None if name is None else name + "_mask")
    return multiply(x, mask, name=name)
