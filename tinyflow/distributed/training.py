"""Data-parallel training: DistributedOptimizer averages the gradients of every process's shard (the whole batch's
gradient, so all processes stay identical), packed in one all_reduce per step (Horovod's "tensor fusion"), and
broadcast_variables starts them all from rank 0's state.

Model.fit(distributed=True) (DataParallel) deals each epoch's shared order out as order[rank::world], cut to a
multiple of the world size, so the k-th batches of all processes are the k-th batch of batch_size × world_size
(the n % world_size rows left sit out that epoch); moving statistics are averaged after every epoch, so all
processes evaluate and checkpoint alike."""
import math

import numpy as np

from ..eager import Tensor, no_grad
from ..graph import get_default_graph
from ..nodes import Operation
from ..ops.array_ops import reshape
from ..ops.elementwise_ops import cast
from ..ops.registry import not_differentiable
from ..ops.shape_ops import split
from .collectives import agree, all_reduce, broadcast, broadcast_object, reduce_checked
from .mpi import DistributedError, communicator, init, rank, world_size


def _signature(params):
    """What every process must agree on: each parameter's shape and dtype (the same total size is not enough)."""
    return tuple((tuple(map(int, p.shape)), np.dtype(p.dtype).str) for p in params)


def _names(variables):
    """Each parameter's name ("tensor 3" for an eager Tensor, which has none)."""
    return [getattr(v, "name", f"tensor {i}") for i, v in enumerate(variables)]


def _summary(variables):
    """'3 variables: w (5, 8) float64, b (8,) float64, ...' for messages about models that differ."""
    parts = [f"{name} {tuple(v.shape)} {np.dtype(v.dtype)}" for name, v in zip(_names(variables), variables)]
    shown = ", ".join(parts[:8]) + (f", ... ({len(parts) - 8} more)" if len(parts) > 8 else "")
    return f"{len(parts)} variable{'s' * (len(parts) != 1)}: {shown}"


class AllReduceGradients(Operation):
    """All gradients of a step raveled into one flat buffer, averaged over processes in one all_reduce."""

    def __init__(self, grads, variables, name=None):
        self.shapes = [v.shape for v in variables]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.pack_dtype = np.result_type(*[v.dtype for v in variables])
        self.signature, self.summary = _signature(variables), _summary(variables)
        super().__init__(*grads, name=name)

    def infer_shape(self, *grad_shapes):
        return (sum(self.sizes),)

    def infer_dtype(self, *grad_dtypes):
        return self.pack_dtype

    def compute(self, *grads):
        flat = pack([np.broadcast_to(grad, shape) for grad, shape in zip(grads, self.shapes)], self.pack_dtype)
        return reduce_checked(flat, "mean", "DistributedOptimizer", "gradients", self.signature, lambda: self.summary)


not_differentiable(AllReduceGradients)


def pack(arrays, dtype):
    """One flat `dtype` buffer of the arrays raveled in turn."""
    return np.concatenate([np.ravel(a) for a in arrays], dtype=dtype, casting="unsafe")


def unpack(flat, shapes):
    """The parts of a packed buffer, reshaped to `shapes`."""
    parts = np.split(flat, np.cumsum([math.prod(shape) for shape in shapes])[:-1])
    return [part.reshape(shape) for part, shape in zip(parts, shapes)]


def exchange_packed(variables, exchange):
    """Per dtype, one `exchange(flat buffer)` of the variables' (or eager Tensors') values, written back."""
    groups = {}
    for var in variables:
        groups.setdefault(np.dtype(var.dtype).str, []).append(var)
    for dtype, group in sorted(groups.items()):
        flat = exchange(pack([np.asarray(v.numpy() if isinstance(v, Tensor) else v.value) for v in group], dtype))
        for var, value in zip(group, unpack(flat, [tuple(v.shape) for v in group])):
            if isinstance(var, Tensor):  # an eager leaf: in place, outside autograd
                with no_grad():
                    var[...] = value
            else:
                var.value = value


def average_gradients(parameters):
    """Average the `.grad`s of `parameters` (Variables or eager Tensors) over processes in one all_reduce; each gets
    a new array (backward's may be shared with other tensors)."""
    # every parameter has a slot in the packed buffer (zeros when its grad is None) plus one flag, so the buffer
    # has the same size on every process, and a gradient on some processes only is found by every process
    parameters = list(parameters)
    if not parameters:
        return
    dtype = np.result_type(*[p.dtype for p in parameters])
    shapes = [tuple(p.shape) for p in parameters]
    grads = [np.zeros(shape, dtype) if p.grad is None else np.asarray(p.grad) for p, shape in zip(parameters, shapes)]
    flat = pack(grads + [[p.grad is not None for p in parameters]], dtype)
    reduce_checked(flat, "mean", "DistributedOptimizer", "gradients", _signature(parameters),
                   lambda: _summary(parameters))
    *parts, flags = unpack(flat, shapes + [(len(parameters),)])
    for i, (param, part, flag) in enumerate(zip(parameters, parts, flags)):
        if flag != 0 and flag != 1:
            raise DistributedError(
                f"parameter {i} (shape {tuple(param.shape)}) has a gradient on {flag * world_size():.0f} of "
                f"{world_size()} processes: every process must compute gradients for the same parameters "
                "(run the same model and loss on every process, and zero_grad() on all of them)")
        if flag == 1:
            param.grad = part.astype(param.dtype, copy=False)


