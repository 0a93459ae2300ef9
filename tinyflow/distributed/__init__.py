"""Data parallelism over MPI (mpi4py): every process runs the same script on its shard of the data.

    import tinyflow as tfl
    tfl.distributed.init()                     # launch: tinyflow launch -n 2 script.py
    opt = tfl.distributed.DistributedOptimizer(tfl.optim.SGD(0.1))
    train = opt.minimize(loss)                 # gradients averaged over processes each step
    tfl.distributed.broadcast_variables()      # every process starts from rank 0's parameters

mpi4py is imported by init(), so `import tinyflow` never needs MPI.
"""
from .collectives import (REDUCE_OPS, all_gather, all_reduce, barrier, broadcast, broadcast_object,
                          communication_stats)
from .mpi import (DistributedError, init, is_initialized, launcher_rank, launcher_world_size, library_version,
                      rank, world_size)
from .training import DistributedOptimizer, average_gradients, broadcast_variables

__all__ = [
    "init", "is_initialized", "rank", "world_size", "barrier", "all_reduce", "broadcast", "all_gather",
    "broadcast_object",
    "DistributedOptimizer", "broadcast_variables", "average_gradients", "communication_stats",
    "library_version", "launcher_rank", "launcher_world_size", "DistributedError", "REDUCE_OPS",
]
