"""Update ops: ApplyUpdate, the base of every optimizer's fused update, and MultiTensorUpdate (the pass "multi_tensor"),
a train op's updates as one node the C backend runs in one call (a call per parameter cost a fifth of a small step)."""
from ..errors import ShapeError
from ..nodes import Operation
from ..passes import register_pass
from ..passes.ir import attribute_key, make_node
from ..shapes import shapes_compatible


class ApplyUpdate(Operation):
    """Updates one Variable and its slots in one op (TF's ApplyAdam): inputs (variable, gradient, lr, *slots);
    subclasses write `update(param, grad, lr, **slots) -> (new_param, *new_slots)`, the L2 decay already in grad."""

    abstract = True
    stateful = True

    def __init__(self, var, grad, lr, slots, optimizer, name=None):
        self.hyper = optimizer.hyper
        self.slot_names = optimizer.slot_names
        super().__init__(var, grad, lr, *slots, name=name)

    @property
    def variables(self):
        """The Variable being trained followed by its slots, in the order `update` takes them."""
        return [self.inputs[0]] + list(self.inputs[3:])

    def infer_shape(self, var_shape, grad_shape, lr_shape, *slot_shapes):
        if not shapes_compatible(var_shape, grad_shape):
            raise ShapeError(f"the gradient of shape {grad_shape} does not match the variable's shape {var_shape}")
        if lr_shape not in ((), None):
            raise ShapeError(f"the learning rate must be a scalar, got shape {lr_shape}")
        return ()

    def infer_dtype(self, *dtypes):
        return None

    def compute(self, param, grad, lr, *slots):
        variables = self.variables
        # current values, not the run's snapshots, so several updates of one Variable compose
        slots = {name: var.value for name, var in zip(self.slot_names, variables[1:])}
        param, decay = variables[0].value, self.hyper.get("weight_decay")
        if decay and not self.hyper.get("decoupled"):  # g ← g + wd·p
            grad = grad + decay * param
        new_values = self.update(param, grad, lr.item(), **slots)
        for var, value in zip(variables, new_values):
            var.value = value
        return None

    def update(self, param, grad, lr, **slots):
        """The update formula: new values of the parameter and of the slots, in `slot_names` order."""
        raise NotImplementedError


class MultiTensorUpdate(Operation):
    """members[0] ... members[-1] (ApplyUpdate ops of one optimizer and dtype), in one step; no value."""

    abstract = True  # built by the optimiser only: kept out of the op registry the op tests walk
    stateful = True

    def compute(self, *values):
        """Each member's numpy update on its own inputs (the reference, and the fallback)."""
        for member, span in zip(self.members, self.spans):
            member.compute(*values[span])

    def infer_shape(self, *shapes):
        return ()

    def infer_dtype(self, *dtypes):
        return None

    def bind_kernel(self, backend):
        """All members in one call where the backend can (`backend.multi_update`), else each member's kernel."""
        kernels = [backend.kernel(member) for member in self.members]
        together = getattr(backend, "multi_update", None)

        def run(*values):
            if together is None or not together(self, values):
                for kernel, span in zip(kernels, self.spans):
                    kernel(*values[span])
        return run

    def __repr__(self):
        return f"<MultiTensorUpdate '{self.name}' of {len(self.members)} {self.members[0].op_type} ops>"


def multi_tensor_update(members):
    """The MultiTensorUpdate standing for `members` (update ops of one optimizer and dtype), named after them."""
    inputs, spans = [], []
    for member in members:
        spans.append(slice(len(inputs), len(inputs) + len(member.inputs)))
        inputs.extend(member.inputs)
    node = make_node(MultiTensorUpdate, inputs, members[-1], shape=(), members=list(members), spans=spans)
    node.name = f"{members[0].name.rsplit('/', 1)[0]}/multi_tensor_update"  # e.g. Adam/multi_tensor_update
    return node


def merge_updates(graph):
    """A copy of `graph` in which one op's ApplyUpdate inputs of one type, hyper-parameters, lr node and dtype, read
    by nothing else, are one MultiTensorUpdate in the place of the last of them; (graph, counts)."""
    graph = graph.copy()
    consumers = graph.consumers()
    merged, nodes_merged = {}, 0
    for node in graph.nodes:
        buckets = {}
        for inp in dict.fromkeys(node.inputs):  # each input once, in order
            if (isinstance(inp, ApplyUpdate) and consumers[inp] == [node] and not graph.is_fetched(inp)
                    and inp not in graph.fed):
                key = (inp.op_type, attribute_key(inp), id(inp.inputs[2]), inp.inputs[0].dtype)
                buckets.setdefault(key, []).append(inp)
        for members in buckets.values():
            if len(members) > 1:
                multi = multi_tensor_update(members)
                for member in members:
                    merged[member] = multi
                nodes_merged += len(members)
    order = []
    last = {multi: max(graph.nodes.index(m) for m in multi.members) for multi in set(merged.values())}
    for position, node in enumerate(graph.nodes):
        if node in merged:
            multi = merged[node]
            if last[multi] == position:
                order.append(multi)
            continue
        if any(i in merged for i in node.inputs):
            node.inputs = tuple(dict.fromkeys(merged.get(i, i) for i in node.inputs))
        order.append(node)
    graph.nodes = order
    return graph, {"merged_updates": len(last), "update_ops": nodes_merged}


register_pass("multi_tensor", merge_updates)
