"""Validation of optimizer hyper-parameters: a NaN, an infinity or a negative value would otherwise train silently
into NaN weights many steps later, far from the line that caused it."""
import math
import numbers

import numpy as np

from ..errors import TinyflowError
from ..nodes import Node


class HyperParameterError(TinyflowError, ValueError):
    """An optimizer hyper-parameter that is not a usable number (NaN, inf, negative, out of range)."""


# name -> (lowest allowed, highest allowed, highest included?, what a user should pass)
_RANGES = {
    "lr": (0.0, math.inf, False, "a learning rate such as 0.01"),
    "eps": (0.0, math.inf, False, "a small positive number such as 1e-8"),
    "weight_decay": (0.0, math.inf, False, "0 (none) or a small number such as 1e-4"),
    "momentum": (0.0, math.inf, False, "0 (none) or a value such as 0.9"),
    "dampening": (0.0, 1.0, True, "a value in [0, 1], usually 0"),
    "lr_decay": (0.0, math.inf, False, "0 (none) or a small number"),
    "initial_accumulator_value": (0.0, math.inf, False, "0 or a small positive number"),
    "alpha": (0.0, 1.0, True, "a smoothing constant in [0, 1] such as 0.99"),
    "beta": (0.0, 1.0, False, "a value in [0, 1) such as 0.9 or 0.999"),
}


def _check_number(optimizer, name, value, rule):
    low, high, high_included, advice = _RANGES[rule]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise HyperParameterError(f"{optimizer}: {name}={value!r} is a {type(value).__name__}, not a number; "
                                  f"pass {advice}")
    number = float(value)
    if not math.isfinite(number) or number < low or number > high or (number == high and not high_included):
        interval = f"[{low:g}, {high:g}{']' if high_included else ')'}" if math.isfinite(high) else f">= {low:g}"
        raise HyperParameterError(f"{optimizer}: {name}={value!r} is not a finite number {interval}; pass {advice}")


def check_hyper_parameters(optimizer, **hyper):
    """HyperParameterError naming the optimizer and the argument unless every known hyper-parameter is usable."""
    name = type(optimizer).__name__
    for key, value in hyper.items():
        if key == "lr" and isinstance(value, Node):
            if value.shape not in ((), None) or (value.dtype is not None and value.dtype.kind != "f"):
                raise HyperParameterError(f"{name}: a learning-rate node must be a float scalar, got "
                                          f"{value.op_type} node '{value.name}' of shape {value.shape} and dtype "
                                          f"{value.dtype}; e.g. tfl.Placeholder((), 'float32', name='lr')")
        elif key == "betas":
            betas = tuple(value) if np.iterable(value) else ()
            if len(betas) != 2:
                raise HyperParameterError(f"{name}: betas={value!r} must be a pair (beta1, beta2) such as "
                                          "(0.9, 0.999)")
            for i, beta in enumerate(betas):
                _check_number(name, f"betas[{i}]", beta, "beta")
        elif key in _RANGES:
            _check_number(name, key, value, key)
    momentum, dampening = hyper.get("momentum", 0), hyper.get("dampening", 0)
    if hyper.get("nesterov") and not (momentum > 0 and dampening == 0):
        raise HyperParameterError(f"{name}: Nesterov momentum needs momentum > 0 and dampening=0 "
                                  f"(got momentum={momentum!r}, dampening={dampening!r})")
