"""What Model.fit(distributed=True) needs: this process's shard of the data and agreement between processes.

Sharding: each epoch's order (a permutation shared by every process, or 0..n-1) is cut to a multiple of the
world size and dealt out as order[rank::world], so the k-th batches of all processes together are exactly the
k-th batch of one process using batch_size × world_size. The n % world_size rows at the end of the order sit
out that epoch (with shuffling, different rows every epoch). Moving statistics (batch norm), updated by each
process from its own batches, are averaged after every epoch, so all processes evaluate and checkpoint alike.
"""
import numpy as np

from .collectives import all_reduce, broadcast_object
from .mpi import DistributedError, init, rank, world_size
from .training import exchange_packed


class DataParallel:
    """This process's place in a data-parallel fit (a group of one when not distributed)."""

    def __init__(self, enabled):
        self.enabled = bool(enabled)
        if self.enabled:
            init()
        self.rank, self.world = (rank(), world_size()) if self.enabled else (0, 1)

    @property
    def is_chief(self):
        """Rank 0 shows progress and writes checkpoints."""
        return self.rank == 0

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
