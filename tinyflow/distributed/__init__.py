"""Data parallelism over MPI (mpi4py): every process runs the same script (`tinyflow launch -n 2 script.py`) on its
shard of the data, gradients averaged by DistributedOptimizer (docs/distributed.md). init() imports mpi4py, so
`import tinyflow` never needs MPI."""
from .collectives import (REDUCE_OPS, all_gather, all_reduce, barrier, broadcast, broadcast_object,
                          communication_stats)
from .mpi import DistributedError, init, is_initialized, library_version, rank, world_size
from .training import DistributedOptimizer, average_gradients, broadcast_variables

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "all_reduce", "broadcast", "all_gather",
           "broadcast_object", "DistributedOptimizer", "broadcast_variables", "average_gradients",
           "communication_stats", "library_version", "DistributedError", "REDUCE_OPS"]
