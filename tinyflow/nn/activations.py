"""The activation registry: `Linear(..., act="relu")` looks names up here."""
from ..ops.elementwise_ops import leaky_relu, relu, sigmoid, softplus, tanh
from ..ops.softmax import log_softmax, softmax

_ACTIVATIONS = {"relu": relu, "sigmoid": sigmoid, "tanh": tanh, "leaky_relu": leaky_relu, "softplus": softplus,
                "softmax": softmax, "log_softmax": log_softmax}


def register_activation(name):
    """Decorator: make `fn(node) -> node` available to layers as `act=name`."""
    def decorate(fn):
        _ACTIVATIONS[name] = fn
        return fn
    return decorate


def get_activation(act):
    """The activation function for a registered name, a callable, or None (identity)."""
    if act is None or callable(act):
        return act
    try:
        return _ACTIVATIONS[act]
    except KeyError:
        raise ValueError(f"unknown activation {act!r}; registered activations: {sorted(_ACTIVATIONS)}. "
                         "Register your own with @tfl.nn.register_activation(name).") from None


def registered_activations():
    """The names layers accept as `act`."""
    return sorted(_ACTIVATIONS)

