"""Collectives on numpy arrays: barrier, all_reduce, broadcast, all_gather (MPI's buffer interface).

Buffer-based calls send the array's memory as it is (no pickling), in place where the array allows it, as
Horovod and torch.distributed do. Each call first checks that every rank makes the same call with the same
shapes and dtypes (contracts.py), and runs under the watchdog (watchdog.py).
"""
import math
from collections import Counter

import numpy as np

from .contracts import agree
from .mpi import DistributedError, _state, communicator
from .watchdog import guarded

REDUCE_OPS = ("sum", "mean", "max", "min")

_calls, _bytes = Counter(), Counter()


def communication_stats():
    """{collective name: {"calls": n, "bytes": b}} counted in this process since it started."""
    return {name: {"calls": _calls[name], "bytes": _bytes[name]} for name in sorted(_calls)}


def _count(name, array):
    _calls[name] += 1
    _bytes[name] += array.nbytes


def _as_buffer(array, what):
    """`array` itself when MPI can use its memory in place, else a contiguous copy; checks the dtype."""
    result = array if isinstance(array, np.ndarray) else np.array(array)
    if result.dtype.kind not in "fiu" or result.dtype.itemsize < 4 and result.dtype.kind == "f":
        raise DistributedError(f"{what} works on integer and float32/float64 arrays, got dtype {result.dtype}; "
                               "cast the array first, e.g. array.astype(np.float32)")
    if not (result.flags.c_contiguous and result.flags.writeable):
        result = np.ascontiguousarray(result).copy()
    return result


def barrier():
    """Wait until every process reaches this call."""
    comm = communicator()
    with guarded("barrier"):
        if comm.Get_size() > 1:
            agree(comm, "barrier")  # every rank's record is needed before any rank goes on: a barrier
    _calls["barrier"] += 1


def all_reduce(array, op="sum"):
    """The element-wise sum/mean/max/min of `array` over all processes, as a numpy array on every process.

    A writable C-contiguous numpy array is reduced in place and returned (integer arrays averaged with "mean"
    come back as a new float64 array); anything else is copied first.
    """
    if op not in REDUCE_OPS:
        raise DistributedError(f"all_reduce op must be one of {REDUCE_OPS}, got {op!r}")
    buffer = _as_buffer(array, "all_reduce")
    return reduce_checked(buffer, op, "all_reduce", f"op={op!r}", (buffer.shape, buffer.dtype.str),
                          lambda: f"shape {buffer.shape} {buffer.dtype}")


def reduce_checked(buffer, op, name, options, data, describe):
    """all_reduce of a contiguous `buffer` (in place), checked as the call `name` (see contracts.agree)."""
    comm = communicator()
    MPI = _state.MPI
    mpi_op = MPI.MAX if op == "max" else MPI.MIN if op == "min" else MPI.SUM
    size = comm.Get_size()
    with guarded(name, buffer):
        if size > 1:
            agree(comm, name, options, data, describe=describe)
        comm.Allreduce(MPI.IN_PLACE, buffer, op=mpi_op)
    _count("all_reduce", buffer)
    if op == "mean":
        if buffer.dtype.kind == "f":
            buffer /= buffer.dtype.type(size)
        else:
            buffer = buffer / size
    return buffer


def broadcast(array, root=0):
    """Rank `root`'s array on every process (overwriting theirs in place where possible); others may pass an array
    of the same shape or None."""
    comm = communicator()
    size = comm.Get_size()
    if not 0 <= root < size:
        raise DistributedError(f"broadcast root {root} is not a rank of this {size}-process group")
    is_root = comm.Get_rank() == root
    if is_root and array is None and size == 1:  # with others, the contract check raises on every rank
        raise DistributedError(f"broadcast: this process is the root (rank {root}), so it must pass the array to "
                               "send; the other processes may pass None")
    buffer = _as_buffer(array, "broadcast") if array is not None else None
    with guarded("broadcast", buffer):
        if size > 1:
            data = None if buffer is None else (buffer.shape, buffer.dtype.str)
            records = agree(comm, "broadcast", f"root={root}", data, root=root,
                            describe=lambda: "None" if buffer is None else f"shape {buffer.shape} {buffer.dtype}")
            if (records[:, 2] == 0).any():  # some rank passed None: it learns the root's shape and dtype
                shape, dtype = comm.bcast(None if buffer is None else (buffer.shape, buffer.dtype.str), root=root)
                if buffer is None:
                    buffer = np.empty(shape, np.dtype(dtype))
        comm.Bcast(buffer, root=root)
    _count("broadcast", buffer)
    return buffer


def all_gather(array):
    """Every process's array concatenated along axis 0 in rank order (first dimensions may differ; a scalar from
    each process gives a vector of `world_size()` values)."""
    comm = communicator()
    buffer = _as_buffer(array, "all_gather")
    if buffer.ndim == 0:
        buffer = buffer.reshape(1)
    with guarded("all_gather", buffer):
        if comm.Get_size() == 1:
            out = buffer.copy()
        else:
            records = agree(comm, "all_gather", "", (buffer.shape[1:], buffer.dtype.str), first_dim=buffer.shape[0],
                            describe=lambda: f"shape {buffer.shape} {buffer.dtype}")
            firsts = records[:, 3].tolist()
            row = math.prod(buffer.shape[1:])
            out = np.empty((sum(firsts),) + buffer.shape[1:], buffer.dtype)
            counts = [first * row for first in firsts]
            displacements = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            comm.Allgatherv(buffer, [out, (counts, displacements)])
    _count("all_gather", out)
    return out


def broadcast_object(value, root=0):
    """Rank `root`'s picklable Python value on every process (small things: seeds, flags, dicts)."""
    comm = communicator()
    with guarded("broadcast_object"):
        if comm.Get_size() > 1:
            agree(comm, "broadcast_object", f"root={root}")
        result = comm.bcast(value, root=root)
    _calls["broadcast_object"] += 1
    return result
