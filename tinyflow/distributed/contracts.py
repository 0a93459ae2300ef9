"""Collective contracts: before any data moves, every rank checks that all ranks are making the same call.

Every collective starts with an MPI Allgather of one record per rank: [sequence number, hash of the call
(collective and options), hash of the data (shape, dtype), first dimension]. All ranks see all records and so
reach the same verdict: if the ranks are in different collectives, out of step, or pass arrays of different
shapes or dtypes, every rank raises DistributedError naming each rank's call and where it was made (a second
exchange, on that path only, gathers the descriptions). Without the check MPI returns garbage on one rank and
MPI_ERR_TRUNCATE on another, or hangs. The record costs a few microseconds per call
(benchmarks/collective_contracts.py). A rank that never arrives is the watchdog's business.
"""
import hashlib
import os
import sys

import numpy as np

from .mpi import DistributedError

_counter = [0]   # collectives this process has made (the same on every rank of a correct program)
_hashes = {}     # call or data description -> its 56-bit hash (blake2b: the same in every process)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def calls_made():
    """How many collectives this process has made (the number of the current or last one)."""
    return _counter[0]


def _hash(value):
    found = _hashes.get(value)
    if found is None:
        if len(_hashes) > 4096:
            _hashes.clear()
        found = _hashes[value] = int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=7).digest(),
                                                "little") or 1  # 0 means "no array"
    return found


def agree(comm, name, options="", data=None, first_dim=0, root=None, describe=None):
    """Check that every rank is in this call; the (world × 4) records. DistributedError on every rank if not.

    `data` is a hashable summary of what must match (shape and dtype; None for "no array"); with `root`, ranks
    must match the root's data or pass none. `describe()` phrases this rank's data, for the error message only.
    """
    _counter[0] += 1
    record = np.array((_counter[0], _hash((name, options)), 0 if data is None else _hash(data), first_dim), np.int64)
    records = np.empty((comm.Get_size(), 4), np.int64)
    comm.Allgather(record, records)
    rows = records.tolist()
    reference = rows[root or 0]
    same_call = all(r[0] == reference[0] and r[1] == reference[1] for r in rows)
    if root is None:
        same_data = all(r[2] == reference[2] for r in rows)
    else:
        same_data = reference[2] != 0 and all(r[2] in (0, reference[2]) for r in rows)
    if not (same_call and same_data):
        _disagreement(comm, name, options, root, same_call, describe)
    return records


def _disagreement(comm, name, options, root, same_call, describe):
    """Gather every rank's description of its call and raise the same DistributedError on every rank."""
    data = describe() if describe is not None else ""
    mine = f"{name}({options}){' of ' + data if data else ''} (collective #{_counter[0]}, at {call_site()})"
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


def call_site(frame=None):
    """'file.py:12': the innermost frame outside tinyflow (the user's line that led to a collective)."""
    frame = frame or sys._getframe(1)
    innermost = frame
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    frame = frame or innermost
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"
