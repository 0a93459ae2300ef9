"""The gradient-function table: op class -> function(op, grad) returning one gradient per input.

Op files register their gradients here and autodiff looks them up. It is keyed by class, not by name: a user's op class
can never take over the gradient of another class that shares its name. `op_function` makes an op's `tfl.` function.
"""
import inspect

from ..errors import GradientError, describe
from ..nodes import OP_TYPES

GRADIENT_FUNCTIONS = {}  # op class -> gradient function or NOT_DIFFERENTIABLE
NOT_DIFFERENTIABLE = object()  # marks ops that have no gradient on purpose


def _op_class(op_class_or_name):
    """The op class meant by a class or an op-type name (the name must belong to a defined op)."""
    if isinstance(op_class_or_name, str):
        try:
            return OP_TYPES[op_class_or_name]
        except KeyError:
            raise GradientError(
                f"no op type named '{op_class_or_name}' is defined; define the op class first, then "
                f"register its gradient with @tfl.register_gradient(TheClass)") from None
    if not (isinstance(op_class_or_name, type) and hasattr(op_class_or_name, "infer_shape")):
        raise GradientError(f"register_gradient and not_differentiable take an Operation subclass or its op "
                            f"type name, got {op_class_or_name!r}")
    return op_class_or_name


def register_gradient(op_class_or_name):
    """Decorator: register `fn(op, grad) -> [grad per input]` as the gradient of one op class."""
    op_class = _op_class(op_class_or_name)

    def decorate(fn):
        GRADIENT_FUNCTIONS[op_class] = fn
        return fn
    return decorate


def not_differentiable(*op_classes_or_names):
    """Declare op classes with no gradient: backprop passes no gradient to their inputs."""
    for op in op_classes_or_names:
        GRADIENT_FUNCTIONS[_op_class(op)] = NOT_DIFFERENTIABLE


def registered_op_types():
    """op type name -> gradient function (or NOT_DIFFERENTIABLE) for every op class currently defined."""
    return {op_type: GRADIENT_FUNCTIONS[cls] for op_type, cls in OP_TYPES.items() if cls in GRADIENT_FUNCTIONS}


def gradient_function(op):
    """The registered gradient function of `op`'s class, NOT_DIFFERENTIABLE, or GradientError if none."""
    try:
        return GRADIENT_FUNCTIONS[type(op)]
    except KeyError:
        raise GradientError(
            f"no gradient is registered for op type '{op.op_type}', needed by {describe(op)}. "
            f"Register one with @tfl.register_gradient({op.op_type}) below the op class, or mark it "
            f"with tfl.not_differentiable({op.op_type}) if it has none, or wrap its output in "
            "tfl.stop_gradient().") from None


def op_function(cls, name, doc=None, signature=None):
    """The `tfl.` function `name` building op class cls; signature and doc default to its constructor's and class's."""
    def function(*args, **kwargs):
        return cls(*args, **kwargs)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    function.__signature__ = signature or inspect.Signature(parameters)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc or cls.__doc__.split(".  ")[0].rstrip(".") + "."
    function.__module__ = cls.__module__
    return function
