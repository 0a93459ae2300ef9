"""Pictures of eager mode: the backward graph a Tensor recorded (like torchviz's make_dot), its ops where the user's
code made them, arrows from inputs to the op that used them; and its backward pass step by step."""
from ..eager.autograd import backward, leaf_variable, recorded_inputs
from ..eager.tensor import Tensor
from ..errors import TinyflowError
from .backprop_steps import trace_walk, walk_frames
from .graphviz_render import STYLES, digraph, label, summarize


def recorded(tensor):
    """(ops, leaves) reachable from the tensor's grad_fn: ops in depth-first postorder, leaves as met."""
    if not isinstance(tensor, Tensor):
        raise TinyflowError(f"backward_graph draws an eager Tensor's recorded graph, got {tensor!r}; "
                            "for graph nodes use tfl.viz.to_graphviz")
    ops, leaves, seen = [], [], set()
    stack = [(tensor.grad_fn, False)] if tensor.grad_fn is not None else []
    while stack:
        fn, expanded = stack.pop()
        if expanded:
            ops.append(fn)
        elif id(fn) not in seen:
            seen.add(id(fn))
            stack.append((fn, True))
            for source in reversed(recorded_inputs(fn) or ()):  # input 0 is expanded first
                if source is None or id(source) in seen:  # by identity: == on Tensors compares values
                    continue
                if isinstance(source, Tensor):  # a leaf
                    seen.add(id(source))
                    leaves.append(source)
                else:
                    stack.append((source, False))
    return ops, leaves


def eager_names(items):
    """Readable unique names: a leaf's Variable's name (else "leaf"), an op's type (Multiply, Multiply_1, ...)."""
    names, used = {}, {}
    for item in items:
        owner = leaf_variable(item) if isinstance(item, Tensor) else None
        base = owner.name if owner is not None else "leaf" if isinstance(item, Tensor) else item.op_type
        count = used[base] = used.get(base, -1) + 1
        names[item] = base if count == 0 else f"{base}_{count}"
    return names


def eager_label(item, name):
    """The label lines of a leaf Tensor (its Variable, shape and dtype) or of an op (type, name, shape)."""
    if isinstance(item, Tensor):
        owner = leaf_variable(item)
        return [f"Variable '{owner.name}'" if owner is not None else "leaf tensor", f"{list(item.shape)} {item.dtype}"]
    return label(item, name=name, shape=True)


def tensor_value(tensor):
    """A Tensor's value as an array (anything else as it is)."""
    return tensor.numpy() if isinstance(tensor, Tensor) else tensor


def backward_graph(tensor, show_values=False):
    """A graphviz.Digraph of the ops `tensor` recorded on its way from the leaves (torchviz's make_dot)."""
    ops, leaves = recorded(tensor)
    names = eager_names(leaves + ops)
    dot = digraph("backward", rankdir="BT")
    for leaf in leaves:
        value = [summarize(leaf.numpy())] if show_values else []
        dot.node(f"n{id(leaf)}", "\\n".join(eager_label(leaf, names[leaf]) + value), **STYLES["variable"])
    for fn in ops:
        inputs = recorded_inputs(fn)
        freed = [] if inputs is not None else ["(freed by backward)"]
        lines = eager_label(fn, names[fn]) + [f"at {fn.creation_site}"] + freed
        dot.node(f"n{id(fn)}", "\\n".join(lines), **STYLES["op"])
        for index, source in enumerate(inputs or ()):
            if source is not None:
                dot.edge(f"n{id(source)}", f"n{id(fn)}", label=str(index) if len(inputs) > 1 else "")
    value = f"\\n{summarize(tensor.numpy())}" if show_values else ""
    dot.node("root", f"tensor {list(tensor.shape)}{value}", shape="box", style="filled", fillcolor="#c3e6cb",
             color="#2e7d32")
    if tensor.grad_fn is not None:
        dot.edge(f"n{id(tensor.grad_fn)}", "root")
    return dot


def eager_backprop_steps(tensor, grad=None):
    """One picture per op the eager backward pass processes (the tensors' `.grad`s are not touched)."""
    ops, leaves = recorded(tensor)
    if not ops:
        raise TinyflowError("this tensor recorded no ops: there is no backward pass to show "
                            "(did its inputs require grad?)")
    names = eager_names(leaves + ops)
    walk = eager_walk(tensor, None if grad is None else [grad], {}, {item: item for item in names})
    boxes = {item: (eager_label(item, name), recorded_inputs(item) or ()) for item, name in names.items()}
    return walk_frames(*walk, boxes, tensor_value, names.get)


def eager_walk(tensor, seed, sink, names):
    """`trace_walk` of the eager backward from `tensor` into a private `sink` (`.grad`s stay unchanged)."""
    return trace_walk(lambda trace: backward([tensor], seed, retain_graph=True, sink=sink, trace=trace), names,
                      leaf_step)


def leaf_step(step):
    """Whether a step of the eager walk delivers to a leaf (or passes nothing on): the pictures show ops."""
    return step["node"].__class__ is Tensor or step["grad"] is None
