"""The eager form of every optimizer, `opt = tfl.optim.Adam(params, lr=...)`, `opt.zero_grad()`, `opt.step()`: a step
runs each parameter's update op (built once, on slot Variables as in graph mode) on its `.grad`, the updates of one
dtype as one MultiTensorUpdate (one C call). Parameters are Variables (`layer.parameters()`) or leaf Tensors."""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Node, Placeholder, Variable
from .updates import multi_tensor_update


def is_parameter_list(value):
    """True for what an eager optimizer takes first: a list, tuple or generator of parameters (not a number)."""
    if isinstance(value, (Node, str, bytes, np.ndarray)) or np.isscalar(value):
        return False
    return hasattr(value, "__iter__")


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


def attach(optimizer, params):
    """Give a freshly made optimizer its parameters (the eager form)."""
    from ..eager.tensor import Tensor
    params = list(params)
    if not params:
        raise TinyflowError(f"{type(optimizer).__name__} got an empty parameter list; pass e.g. layer.parameters()")
    for p in params:
        if isinstance(p, Tensor):
            if not (p.is_leaf and p.requires_grad):
                raise TinyflowError(f"{type(optimizer).__name__} can only update leaf tensors that require grad, "
                                    f"got {p!r}; create parameters with tfl.tensor(..., requires_grad=True)")
        elif not isinstance(p, Variable):
            raise TinyflowError(f"{type(optimizer).__name__} takes Variables (layer.parameters()) or leaf Tensors "
                                f"as parameters, got {p!r}")
    if isinstance(optimizer.lr, Node):
        raise TinyflowError("an eager optimizer needs a number as lr (a graph node has no value outside a Session)")
    optimizer.params = params
    optimizer._eager_slots = [Slot(optimizer, p, i) for i, p in enumerate(params)]
    optimizer._eager_kernels = {}  # (backend, slots with a gradient) -> the kernel updating them


def step(optimizer):
    """Eager mode: update every parameter that has a `.grad`, on the eager backend, with the fused kernels."""
    from ..eager import get_backend
    slots = getattr(optimizer, "_eager_slots", None)
    if slots is None:
        raise TinyflowError(f"{type(optimizer).__name__}.step() is the eager form: create the optimizer with the "
                            f"parameters first, e.g. tfl.optim.{type(optimizer).__name__}(layer.parameters(), "
                            "lr=0.01); in graph mode use train_op = opt.minimize(loss) and sess.run(train_op)")
    backend = get_backend()
    by_dtype = {}
    for slot in slots:
        if slot.param.grad is not None:
            by_dtype.setdefault(slot.variable.dtype, []).append(slot)
    backend.begin_run()
    for ready in by_dtype.values():  # each dtype's updates in one kernel call (one C call on the C backend)
        key = (backend, tuple(ready))
        kernel = optimizer._eager_kernels.get(key)
        if kernel is None:
            ops = [slot.op for slot in ready]
            kernel = backend.kernel(ops[0] if len(ops) == 1 else multi_tensor_update(ops))
            if len(optimizer._eager_kernels) >= 8:  # the set of parameters with gradients keeps changing
                optimizer._eager_kernels.clear()
            optimizer._eager_kernels[key] = kernel
        kernel(*[value for slot in ready for value in slot.values(optimizer.lr)])
        for slot in ready:
            slot.updated()


def zero_grad(optimizer):
    """Eager mode: forget every parameter's gradient (`p.grad = None`), before the next backward()."""
    for p in getattr(optimizer, "params", ()):
        p.grad = None
