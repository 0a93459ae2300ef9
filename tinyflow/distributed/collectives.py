"""Collectives on numpy arrays: barrier, all_reduce, broadcast, all_gather (MPI's buffer interface).

Buffer-based calls send the array's memory as it is (no pickling), and reduce in place
when the array allows it, as Horovod and torch.distributed do.
"""
from collections import Counter

import numpy as np

from .runtime import DistributedError, _state, communicator, guarded

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
        comm.Barrier()
    _calls["barrier"] += 1


def all_reduce(array, op="sum"):
    """The element-wise sum/mean/max/min of `array` over all processes, as a numpy array on every process.

    A writable C-contiguous numpy array is reduced in place and returned (integer arrays
    averaged with "mean" come back as a new float64 array); anything else is copied first.
    """
    if op not in REDUCE_OPS:
        raise DistributedError(f"all_reduce op must be one of {REDUCE_OPS}, got {op!r}")
    comm = communicator()
    buffer = _as_buffer(array, "all_reduce")
    MPI = _state.MPI
    mpi_op = MPI.MAX if op == "max" else MPI.MIN if op == "min" else MPI.SUM
    with guarded("all_reduce", buffer):
        comm.Allreduce(MPI.IN_PLACE, buffer, op=mpi_op)
    _count("all_reduce", buffer)
    if op == "mean":
        size = comm.Get_size()
        if buffer.dtype.kind == "f":
            buffer /= buffer.dtype.type(size)
        else:
            buffer = buffer / size
    return buffer


def _same_everywhere(comm, local, what, describe):
    """All ranks' `local` values; DistributedError on every rank when they differ."""
    values = comm.allgather(local)
    if any(v != values[0] for v in values):
        listing = ", ".join(f"rank {r}: {describe(v)}" for r, v in enumerate(values))
        raise DistributedError(f"{what} needs the same on every process, got {listing}. "
                               "Every process must build the same model and pass arrays of one shape.")
    return values[0]


def broadcast(array, root=0):
    """Rank `root`'s array on every process; others may pass an array of the same shape or None.

    The array is overwritten in place where possible and returned.
    """
    comm = communicator()
    size = comm.Get_size()
    if not 0 <= root < size:
        raise DistributedError(f"broadcast root {root} is not a rank of this {size}-process group")
    is_root = comm.Get_rank() == root
    if is_root or array is not None:
        buffer = _as_buffer(array, "broadcast")
        local = (buffer.shape, buffer.dtype.str)
    else:
        buffer, local = None, None
    with guarded("broadcast"):
        metas = comm.allgather(local)
    shape, dtype = metas[root] if metas[root] is not None else (None, None)
    if shape is None:
        raise DistributedError(f"broadcast: the root rank {root} passed None; it must pass the array to send")
    wrong = {r: m for r, m in enumerate(metas) if m is not None and m != metas[root]}
    if wrong:
        listing = ", ".join(f"rank {r}: shape {m[0]} {np.dtype(m[1])}" for r, m in wrong.items())
        raise DistributedError(f"broadcast from rank {root} of shape {shape} {np.dtype(dtype)}: {listing} passed "
                               "a different array. Pass an array of the root's shape and dtype, or None.")
    if buffer is None:
        buffer = np.empty(shape, np.dtype(dtype))
    with guarded("broadcast", buffer):
        comm.Bcast(buffer, root=root)
    _count("broadcast", buffer)
    return buffer


def all_gather(array):
    """Every process's array concatenated along axis 0 in rank order (first dimensions may differ).

    A scalar (0-d array) from each process gives a vector of `world_size()` values.
    """
    comm = communicator()
    buffer = _as_buffer(array, "all_gather")
    if buffer.ndim == 0:
        buffer = buffer.reshape(1)
    with guarded("all_gather"):
        metas = comm.allgather((buffer.shape, buffer.dtype.str))
    tails = {(shape[1:], dtype) for shape, dtype in metas}
    if len(tails) > 1:
        listing = ", ".join(f"rank {r}: {shape} {np.dtype(dtype)}" for r, (shape, dtype) in enumerate(metas))
        raise DistributedError(f"all_gather needs arrays with the same dtype and trailing dimensions on every "
                               f"process (only the first dimension may differ), got {listing}")
    counts = [int(np.prod(shape)) for shape, _ in metas]
    out = np.empty((sum(shape[0] for shape, _ in metas),) + buffer.shape[1:], buffer.dtype)
    displacements = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    with guarded("all_gather", buffer):
        comm.Allgatherv(buffer, [out, (counts, displacements)])
    _count("all_gather", out)
    return out


def broadcast_object(value, root=0):
    """Rank `root`'s picklable Python value on every process (small things: seeds, flags, dicts)."""
    comm = communicator()
    with guarded("broadcast_object"):
        result = comm.bcast(value, root=root)
    _calls["broadcast_object"] += 1
    return result
