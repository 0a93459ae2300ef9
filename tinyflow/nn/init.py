"""Weight initializers by name, all drawing from tinyflow's one seed (`tfl.set_seed`)."""
import numpy as np

from ..random import generator

_INITIALIZERS = {}


def register_initializer(name):
    """Decorator: make `fn(shape, fan_in, fan_out, rng) -> array` selectable by name."""
    def decorate(fn):
        _INITIALIZERS[name] = fn
        return fn
    return decorate


@register_initializer("zeros")
def zeros(shape, fan_in, fan_out, rng):
    """All zeros."""
    return np.zeros(shape)


@register_initializer("ones")
def ones(shape, fan_in, fan_out, rng):
    """All ones."""
    return np.ones(shape)


@register_initializer("normal")
def normal(shape, fan_in, fan_out, rng):
    """N(0, 0.01²), the classic small random start."""
    return rng.normal(0.0, 0.01, shape)


@register_initializer("uniform")
def uniform(shape, fan_in, fan_out, rng):
    """U(-1/√fan_in, 1/√fan_in), PyTorch's default for Linear and Conv layers."""
    bound = 1.0 / np.sqrt(max(fan_in, 1))
    return rng.uniform(-bound, bound, shape)


@register_initializer("xavier_uniform")
def xavier_uniform(shape, fan_in, fan_out, rng):
    """Glorot: U(-a, a) with a = √(6 / (fan_in + fan_out)), for tanh/sigmoid nets."""
    bound = np.sqrt(6.0 / max(fan_in + fan_out, 1))
    return rng.uniform(-bound, bound, shape)


@register_initializer("xavier_normal")
def xavier_normal(shape, fan_in, fan_out, rng):
    """Glorot: N(0, 2 / (fan_in + fan_out))."""
    return rng.normal(0.0, np.sqrt(2.0 / max(fan_in + fan_out, 1)), shape)


@register_initializer("he_uniform")
def he_uniform(shape, fan_in, fan_out, rng):
    """He/Kaiming: U(-a, a) with a = √(6 / fan_in), for relu nets."""
    bound = np.sqrt(6.0 / max(fan_in, 1))
    return rng.uniform(-bound, bound, shape)


@register_initializer("he_normal")
def he_normal(shape, fan_in, fan_out, rng):
    """He/Kaiming: N(0, 2 / fan_in)."""
    return rng.normal(0.0, np.sqrt(2.0 / max(fan_in, 1)), shape)


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
