"""tinyflow: a small, readable TensorFlow-1-style deep-learning framework. Build a graph of nodes, run it in a
Session, let an optimizer backpropagate. The public API is what is imported below, and the subpackages."""
import importlib
import types

from . import backends, data, nn, optim, plot, viz
from . import distributed
from .autodiff import gradients, not_differentiable, register_gradient
from .checkpoint import load_variables, save_variables
from .errors import (BackendError, CheckpointError, ExecutionError, FeedError, GradientError, GraphError,
                     ShapeError, TinyflowError, ArgumentError)
from .graph import Graph, get_default_graph, name_scope, reset_default_graph
from .nodes import Constant, Node, Operation, Placeholder, Variable
from .ops import (add_n, argmax, avg_pool2d, assign, assign_add, assign_sub, concat, conv2d, dropout, group, identity, log_softmax, matmul, max_pool2d, reduce_max, reduce_mean, reduce_sum, reshape, softmax, stop_gradient, transpose)
from .ops import (fill, shape, size)
from .ops import (argmin, broadcast_to, einsum, expand, flatten, gather, norm, pad, reduce_logsumexp, reduce_min, reduce_prod, split, squeeze, stack, take_along_axis, tile, topk, tril, triu, unsqueeze)
from .ops import (all, any, cumprod, cumsum, diag, flip, logsumexp, masked_fill, max, min, one_hot, outer,  # noqa: A004
                  repeat_interleave, roll, std, var)
from .ops import (avg_pool1d, avg_pool3d, conv1d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, global_avg_pool, global_max_pool, group_norm, instance_norm, interpolate, layer_norm, max_pool1d, max_pool3d)
from .nn.norm_layers import batch_norm
from .ops.elementwise_ops import PUBLIC as _ELEMENTWISE, elementwise_op

globals().update(_ELEMENTWISE)  # add, exp, relu, ..., silu: the functions of the elementwise table
from . import shapes
from .model import get_metric
from .model import EarlyStopping, History, Model
from .random import set_seed
from .session import Session
from . import jit, onnx
from .control_flow import cond, range, while_loop  # noqa: A004 - tfl.range, as Python's for Python ints
from . import eager
from .eager import Tensor, arange, enable_grad, eye, full, linspace, no_grad, tensor
from . import passes  # the graph optimiser Session runs (tinyflow/passes; fused kernels in tinyflow/backends)

__version__ = "0.1.0"


def __getattr__(name):
    """tfl.board, imported when first named: it brings http.server, ssl and email, a sixth of what `import tinyflow`
    took (Model.fit(log_dir=...) imports what it needs of it itself)."""
    if name == "board":
        return importlib.import_module(f"{__name__}.board")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    """The package's names, tfl.board included before its import (for tab completion)."""
    return sorted(set(globals()) | {"board"})


# the public API: every function, class and error imported above (the elementwise table's ops too), and the
# subpackages
__all__ = [name for name, value in globals().items()
           if not name.startswith("_") and not isinstance(value, types.ModuleType)]
__all__ += ["nn", "optim", "backends", "data", "plot", "viz", "jit", "onnx", "distributed", "eager", "passes",
            "board"]
