"""Collectives on numpy arrays (MPI's buffer interface, in place where possible, no pickling), each under the
watchdog and checked first by `agree`: ranks in different collectives, out of step, or passing arrays of different
shapes or dtypes all raise the same DistributedError naming each rank's call, where MPI would return garbage or hang."""
import functools
import hashlib
import math
from collections import Counter

import numpy as np

from ..arguments import is_int
from ..nodes.node import site_text, user_site
from .mpi import DistributedError, _state, communicator
from .watchdog import guarded

REDUCE_OPS = ("sum", "mean", "max", "min")

_calls, _bytes = Counter(), Counter()


def communication_stats():
    """{collective name: {"calls": n, "bytes": b}} counted in this process since it started."""
    return {name: {"calls": _calls[name], "bytes": _bytes[name]} for name in sorted(_calls)}


@functools.lru_cache(maxsize=4096)
def _hash(value):
    """A call's or data description's 56-bit hash, the same in every process (blake2b); never 0 ("no array")."""
    return int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=7).digest(), "little") or 1


def agree(comm, name, options="", data=None, first_dim=0, root=None, describe=None):
    """The (world × 4) records of this call (None for one process); DistributedError, worded by `describe()`, on every
    rank unless all make it with the same `data` (hashable shape and dtype; None: no array, allowed beside a root's)."""
    if comm.Get_size() == 1:
        return None
    _state.collectives += 1
    record = np.array((_state.collectives, _hash((name, options)), 0 if data is None else _hash(data), first_dim),
                      np.int64)
    records = np.empty((comm.Get_size(), 4), np.int64)
    comm.Allgather(record, records)
    rows = records.tolist()
    reference = rows[root or 0]
    same_call = all(r[0] == reference[0] and r[1] == reference[1] for r in rows)
    same_data = (all(r[2] == reference[2] for r in rows) if root is None
                 else reference[2] != 0 and all(r[2] in (0, reference[2]) for r in rows))
    if not (same_call and same_data):
        _disagreement(comm, name, options, root, same_call, describe)
    return records


def _disagreement(comm, name, options, root, same_call, describe):
    """Gather every rank's description of its call and raise the same DistributedError on every rank."""
    data = describe() if describe is not None else ""
    site = site_text(user_site(1))
    mine = f"{name}({options}){' of ' + data if data else ''} (collective #{_state.collectives}, at {site})"
    listing = "; ".join(f"rank {r}: {text}" for r, text in enumerate(comm.allgather(mine)))
    if not same_call:
        raise DistributedError(
            f"the processes are not making the same collective call: {listing}. Every process must call the "
            "same collectives, with the same options, in the same order (look for a collective inside an "
            "`if rank == ...` branch, or a loop that runs a different number of times on some ranks).")
    if root is not None:
        raise DistributedError(
            f"{name} from rank {root} needs every other rank to pass an array of the root's shape and dtype, or "
            f"None: {listing}. Pass the root's shape and dtype (or None), and make sure rank {root} passes its array.")
    if name in ("DistributedOptimizer", "broadcast_variables"):
        advice = "Every process must build the same model: the same variables, in the same order and shapes."
    else:
        advice = ("A rank-dependent slice or batch size is the usual cause: give every process an array of one "
                  f"shape and dtype{' (only the first dimension may differ)' if name == 'all_gather' else ''}.")
    raise DistributedError(f"{name} needs the same shape and dtype on every process: {listing}. {advice}")


def _as_buffer(array, what):
    """`array` itself when MPI can use its memory in place, else a contiguous copy; checks the dtype."""
    result = array if isinstance(array, np.ndarray) else np.array(array)
    if result.dtype.kind not in "fiu" or result.dtype.itemsize < 4 and result.dtype.kind == "f":
        raise DistributedError(f"{what} works on integer and float32/float64 arrays, got dtype {result.dtype}; "
                               "cast the array first, e.g. array.astype(np.float32)")
    if not (result.flags.c_contiguous and result.flags.writeable):
        result = np.ascontiguousarray(result).copy()
    return result


def _counted(name, array=None):
    _calls[name] += 1
    _bytes[name] += 0 if array is None else array.nbytes


