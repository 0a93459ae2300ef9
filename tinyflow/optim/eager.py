"""The eager form of every optimizer: `opt = tfl.optim.Adam(params, lr=...)`, `opt.zero_grad()`, `opt.step()`.

A step runs each parameter's fused update op, the same op class and the same
backend kernel (C: one in-place pass) as a graph-mode train op, on the
gradient `backward()` left in `.grad`. The update op and the slot Variables
(Adam's moments, ...) are built once per parameter, so the optimizer state is
made of Variables as in graph mode (and `tfl.save_variables` saves it).
Parameters are Variables (what `layer.parameters()` returns) or leaf Tensors.
"""
import numpy as np

from ..errors import TinyflowError
from ..nodes import Node, Placeholder, Variable


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
        self._kernels = {}

    def kernel(self, backend):
        """The backend's kernel for this update op (built once per backend)."""
        kernel = self._kernels.get(backend)
        if kernel is None:
            kernel = self._kernels[backend] = backend.kernel(self.op)
        return kernel

    def apply(self, backend, lr):
        """Update the parameter with its `.grad` (no-op when it has none)."""
        grad = self.param.grad
        if grad is None:
            return
        var, param = self.variable, self.param
        if param is not var and param.numpy() is not var.host_array:
            var.value = param.numpy()  # the Tensor got a new value since the last step (e.g. in no_grad)
        backend.begin_run()
        kernel = self.kernel(backend)
        kernel(var.value, np.asarray(grad, var.dtype), np.asarray(lr, var.dtype),
               *[slot.value for slot in self.op.variables[1:]])
        mirror = var.device_mirror
        if mirror is not None and not mirror.host_stale:  # a host kernel changed the array in place: the device
            mirror.device_stale = True                    # copy an OpenCL session keeps is the old value now
        from ..eager.runtime import tick
        if param is not var:
            param._data = var.value
            param._version = tick()  # changed in place: graphs that saved it must not backprop through it
        elif var.__dict__.get("_eager_leaf") is not None:
            var._eager_leaf._version = tick()


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


def step(optimizer):
    """One update of every parameter that has a gradient, on the eager backend."""
    from ..eager import get_backend
    slots = getattr(optimizer, "_eager_slots", None)
    if slots is None:
        raise TinyflowError(f"{type(optimizer).__name__}.step() is the eager form: create the optimizer with the "
                            f"parameters first, e.g. tfl.optim.{type(optimizer).__name__}(layer.parameters(), "
                            "lr=0.01); in graph mode use train_op = opt.minimize(loss) and sess.run(train_op)")
    backend = get_backend()
    for slot in slots:
        slot.apply(backend, optimizer.lr)


def zero_grad(optimizer):
    """Forget the gradients of every parameter (`p.grad = None`), before the next backward()."""
    for p in getattr(optimizer, "params", ()):
        p.grad = None
