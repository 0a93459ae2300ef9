"""Execution plans: the pruned, scheduled steps computing some fetches, built once per (fetches, fed nodes). A plan
runs as one compiled straight-line Python function per feed shapes (`compile`); the interpreter (`interpret`) runs
first runs (checking every value), memory profiles and very long plans."""
import heapq
from collections import Counter
import traceback

import numpy as np

from ..errors import ExecutionError, FeedError, describe
from ..shapes import is_fully_known, matches, normalize_shape
from ..nodes import Constant, Placeholder, Variable


# Longer plans are interpreted: compiling a function of a hundred thousand lines costs more than it saves
COMPILE_LIMIT = 20_000
# Compiled forms per plan, one per combination of feed shapes (a last, smaller batch is a second one); further
# feed shapes share one general form
MAX_SPECIALISATIONS = 8
# marks a step whose op returns its first input itself at the shapes of a specialised plan (see `specialise`)
PASS_THROUGH = object()


class Step:
    """One node to compute: kernel(*values[input_slots]) -> values[slot]."""

    __slots__ = ("node", "kernel", "input_slots", "slot", "release")

    def __init__(self, node, kernel, input_slots, slot, release=()):
        self.node, self.kernel, self.input_slots, self.slot, self.release = node, kernel, input_slots, slot, release


def prune(fetches, fed):
    """The nodes needed for `fetches`, stopping at fed nodes; maps each to the first fetch needing it."""
    needed_by = {}
    for fetch in fetches:
        stack = [fetch]
        while stack:
            node = stack.pop()
            if node not in needed_by:
                needed_by[node] = fetch
                if node not in fed:
                    stack.extend(node.inputs)
    return needed_by


def schedule(needed, fed):
    """Kahn's topological order of `needed` (ties by creation order), stateful ops last: reads see the old value."""
    ready_pure, ready_stateful = [], []

    def ready(node):
        heapq.heappush(ready_stateful if getattr(node, "stateful", False) else ready_pure,
                       (node.creation_index, id(node), node))
    # readers within `needed` (an optimised plan's leaves are the user's nodes, whose `consumers` name user ops)
    consumers = {node: [] for node in needed}
    indegree = {node: 0 if node in fed else len(node.inputs) for node in needed}  # `prune` kept every input
    for node in needed:
        for inp in () if node in fed else node.inputs:
            consumers[inp].append(node)
        if indegree[node] == 0:
            ready(node)
    order = []
    while ready_pure or ready_stateful:
        _, _, node = heapq.heappop(ready_pure if ready_pure else ready_stateful)
        order.append(node)
        for consumer in consumers[node]:
            indegree[consumer] -= 1
            if indegree[consumer] == 0:
                ready(consumer)
    return order


