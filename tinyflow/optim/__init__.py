"""Optimizers with the formulas, hyper-parameter names and defaults of torch.optim."""
from .algorithms import SGD, AdaGrad, Adam, AdamW, RMSProp
from .optimizer import Optimizer
from .updates import ApplyUpdate  # its module registers the optimiser's multi_tensor pass

RMSprop, Adagrad = RMSProp, AdaGrad  # torch's spellings, for code ported from PyTorch

__all__ = ["Optimizer", "ApplyUpdate", "SGD", "Adam", "AdamW", "RMSProp", "AdaGrad", "RMSprop", "Adagrad"]
