"""The Optimizer base class: a loss to a train op (graph mode), or `step()` on parameters (eager mode)."""
import numpy as np

from ..autodiff.gradients import gradients
from ..errors import GradientError, GraphError, describe
from ..nodes import Node, Variable, as_node
from ..ops.state_ops import group
from .checks import check_hyper_parameters
from . import eager
from .updates import ApplyUpdate


class OptimizerType(type):
    """Eager optimizers take the parameters first, `Adam(layer.parameters(), lr=1e-3)`; a number first is lr."""

    def __call__(cls, *args, **kwargs):
        if args and eager.is_parameter_list(args[0]):
            optimizer = super().__call__(*args[1:], **kwargs)
            eager.attach(optimizer, args[0])
            return optimizer
        return super().__call__(*args, **kwargs)


class Optimizer(metaclass=OptimizerType):
    """Turns a loss into a train op: gradients by backprop, then one fused update per Variable. Eager form: created
    with the parameters first, then `zero_grad()` and `step()` (see optim/eager.py)."""

    update_op = ApplyUpdate
    slot_names = ()  # names of the per-variable state Variables, in `update` order

    def __init__(self, lr, **hyper):
        check_hyper_parameters(self, lr=lr, **hyper)  # also for optimizers written by users
        self.lr, self.hyper = lr, hyper

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in {"lr": self.lr, **self.hyper}.items())
        return f"{type(self).__name__}({args})"

    zero_grad, step = eager.zero_grad, eager.step  # the eager form's methods

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
            lr = self.lr if isinstance(self.lr, Node) else as_node(np.asarray(self.lr, dtype=pairs[0][1].dtype))
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
        return np.zeros((), np.int64) if slot == "step" else np.zeros_like(var.value)
