"""Execution plans: the pruned, scheduled list of steps that computes some fetches.

A plan is built once per (fetches, fed nodes) and reused on every run: each
step holds its node, its pre-resolved kernel, the slots of its inputs, and the
slots whose last reader it is, so intermediates are dropped as early as possible.
"""
import heapq
import traceback

import numpy as np

from ..errors import ExecutionError, FeedError, describe
from ..nodes import Placeholder, Variable


class Step:
    """One node to compute: kernel(*values[input_slots]) -> values[slot]."""

    __slots__ = ("node", "kernel", "input_slots", "slot", "release")

    def __init__(self, node, kernel, input_slots, slot):
        self.node, self.kernel, self.input_slots, self.slot = node, kernel, input_slots, slot
        self.release = ()


def prune(fetches, fed):
    """The nodes needed for `fetches`, stopping at fed nodes; maps each to the first fetch needing it."""
    needed_by = {}
    for fetch in fetches:
        stack = [fetch]
        while stack:
            node = stack.pop()
            if node in needed_by:
                continue
            needed_by[node] = fetch
            if node not in fed:
                stack.extend(node.inputs)
    return needed_by


def schedule(needed, fed):
    """A topological order of `needed` (Kahn's algorithm) with stateful ops as late as possible.

    Ties are broken by creation order, so plans are deterministic. Deferring
    stateful ops means every read of a Variable that does not depend on an
    update sees the value from before it (an optimizer step reads old weights).
    """
    indegree, ready_pure, ready_stateful = {}, [], []
    for node in needed:
        indegree[node] = 0 if node in fed else sum(1 for inp in node.inputs if inp in needed)
        if indegree[node] == 0:
            heapq.heappush(ready_stateful if getattr(node, "stateful", False) else ready_pure,
                           (node.creation_index, id(node), node))
    order = []
    while ready_pure or ready_stateful:
        _, _, node = heapq.heappop(ready_pure if ready_pure else ready_stateful)
        order.append(node)
        for consumer in node.consumers:
            if consumer in indegree and consumer not in fed:
                indegree[consumer] -= 1
                if indegree[consumer] == 0:
                    heapq.heappush(ready_stateful if getattr(consumer, "stateful", False) else ready_pure,
                                   (consumer.creation_index, id(consumer), consumer))
    return order


class ExecutionPlan:
    """The steps computing `fetches` given values for the `fed` nodes, on one backend."""

    def __init__(self, fetches, fed, backend):
        fed = frozenset(fed)
        self.needed_by = prune(fetches, fed)
        missing = [n for n in self.needed_by
                   if isinstance(n, Placeholder) and n not in fed and n.default is None]
        if missing:
            node = min(missing, key=lambda n: n.creation_index)
            raise FeedError(
                f"Placeholder '{node.name}' (shape {node.shape}, dtype {node.dtype}, created at "
                f"{node.creation_site}) needs a value: fetch '{self.needed_by[node].name}' depends on it. "
                f"Pass it in feed_dict, e.g. sess.run(..., feed_dict={{{node.name!r}: array}}).")
        order = schedule(self.needed_by, fed)
        self.slot_of = {node: i for i, node in enumerate(order)}
        self.fed_slots = {node: self.slot_of[node] for node in fed if node in self.slot_of}
        self.fetch_slots = [self.slot_of[f] for f in fetches]
        self.steps = []
        for node in order:
            if node in fed:
                continue
            self.steps.append(Step(node, backend.kernel(node), tuple(self.slot_of[i] for i in node.inputs),
                                   self.slot_of[node]))
        self._plan_releases()
        # kernels may update Variables in place: fetched values computed before must not change with them
        stateful = [i for i, step in enumerate(self.steps) if getattr(step.node, "stateful", False)]
        self.first_stateful = stateful[0] if stateful else None
        self.updated_variables = {inp for i in stateful for inp in self.steps[i].node.inputs
                                  if isinstance(inp, Variable)}

    def _plan_releases(self):
        """Give each step the slots it reads for the last time (fetched slots are kept)."""
        last_reader = {}
        for position, step in enumerate(self.steps):
            for slot in step.input_slots:
                last_reader[slot] = position
        keep = set(self.fetch_slots)
        releases = {}
        for slot, position in last_reader.items():
            if slot not in keep:
                releases.setdefault(position, []).append(slot)
        for position, slots in releases.items():
            self.steps[position].release = tuple(sorted(set(slots)))

    def _protect_fetches(self, values):
        """Copy fetched values that share memory with a Variable about to be updated in place."""
        targets = [var._value for var in self.updated_variables]  # host arrays, without syncing device copies
        device = [var._mirror.array for var in self.updated_variables if var._mirror is not None]
        for slot in self.fetch_slots:
            value = values[slot]
            if isinstance(value, np.ndarray):
                if any(np.may_share_memory(value, t) for t in targets):
                    values[slot] = value.copy()
            elif any(value is d for d in device):  # a device-resident Variable (OpenCL)
                values[slot] = value.copy()

    @property
    def size(self):
        """Number of value slots (nodes) the plan touches."""
        return len(self.slot_of)

    def run(self, feeds, observer=None):
        """Compute the fetches; `feeds` maps fed nodes to validated arrays.

        `observer(step, value, released_values)`, if given, sees each step's output
        and the values dropped right after it (the memory profile uses it).
        """
        values = [None] * self.size
        for node, slot in self.fed_slots.items():
            values[slot] = feeds[node]
        for position, step in enumerate(self.steps):
            if position == self.first_stateful:
                self._protect_fetches(values)
            try:
                values[step.slot] = step.kernel(*[values[s] for s in step.input_slots])
            except Exception as exc:  # noqa: BLE001 - every kernel failure becomes one readable error
                raise _execution_error(step.node, [values[s] for s in step.input_slots], exc) from None
            if observer is not None:
                observer(step, values[step.slot], [values[s] for s in step.release])
            for slot in step.release:
                values[slot] = None
        return [values[s] for s in self.fetch_slots]


def _execution_error(node, inputs, exc):
    """An error naming the node, its op type, input shapes and creation site, with the kernel's message."""
    shapes = ", ".join(f"'{inp.name}' {getattr(v, 'shape', None)} {getattr(v, 'dtype', '')}".rstrip()
                       for inp, v in zip(node.inputs, inputs))
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (raised at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    error = ExecutionError(
        f"{describe(node)} failed while running: {type(exc).__name__}: {exc}{where}. "
        f"Its inputs had shapes: {shapes or 'no inputs'}. Check that the values fed for this run have the "
        "shapes and ranges this op needs.")
    error.original = exc
    return error