class DistributedOptimizer:
    """Wraps an optimizer so each step applies the gradient averaged over all processes; the rest is the optimizer's."""

    def __init__(self, optimizer):
        if isinstance(optimizer, DistributedOptimizer):
            raise DistributedError("this optimizer is already a DistributedOptimizer; wrap the plain optimizer once")
        if not hasattr(optimizer, "apply_gradients"):
            raise DistributedError(f"DistributedOptimizer wraps a tfl.optim optimizer, got {optimizer!r}; pass e.g. "
                                   "tfl.optim.SGD(0.1)")
        self.optimizer = optimizer

    def __getattr__(self, name):
        return getattr(self.__dict__["optimizer"], name)

    def __repr__(self):
        return f"DistributedOptimizer({self.optimizer!r})"

    def compute_gradients(self, loss, var_list=None):
        """[(averaged gradient node or None, variable)]: the wrapped optimizer's gradients, all-reduced."""
        communicator()  # fail at graph-building time, not mid-run, when init() was forgotten
        pairs = self.optimizer.compute_gradients(loss, var_list)
        present = [(g, v) for g, v in pairs if g is not None]
        if not present:
            return pairs
        graph = present[0][1].graph
        with graph.role("optimizer"), graph.name_scope("DistributedOptimizer"):
            flat = AllReduceGradients([g for g, _ in present], [v for _, v in present], name="all_reduce_gradients")
            averaged = {var: cast(reshape(part, var.shape, name=f"grad_{var.name}"), var.dtype)
                        for part, (_, var) in zip(split(flat, flat.sizes), present)}
        return [(averaged.get(v) if g is not None else None, v) for g, v in pairs]

    def minimize(self, loss, var_list=None, name=None):
        """compute_gradients (averaged over processes) then the wrapped optimizer's apply_gradients."""
        return self.optimizer.apply_gradients(self.compute_gradients(loss, var_list), name=name)

    def step(self, *args, **kwargs):
        """Eager mode: average every parameter's .grad across processes (one all_reduce), then step."""
        params = getattr(self.optimizer, "params", None)  # set by Optimizer(params, lr=...)
        if params is None:
            raise DistributedError(f"{self.optimizer!r} has no parameters: DistributedOptimizer.step() needs an eager "
                                   "optimizer built as Optimizer(layer.parameters(), lr=...); graph optimizers use "
                                   "minimize()")
        average_gradients(params)
        return self.optimizer.step(*args, **kwargs)


def broadcast_variables(graph=None, root=0):
    """Set every Variable of the graph (or of a list of Variables / eager leaf Tensors) to rank `root`'s values,
    one broadcast per dtype; a model that differs between processes raises DistributedError on every process."""
    variables = list(graph) if isinstance(graph, (list, tuple)) else sorted(
        (graph if graph is not None else get_default_graph()).variables(), key=lambda v: v.name)
    agree(communicator(), "broadcast_variables", f"root={root}", tuple(zip(_names(variables), _signature(variables))),
          describe=lambda: _summary(variables))
    exchange_packed(variables, lambda flat: broadcast(flat, root=root))


class DataParallel:
    """This process's place in a data-parallel fit (a group of one when not distributed)."""

    def __init__(self, enabled):
        self.enabled = bool(enabled)
        if self.enabled:
            init()
        self.rank, self.world = (rank(), world_size()) if self.enabled else (0, 1)
        self.is_chief = self.rank == 0  # it shows progress and writes checkpoints

    def shard(self, order):
        """This process's equal share of `order` (all of it for one process)."""
        if self.world == 1:
            return order
        if len(order) < self.world:
            raise DistributedError(f"{len(order)} samples cannot be shared by {self.world} processes: "
                                   "every process needs at least one; use fewer processes or more data")
        return order[:len(order) - len(order) % self.world][self.rank::self.world]

    def agree(self, value):
        """Rank 0's value of a small Python object, on every process."""
        return broadcast_object(value) if self.enabled else value

    def total(self, values):
        """Element-wise sums over processes of a list of numbers."""
        values = np.asarray(values, np.float64)
        return all_reduce(values, "sum") if self.enabled else values

    def average_statistics(self, graph):
        """Average the graph's float moving statistics (non-trainable, non-optimizer Variables) over processes."""
        if not self.enabled:
            return
        stats = [v for v in graph.variables() if not v.trainable and v.role != "optimizer" and v.dtype.kind == "f"]
        exchange_packed(stats, lambda flat: all_reduce(flat, "mean"))

    def mean_logs(self, logs):
        """Each value averaged over processes (equal shards: the mean of per-shard metrics)."""
        if not self.enabled or not logs:
            return logs
        keys = sorted(logs)
        means = all_reduce(np.array([logs[k] for k in keys], np.float64), "mean")
        return {k: float(v) for k, v in zip(keys, means)}
