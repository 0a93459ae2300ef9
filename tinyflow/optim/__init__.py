"""Optimizers with the formulas, hyper-parameter names and defaults of torch.optim."""
from .adagrad import AdaGrad
from .adam import Adam, AdamW
from .optimizer import ApplyUpdate, Optimizer
from .rmsprop import RMSProp
from .sgd import SGD

RMSprop, Adagrad = RMSProp, AdaGrad  # torch's spellings, for code ported from PyTorch

__all__ = ["Optimizer", "ApplyUpdate", "SGD", "Adam", "AdamW", "RMSProp", "AdaGrad", "RMSprop", "Adagrad"]
from . import merge_updates  # noqa: E402,F401 - the optimiser's multi_tensor pass
