"""The gradient-function table: op type -> function(op, grad) returning one gradient per input."""
from ..errors import GradientError, describe

_GRADIENTS = {}
NOT_DIFFERENTIABLE = object()  # marks ops that have no gradient on purpose


def _op_type_of(op_class_or_name):
    return op_class_or_name if isinstance(op_class_or_name, str) else op_class_or_name.op_type


def register_gradient(op_class_or_name):
    """Decorator: register `fn(op, grad) -> [grad per input]` as the gradient of an op type."""
    op_type = _op_type_of(op_class_or_name)

    def decorate(fn):
        _GRADIENTS[op_type] = fn
        return fn
    return decorate


def not_differentiable(*op_classes_or_names):
    """Declare op types with no gradient: backprop passes no gradient to their inputs."""
    for op in op_classes_or_names:
        _GRADIENTS[_op_type_of(op)] = NOT_DIFFERENTIABLE


def registered_op_types():
    """Every op type that has a gradient function or is marked non-differentiable."""
    return dict(_GRADIENTS)


def gradient_function(op):
    """The registered gradient function of `op`, NOT_DIFFERENTIABLE, or GradientError if none."""
    try:
        return _GRADIENTS[op.op_type]
    except KeyError:
        raise GradientError(
            f"no gradient is registered for op type '{op.op_type}', needed by {describe(op)}. "
            f"Register one with @tfl.register_gradient({op.op_type}) below the op class, or mark it "
            f"with tfl.not_differentiable({op.op_type}) if it has none, or wrap its output in "
            "tfl.stop_gradient().") from None
