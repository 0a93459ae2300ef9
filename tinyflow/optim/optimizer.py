"""The Optimizer base class and the base of the fused update ops every optimizer applies."""
import numpy as np

from ..autodiff.gradients import gradients
from ..errors import GradientError, GraphError, ShapeError, describe
from ..nodes import Node, Operation, Variable, as_node
from ..ops.state_ops import group
from ..shapes import shapes_compatible
from .checks import check_hyper_parameters
from . import eager


class ApplyUpdate(Operation):
    """Updates one Variable and its slot Variables in a single op (in the spirit of TF's ApplyAdam).

    Inputs: (variable, gradient, learning rate, *slots). Subclasses write
    `update(param, grad, lr, **slots) -> (new_param, *new_slots in slot order)` as the
    optimizer's formula; a fast backend may replace it with one fused pass.
    """

    abstract = True

    stateful = True

    def __init__(self, var, grad, lr, slots, optimizer, name=None):
        self.hyper = optimizer.hyper
        self.slot_names = optimizer.slot_names
        super().__init__(var, grad, lr, *slots, name=name)

    @property
    def variables(self):
        """The Variable being trained followed by its slots, in the order `update` takes them."""
        return [self.inputs[0]] + list(self.inputs[3:])

    def infer_shape(self, var_shape, grad_shape, lr_shape, *slot_shapes):
        if not shapes_compatible(var_shape, grad_shape):
            raise ShapeError(f"the gradient of shape {grad_shape} does not match the variable's shape {var_shape}")
        if lr_shape not in ((), None):
            raise ShapeError(f"the learning rate must be a scalar, got shape {lr_shape}")
        return ()

    def infer_dtype(self, *dtypes):
        return None

    def compute(self, param, grad, lr, *slots):
        variables = self.variables
        # current values, not the run's snapshots, so several updates of one Variable compose
        slots = {name: var.value for name, var in zip(self.slot_names, variables[1:])}
        new_values = self.update(variables[0].value, grad, lr.item(), **slots)
        for var, value in zip(variables, new_values):
            var.value = value
        return None

    def update(self, param, grad, lr, **slots):
        """The update formula: new values of the parameter and of the slots, in `slot_names` order."""
        raise NotImplementedError


class OptimizerType(type):
    """Optimizers take the parameters first in eager mode: `Adam(layer.parameters(), lr=1e-3)`.

    A number first (`SGD(0.1)`) is the learning rate, as in graph mode.
    """

    def __call__(cls, *args, **kwargs):
        if args and eager.is_parameter_list(args[0]):
            optimizer = super().__call__(*args[1:], **kwargs)
            eager.attach(optimizer, args[0])
            return optimizer
        return super().__call__(*args, **kwargs)


class Optimizer(metaclass=OptimizerType):
    """Turns a loss into a train op: gradients by backprop, then one fused update per Variable.

    Eager form: created with the parameters first, `zero_grad()` and `step()` (see optim/eager.py).
    """

    update_op = ApplyUpdate
    slot_names = ()  # names of the per-variable state Variables, in `update` order

    def __init__(self, lr, **hyper):
        check_hyper_parameters(self, lr=lr)  # also for optimizers written by users
        self.lr = lr
        self.hyper = hyper

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in {"lr": self.lr, **self.hyper}.items())
        return f"{type(self).__name__}({args})"

    def zero_grad(self):
        """Eager mode: forget every parameter's gradient (`p.grad = None`)."""
        eager.zero_grad(self)

    def step(self):
        """Eager mode: update every parameter from its `.grad` with the fused update kernel."""
        eager.step(self)

    def compute_gradients(self, loss, var_list=None):
        """[(gradient node or None, variable)] for `var_list` (default: all trainable Variables)."""
        name = type(self).__name__
        if not isinstance(loss, Node):
            raise GraphError(f"{name}.minimize / compute_gradients needs the loss as a tinyflow node, got "
                             f"{type(loss).__name__} {loss!r}. Build the loss from your Variables with tinyflow "
                             "ops, e.g. loss = tfl.reduce_mean(tfl.square(pred - y)).")
        if var_list is None:  # integer Variables (counters) are state, never trained
            var_list = [v for v in loss.graph.variables(trainable_only=True) if v.dtype.kind == "f"]
        elif isinstance(var_list, Node):
            raise GraphError(f"{name}: var_list must be a list of Variables, got the single node '{var_list.name}'; "
                             f"write var_list=[{var_list.name}]")
        var_list = list(var_list)
        for var in var_list:
            if not isinstance(var, Variable):
                raise GraphError(f"{name}: var_list must hold Variables, got {type(var).__name__} {var!r}; "
                                 "pass the Variables to train (e.g. layer.parameters())")
            if var.dtype is None or var.dtype.kind != "f":
                raise GradientError(f"{name}: cannot train {describe(var)} of dtype {var.dtype}: gradients exist "
                                    "only for floating-point Variables. Create it from floats (e.g. "
                                    "tfl.Variable(np.zeros(3, np.float32))) or leave it out of var_list.")
        return list(zip(gradients(loss, var_list), var_list))

    def apply_gradients(self, grads_and_vars, name=None):
        """A train op (a group) applying the update to every Variable with a gradient."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            names = [v.name for _, v in grads_and_vars]
            raise GradientError(f"no gradient for any of the variables {names}: the loss does not depend on "
                                "them. Check that the loss is built from these Variables.")
        graph = pairs[0][1].graph
        with graph.role("optimizer"), graph.name_scope(type(self).__name__):
            lr = as_node(self.lr)
            if not isinstance(self.lr, Node):
                lr = as_node(np.asarray(self.lr, dtype=pairs[0][1].dtype))
            updates = [self.update_op(var, grad, lr, self._slots(var), self, name=f"update_{var.name}")
                       for grad, var in pairs]
            return group(*updates, name=name or "train")

    def minimize(self, loss, var_list=None, name=None):
        """compute_gradients then apply_gradients: the usual way to get a train op."""
        return self.apply_gradients(self.compute_gradients(loss, var_list), name=name)

    def _slots(self, var):
        return [Variable(self.initial_slot_value(var, slot), trainable=False, name=f"{var.name}/{slot}")
                for slot in self.slot_names]

    def initial_slot_value(self, var, slot):
        """The starting value of a slot: a step counter starts at 0, every other slot at zeros."""
        if slot == "step":
            return np.zeros((), np.int64)
        return np.zeros_like(var.value)