def barrier():
    """Wait until every process reaches this call."""
    comm = communicator()
    with guarded("barrier"):
        agree(comm, "barrier")  # every rank's record is needed before any rank goes on: a barrier
    _counted("barrier")


def all_reduce(array, op="sum"):
    """The element-wise sum/mean/max/min of `array` over all processes, in place for a writable C-contiguous array."""
    if op not in REDUCE_OPS:
        raise DistributedError(f"all_reduce op must be one of {REDUCE_OPS}, got {op!r}")
    buffer = _as_buffer(array, "all_reduce")
    return reduce_checked(buffer, op, "all_reduce", f"op={op!r}", (buffer.shape, buffer.dtype.str),
                          lambda: f"shape {buffer.shape} {buffer.dtype}")


def reduce_checked(buffer, op, name, options, data, describe):
    """all_reduce of a contiguous `buffer` (in place), checked as the call `name` (see `agree`)."""
    comm, MPI = communicator(), _state.MPI
    with guarded(name, buffer):
        agree(comm, name, options, data, describe=describe)
        comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.MAX if op == "max" else MPI.MIN if op == "min" else MPI.SUM)
    _counted("all_reduce", buffer)
    if op == "mean":  # in place for floats; integers give a new float64 array
        buffer = np.true_divide(buffer, comm.Get_size(), out=buffer if buffer.dtype.kind == "f" else None)
    return buffer


def _check_root(comm, root, what):
    """The group's size; DistributedError unless `root` is one of its ranks."""
    size = comm.Get_size()
    if not is_int(root) or not 0 <= root < size:
        raise DistributedError(f"{what} root {root!r} is not a rank of this {size}-process group; pass an int in "
                               f"0..{size - 1}")
    return size


def broadcast(array, root=0):
    """Rank `root`'s array on every process (in place where possible); the others pass an array of its shape or None."""
    comm = communicator()
    size = _check_root(comm, root, "broadcast")
    if comm.Get_rank() == root and array is None and size == 1:  # with others, the contract check raises on all
        raise DistributedError(f"broadcast: this process is the root (rank {root}), so it must pass the array to "
                               "send; the other processes may pass None")
    buffer = _as_buffer(array, "broadcast") if array is not None else None
    with guarded("broadcast", buffer):
        data = None if buffer is None else (buffer.shape, buffer.dtype.str)
        records = agree(comm, "broadcast", f"root={root}", data, root=root,
                        describe=lambda: "None" if buffer is None else f"shape {buffer.shape} {buffer.dtype}")
        if records is not None and (records[:, 2] == 0).any():  # a rank passed None: it learns the root's array's
            shape, dtype = comm.bcast(data, root=root)
            if buffer is None:
                buffer = np.empty(shape, np.dtype(dtype))
        comm.Bcast(buffer, root=root)
    _counted("broadcast", buffer)
    return buffer


def all_gather(array):
    """Every process's array concatenated along axis 0 in rank order (first dimensions may differ)."""
    comm = communicator()
    buffer = np.atleast_1d(_as_buffer(array, "all_gather"))  # a scalar: a vector of one
    with guarded("all_gather", buffer):
        if comm.Get_size() == 1:
            out = buffer.copy()
        else:
            records = agree(comm, "all_gather", "", (buffer.shape[1:], buffer.dtype.str), first_dim=buffer.shape[0],
                            describe=lambda: f"shape {buffer.shape} {buffer.dtype}")
            counts = [first * math.prod(buffer.shape[1:]) for first in records[:, 3].tolist()]
            out = np.empty((int(records[:, 3].sum()),) + buffer.shape[1:], buffer.dtype)
            displacements = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            comm.Allgatherv(buffer, [out, (counts, displacements)])
    _counted("all_gather", out)
    return out


def broadcast_object(value, root=0):
    """Rank `root`'s picklable Python value on every process (small things: seeds, flags, dicts)."""
    comm = communicator()
    _check_root(comm, root, "broadcast_object")
    with guarded("broadcast_object"):
        agree(comm, "broadcast_object", f"root={root}")
        result = comm.bcast(value, root=root)
    _counted("broadcast_object")
    return result