class ExecutionPlan:
    """The steps computing `fetches` given values for the `fed` nodes, on one backend."""

    def __init__(self, fetches, fed, backend):
        fed = frozenset(fed)
        self.needed_by = prune(fetches, fed)
        missing = [n for n in self.needed_by if isinstance(n, Placeholder) and n not in fed and n.default is None]
        if missing:
            node = min(missing, key=lambda n: n.creation_index)
            raise FeedError(
                f"Placeholder '{node.name}' (shape {node.shape}, dtype {node.dtype}, created at "
                f"{node.creation_site}) needs a value: fetch '{self.needed_by[node].name}' depends on it. "
                f"Pass it in feed_dict, e.g. sess.run(..., feed_dict={{{node.name!r}: array}}).")
        self.order = schedule(self.needed_by, fed)  # the node of each slot
        self.slot_of = {node: i for i, node in enumerate(self.order)}
        self.fed_slots = {node: self.slot_of[node] for node in fed if node in self.slot_of}
        self.fetch_slots = [self.slot_of[f] for f in fetches]
        self.steps = [Step(node, backend.kernel(node), tuple(self.slot_of[i] for i in node.inputs), self.slot_of[node])
                      for node in self.order if node not in fed]
        self._link_readers()
        # ops numpy runs, decided once here: counted into the backend's run report at each run
        self.static_routes = Counter((route, step.node.op_type) for step in self.steps
                                     for route in [backend.static_route(step.node)] if route is not None)
        # kernels may update Variables in place: fetched values computed before must not change with them
        stateful = [i for i, step in enumerate(self.steps) if getattr(step.node, "stateful", False)]
        self.first_stateful = stateful[0] if stateful else None
        self.updated_variables = {inp for i in stateful for inp in self.steps[i].node.inputs
                                  if isinstance(inp, Variable)}
        # the arrays fetched values must not share: Variables' (which change) and Constants' (which do not)
        self.variables = [node for node in self.needed_by if isinstance(node, Variable)]
        self.constant_arrays = frozenset(id(node.value) for node in self.needed_by if isinstance(node, Constant))
        self._verified = False
        self._fed_order = sorted(self.fed_slots, key=lambda n: self.fed_slots[n])
        self._compiled = {}  # feed shapes -> (compiled run function, its static routes); see `run`
        self._general = None  # the compiled form for any further feed shapes; see `run`
        self.source = None  # the Python source of the last compiled form
        self._backend, self._pool = backend, backend.pool

    def _link_readers(self):
        """Give each step the slots it reads last (fetches are kept); tell multi-output kernels (control flow) which
        steps read them, so they compute only what this plan needs."""
        readers, last_reader, fetched = {}, {}, set(self.fetch_slots)
        for position, step in enumerate(self.steps):
            for slot in step.input_slots:
                readers.setdefault(slot, []).append(step.node)
                last_reader[slot] = position
        for position, step in enumerate(self.steps):
            last_read = {s for s in step.input_slots if last_reader[s] == position}
            step.release = tuple(sorted(last_read - fetched))
            if hasattr(step.kernel, "select_outputs"):
                step.kernel.select_outputs(readers.get(step.slot, []), fetched=step.slot in fetched)

    def _protect(self, value):
        """`value`, or a copy if it shares memory with a Variable about to be updated in place."""
        if isinstance(value, np.ndarray):
            # host arrays, compared without syncing device copies. Two arrays that both own their memory (what
            # kernels return; a Variable's private copy) share it only by being one array: identity tells that in
            # a tenth of the time np.may_share_memory takes, which is left for views
            arrays = [var.host_array for var in self.updated_variables]
            if any(value is array or (value.base is not None or array.base is not None)
                   and np.may_share_memory(value, array) for array in arrays):
                return value.copy()
        elif value is not None and any(var.device_mirror is not None and value is var.device_mirror.array
                                       for var in self.updated_variables):
            return value.copy()  # a device-resident Variable (OpenCL)
        return value

    def run(self, feeds, observer=None):
        """The fetches from `feeds` (fed node -> array), compiled; with an `observer` (memory profile) interpreted."""
        if self._verified and observer is None and len(self.steps) <= COMPILE_LIMIT:
            signature = tuple([_shape_key(feeds[node]) for node in self._fed_order])
            compiled = self._compiled.get(signature)
            if compiled is None and len(self._compiled) < MAX_SPECIALISATIONS:
                kernels, routes = self.specialise(signature)
                compiled = self._compiled[signature] = (self.compile(kernels), routes)
            elif compiled is None:  # shapes that keep changing (a value a loop grows): one form deciding at each call
                if self._general is None:
                    self._general = (self.compile(), self.static_routes)
                compiled = self._general
            self._backend.report.add_static(compiled[1])
            return compiled[0]([feeds[node] for node in self._fed_order])
        self._backend.report.add_static(self.static_routes)
        # the first run checks every op's value against its static shape and dtype
        values = self.interpret(feeds, observer, verify=not self._verified)
        self._verified = True
        return values

    def specialise(self, signature):
        """(a kernel per step, the static routes) for these feed shapes: small ops go to numpy, and ops returning
        their first input (`passes_through`, trusted since the first run checked every shape) are PASS_THROUGH."""
        shapes = dict(zip(self._fed_order, signature))
        kernels, routes = [], Counter(self.static_routes)
        for step in self.steps:
            node = step.node
            input_shapes = [shapes.get(i, i.shape) for i in node.inputs]
            try:
                shape = normalize_shape(node.infer_shape(*input_shapes)) if node.inputs else node.shape
            except Exception:  # noqa: BLE001 - the run raises the error, naming the node
                shape = node.shape
            shapes[node] = shape
            kernel = step.kernel
            if node.inputs and all(is_fully_known(s) for s in input_shapes) and node.passes_through(*input_shapes):
                kernels.append(PASS_THROUGH)
                continue
            if self._backend.static_route(node) is None:
                route = self._backend.static_route(node, [shape] + input_shapes)
                if route is not None:
                    kernel = self._backend.host_kernel(node)
                    routes[(route, node.op_type)] += 1
            kernels.append(kernel)
        return kernels, routes

    def compile(self, kernels=None):
        """The plan as one straight-line function calling `kernels` (default: the steps' own), e.g.
        `def run(feeds, k0=k0, ...): v0 = feeds[0]; s = 1; v2 = k1(v0, v1); del v0, v1; return [v2]`, so a node
        costs little more than its kernel call. Variables are read inline, Constants bound; PASS_THROUGH: `v2 = v1`."""
        lines, bound = [f"v{self.fed_slots[node]} = feeds[{i}]" for i, node in enumerate(self._fed_order)], {}
        assigned = set(self.fed_slots.values())
        for position, step in enumerate(self.steps):
            if position == self.first_stateful:
                ready = [f"v{s}" for s in self.fetch_slots if s in assigned]
                if ready:
                    lines.append(f"{', '.join(ready)}, = protect({', '.join(ready)})")
            kernel = step.kernel if kernels is None else kernels[position]
            leaf = getattr(kernel, "leaf", None)
            comment = repr(step.node.name)[1:-1]  # escapes newlines and NUL, which would break the source
            if kernel is PASS_THROUGH:
                value = f"v{step.input_slots[0]}"
            elif isinstance(leaf, Variable):
                bound[f"k{position}"] = leaf
                value = f"k{position}.host_array if k{position}.device_mirror is None else k{position}.value"
            elif isinstance(leaf, Constant):
                bound[f"k{position}"] = leaf.value
                value = f"k{position}"
            else:
                bound[f"k{position}"] = kernel
                value = f"k{position}({', '.join(f'v{s}' for s in step.input_slots)})"
            lines.append(f"s = {position}; v{step.slot} = {value}  # {comment}")
            assigned.add(step.slot)
            if step.release:  # values known to be too small for the backend's buffer pool are not offered to it
                poolable = [s for s in step.release if self._pool.worth_keeping(self.order[s].shape)]
                if poolable:
                    lines.append("; ".join(f"recycle(v{s})" for s in poolable))
                lines.append("del " + ", ".join(f"v{s}" for s in step.release))
        lines.append(f"return [{', '.join(f'v{s}' for s in self.fetch_slots)}]")
        namespace = dict(bound, protect=lambda *fetched: tuple(map(self._protect, fetched)), fail=self._fail,
                         recycle=self._pool.recycle)
        source = (f"def run(feeds, {', '.join(f'{name}={name}' for name in namespace)}):\n    s = -1\n"
                  + "    try:\n" + "".join(f"        {line}\n" for line in lines)
                  + "    except Exception as exc:\n        fail(s, locals(), exc)\n")
        exec(compile(source, f"<tinyflow plan of {len(self.steps)} steps>", "exec"), namespace)  # noqa: S102
        self.source = source
        return namespace["run"]

    def _fail(self, position, frame_locals, exc):
        """Turn an exception raised in compiled step `position` into an ExecutionError."""
        if position < 0:
            raise exc
        step = self.steps[position]
        raise _execution_error(step.node, [frame_locals.get(f"v{s}") for s in step.input_slots], exc) from None

    def interpret(self, feeds, observer=None, verify=False):
        """Run the steps one by one (the readable reference of `compile`); `verify`: see `verify_value`."""
        values = [None] * len(self.order)
        for node, slot in self.fed_slots.items():
            values[slot] = feeds[node]
        for position, step in enumerate(self.steps):
            if position == self.first_stateful:  # kernels may update Variables in place from here on
                for slot in self.fetch_slots:
                    values[slot] = self._protect(values[slot])
            try:
                values[step.slot] = step.kernel(*[values[s] for s in step.input_slots])
            except Exception as exc:  # noqa: BLE001 - every kernel failure becomes one readable error
                raise _execution_error(step.node, [values[s] for s in step.input_slots], exc) from None
            if verify:
                verify_value(step.node, values[step.slot])
            if observer is not None:
                observer(step, values[step.slot], [values[s] for s in step.release])
            for slot in step.release:
                self._pool.recycle(values[slot])
                values[slot] = None
        return [values[s] for s in self.fetch_slots]


def _shape_key(value):
    """A fed value's shape, to pick a compiled form (a sub-plan's feeds may be numbers, or a loop's tuple: None)."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    return () if isinstance(value, (int, float, bool, np.generic)) else None


def verify_value(node, value):
    """ExecutionError if an op's value contradicts its static shape or dtype (checked on a plan's first run)."""
    if node.dtype is None or value is None:
        return
    if getattr(value, "shape", None) is None or getattr(value, "dtype", None) is None:
        value = np.asarray(value)  # a Python number
    if node.shape is not None and not matches(node.shape, value.shape):
        problem = f"its static shape is {node.shape} but it computed a value of shape {tuple(value.shape)}"
    elif np.dtype(value.dtype) != node.dtype:
        problem = f"its static dtype is {node.dtype} but it computed a value of dtype {np.dtype(value.dtype)}"
    else:
        return
    raise ExecutionError(
        f"{describe(node)}, of class {type(node).__module__}.{type(node).__qualname__}: {problem}. "
        f"Its infer_shape / infer_dtype and its compute (or the backend's kernel) disagree; fix the op so that "
        "infer_shape and infer_dtype describe exactly what compute returns.")


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
