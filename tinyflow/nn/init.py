"""Weight initializers by name, all drawing from tinyflow's one seed (`tfl.set_seed`)."""
import numpy as np

from ..random import generator


def _uniform(bound):
    """The initializer drawing from U(-a, a) with a = bound(fan_in, fan_out)."""
    def draw(shape, fan_in, fan_out, rng):
        limit = bound(fan_in, fan_out)
        return rng.uniform(-limit, limit, shape)
    return draw


def _normal(std):
    """The initializer drawing from N(0, std(fan_in, fan_out)²)."""
    return lambda shape, fan_in, fan_out, rng: rng.normal(0.0, std(fan_in, fan_out), shape)


# name -> fn(shape, fan_in, fan_out, rng) -> array
_INITIALIZERS = {
    "zeros": lambda shape, fan_in, fan_out, rng: np.zeros(shape),
    "ones": lambda shape, fan_in, fan_out, rng: np.ones(shape),
    "normal": _normal(lambda fan_in, fan_out: 0.01),  # the classic small random start
    "uniform": _uniform(lambda fan_in, fan_out: 1.0 / np.sqrt(max(fan_in, 1))),  # torch's Linear and Conv default
    # Glorot, for tanh/sigmoid nets
    "xavier_uniform": _uniform(lambda fan_in, fan_out: np.sqrt(6.0 / max(fan_in + fan_out, 1))),
    "xavier_normal": _normal(lambda fan_in, fan_out: np.sqrt(2.0 / max(fan_in + fan_out, 1))),
    # He/Kaiming, for relu nets
    "he_uniform": _uniform(lambda fan_in, fan_out: np.sqrt(6.0 / max(fan_in, 1))),
    "he_normal": _normal(lambda fan_in, fan_out: np.sqrt(2.0 / max(fan_in, 1))),
}


def register_initializer(name):
    """Decorator: make `fn(shape, fan_in, fan_out, rng) -> array` selectable by name."""
    def decorate(fn):
        _INITIALIZERS[name] = fn
        return fn
    return decorate


def initial_value(init, shape, fan_in, fan_out, dtype):
    """An initial array from an initializer name or callable, drawn with the next global seed."""
    if not callable(init):
        if init not in _INITIALIZERS:
            raise ValueError(f"unknown initializer {init!r}; registered: {sorted(_INITIALIZERS)}")
        init = _INITIALIZERS[init]
    return np.asarray(init(tuple(shape), fan_in, fan_out, generator()), dtype=dtype)


def registered_initializers():
    """The initializer names layers accept."""
    return sorted(_INITIALIZERS)
