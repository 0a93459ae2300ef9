"""Eager mode: Tensors that compute at once, with PyTorch-style autograd, on the graph's own ops.

    t = tfl.tensor(np.ones((2, 3)), requires_grad=True)
    y = (t * 2 + t).sum(); y.backward(); t.grad        # 3s

The op classes, their kernels and their registered gradient functions are the
graph mode's: `Operation` hands ops whose inputs are Tensors to the runtime here.
"""
from . import inplace  # noqa: F401 - installs add_, mul_, ..., x[idx] = v on Tensor
from .autograd import LeafGradFn, backward, grad, next_functions
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .runtime import get_backend, set_backend
from .tensor import Tensor, arange, eye, full, linspace, tensor

__all__ = ["Tensor", "tensor", "arange", "linspace", "eye", "full", "no_grad", "enable_grad", "is_grad_enabled", "grad",
           "backward", "set_backend", "get_backend", "LeafGradFn", "next_functions"]
