"""What Model.fit(distributed=True) needs: this process's shard of the data and agreement between processes.

Sharding: each epoch's order (a permutation shared by every process, or 0..n-1 without
shuffling) is cut to a multiple of the world size and dealt out as order[rank::world].
So every process gets the same number of rows, and the k-th batches of all processes
together are exactly the k-th batch of a single process using batch_size × world_size.
The n % world_size rows at the end of the order are left out of that epoch; with
shuffling they are different rows every epoch, without shuffling the same last rows.

Moving statistics (batch norm) are updated by each process from its own batches; they are
averaged over processes after every epoch, so all processes evaluate, and checkpoint, alike.
"""
import numpy as np

from .collectives import all_reduce, broadcast_object
from .runtime import DistributedError, init, rank, world_size


class DataParallel:
    """This process's place in a data-parallel fit (a group of one when not distributed)."""

    def __init__(self, enabled):
        self.enabled = bool(enabled)
        if self.enabled:
            init()
        self.rank = rank() if self.enabled else 0
        self.world = world_size() if self.enabled else 1

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
        for dtype in sorted({v.dtype.str for v in stats}):
            group = [v for v in stats if v.dtype.str == dtype]
            flat = all_reduce(np.concatenate([v.value.ravel() for v in group]), "mean")
            offset = 0
            for var in group:
                var.value = flat[offset:offset + var.value.size].reshape(var.shape)
                offset += var.value.size

    def mean_logs(self, logs):
        """Each value averaged over processes (equal shards: the mean of per-shard metrics)."""
        if not self.enabled or not logs:
            return logs
        keys = sorted(logs)
        means = all_reduce(np.array([logs[k] for k in keys], np.float64), "mean")
        return {k: float(v) for k, v in zip(keys, means)}
