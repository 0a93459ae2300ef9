"""The Optimizer base class: a loss to a train op (graph mode), or `step()` on parameters (eager mode). Hyper-parameters
are checked when it is made: a NaN or negative value would otherwise train into NaN weights far from its line. An eager
step runs each parameter's update op (built once, on slot Variables) on its `.grad`, one MultiTensorUpdate per dtype."""
import math
import numbers

import numpy as np

from ..autodiff.gradients import gradients
from ..errors import GradientError, GraphError, TinyflowError, describe
from ..nodes import Node, Placeholder, Variable, as_node
from ..ops.state_ops import group
from .updates import ApplyUpdate, multi_tensor_update


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


def is_parameter_list(value):
    """True for what an eager optimizer takes first: a list, tuple or generator of parameters (not a number)."""
    return not (isinstance(value, (Node, str, bytes, np.ndarray)) or np.isscalar(value)) and hasattr(value, "__iter__")


class OptimizerType(type):
    """Eager optimizers take the parameters first, `Adam(layer.parameters(), lr=1e-3)`; a number first is lr."""

    def __call__(cls, *args, **kwargs):
        if args and is_parameter_list(args[0]):
            optimizer = super().__call__(*args[1:], **kwargs)
            optimizer.attach(args[0])
            return optimizer
        return super().__call__(*args, **kwargs)


class Optimizer(metaclass=OptimizerType):
    """Turns a loss into a train op (backprop, then one fused update per Variable); eager: zero_grad() and step()."""

    update_op = ApplyUpdate
    slot_names = ()  # names of the per-variable state Variables, in `update` order

    def __init__(self, lr, **hyper):
        check_hyper_parameters(self, lr=lr, **hyper)  # also for optimizers written by users
        self.lr, self.hyper = lr, hyper

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in {"lr": self.lr, **self.hyper}.items())
        return f"{type(self).__name__}({args})"

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

    def attach(self, params):
        """Give a freshly made optimizer its parameters (the eager form)."""
        from ..eager.tensor import Tensor
        params, name = list(params), type(self).__name__
        if not params:
            raise TinyflowError(f"{name} got an empty parameter list; pass e.g. layer.parameters()")
        for p in params:
            if isinstance(p, Tensor):
                if not (p.is_leaf and p.requires_grad):
                    raise TinyflowError(f"{name} can only update leaf tensors that require grad, got {p!r}; "
                                        "create parameters with tfl.tensor(..., requires_grad=True)")
            elif not isinstance(p, Variable):
                raise TinyflowError(f"{name} takes Variables (layer.parameters()) or leaf Tensors as "
                                    f"parameters, got {p!r}")
        if isinstance(self.lr, Node):
            raise TinyflowError("an eager optimizer needs a number as lr (a graph node has no value outside "
                                "a Session)")
        self.params = params
        self._eager_slots = [Slot(self, p, i) for i, p in enumerate(params)]
        self._eager_kernels = {}  # (backend, slots with a gradient) -> the kernel updating them

    def step(self):
        """Eager mode: update every parameter that has a `.grad`, on the eager backend, with the fused kernels."""
        from ..eager import get_backend
        slots = getattr(self, "_eager_slots", None)
        if slots is None:
            name = type(self).__name__
            raise TinyflowError(f"{name}.step() is the eager form: create the optimizer with the parameters "
                                f"first, e.g. tfl.optim.{name}(layer.parameters(), lr=0.01); in graph mode "
                                "use train_op = opt.minimize(loss) and sess.run(train_op)")
        backend = get_backend()
        by_dtype = {}
        for slot in slots:
            if slot.param.grad is not None:
                by_dtype.setdefault(slot.variable.dtype, []).append(slot)
        backend.begin_run()
        for ready in by_dtype.values():  # each dtype's updates in one kernel call (one C call on the C backend)
            key = (backend, tuple(ready))
            kernel = self._eager_kernels.get(key)
            if kernel is None:
                ops = [slot.op for slot in ready]
                kernel = backend.kernel(ops[0] if len(ops) == 1 else multi_tensor_update(ops))
                if len(self._eager_kernels) >= 8:  # the set of parameters with gradients keeps changing
                    self._eager_kernels.clear()
                self._eager_kernels[key] = kernel
            kernel(*[value for slot in ready for value in slot.values(self.lr)])
            for slot in ready:
                slot.updated()

    def zero_grad(self):
        """Eager mode: forget every parameter's gradient (`p.grad = None`), before the next backward()."""
        for p in getattr(self, "params", ()):
            p.grad = None


class Slot:
    """One parameter's update: its Variable, the update op built on it, and the kernel per backend."""

    def __init__(self, optimizer, param, index):
        self.param = param
        if isinstance(param, Variable):
            self.variable = param
        else:  # a leaf Tensor: a Variable shares its value array, so the fused kernels update it in place
            self.variable = Variable(param.numpy(), trainable=True, name=f"eager_param_{index}")
            self.variable.share_array(param.numpy())
        var = self.variable
        with var.graph.role("optimizer"), var.graph.name_scope(type(optimizer).__name__):
            self.grad_input = Placeholder(var.shape, var.dtype, name=f"grad_{var.name}", graph=var.graph)
            self.lr_input = Placeholder((), var.dtype, name=f"lr_{var.name}", graph=var.graph)
            self.op = optimizer.update_op(var, self.grad_input, self.lr_input, optimizer._slots(var), optimizer,
                                          name=f"update_{var.name}")

    def values(self, lr):
        """The update op's input values for this step (the Variable first synced with its Tensor)."""
        var, param = self.variable, self.param
        if param is not var and param.numpy() is not var.host_array:
            var.value = param.numpy()  # the Tensor got a new value since the last step (e.g. in no_grad)
        return [var.value, np.asarray(param.grad, var.dtype), np.asarray(lr, var.dtype),
                *[slot.value for slot in self.op.variables[1:]]]

    def updated(self):
        """After the kernel changed the parameter in place: device copies are old, saved graphs outdated."""
        var, param = self.variable, self.param
        mirror = var.device_mirror
        if mirror is not None and not mirror.host_stale:  # a host kernel changed the array in place: the device
            mirror.device_stale = True                    # copy an OpenCL session keeps is the old value now
        from ..eager.autograd import changed_in_place
        changed_in_place(param, var.value if param is not var else None)
