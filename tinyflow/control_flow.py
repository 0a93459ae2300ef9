"""Graph control flow: `cond` runs one of two subgraphs, `while_loop` runs a subgraph until a test fails.

A branch or loop body is a *subgraph*: the nodes a Python function built, in the
same graph, inside a name scope (so pictures draw it as a cluster). The outer plan
never runs them: the Cond / WhileLoop op's kernel runs a cached sub-plan of the
subgraph with the values of the outer nodes it reads (its "captures"), so only the
taken branch is computed. Ops have one output, so a cond or loop with several
outputs becomes one op per output, each running the part of the subgraph it needs.

Gradients are control flow too: d cond = cond(pred, d true branch, d false branch);
a while loop with `maximum_iterations=N` is differentiated by unrolling it into N
conds (each step runs the body only while the test holds).
"""
import numpy as np

from .autodiff.gradients import gradients
from .backends import NumpyBackend
from .errors import GradientError, ShapeError, TinyflowError
from .graph import get_default_graph
from .nodes import Node, Operation, Placeholder, as_node
from .ops.array_ops import identity
from .ops.math_ops import zeros_like
from .ops.registry import register_gradient
from .session.plan import ExecutionPlan
from .shapes import shapes_compatible

_building = []  # the subgraphs whose functions are running right now, innermost last


class Subgraph:
    """The nodes a function built, the outer nodes they read (captures) and the function's outputs."""

    def __init__(self, graph, nodes, outputs, inputs=(), label=""):
        self.graph, self.nodes, self.outputs, self.inputs, self.label = graph, nodes, outputs, tuple(inputs), label
        self.captures = _captures(self)

    @classmethod
    def trace(cls, fn, inputs=(), scope="branch"):
        """Call `fn(*inputs)` inside a name scope and collect what it built."""
        graph = get_default_graph()
        start = len(graph.nodes)
        marker = object()
        _building.append(marker)
        try:
            with graph.name_scope(scope) as label:
                result = fn(*inputs)
                single = not isinstance(result, (list, tuple))
                outputs = [result] if single else list(result)
                if not outputs:
                    raise TinyflowError(f"the function {_fn_name(fn)} of '{label}' returned no value; "
                                        "return one node or a list/tuple of nodes")
                like = next((o for o in outputs if isinstance(o, Node)), None)
                outputs = [as_node(o, like=like) for o in outputs]
        finally:
            _building.pop()
        nodes = graph.nodes[start:]
        for node in nodes:
            if getattr(node, "_subgraph", None) is None:
                node._subgraph = marker
        sub = cls(graph, nodes, outputs, inputs, label)
        sub.single = single
        for node in nodes:
            if node._subgraph is marker:
                node._subgraph = sub
        return sub


def _fn_name(fn):
    return getattr(fn, "__qualname__", repr(fn))


def _captures(sub):
    """Outer nodes the subgraph reads, in creation order.

    A node built inside *another, finished* subgraph (a forward branch read by its
    gradient branch) is not captured but recomputed here: capturing it would make
    the outer plan run a branch that was not taken.
    """
    own = set(sub.nodes) | set(sub.inputs)
    captured, stack, seen = set(), list(sub.outputs), set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        owner = getattr(node, "_subgraph", None)
        if node in own or (owner is not None and owner not in _building and owner is not sub
                           and not isinstance(node, Placeholder)):
            own.add(node)
            stack.extend(node.inputs)
        else:
            captured.add(node)
    leaked = [n for n in captured if isinstance(getattr(n, "_subgraph", None), Subgraph)
              and n._subgraph not in _building and isinstance(n, Placeholder)]
    if leaked:
        raise TinyflowError(f"'{sub.label}' reads {leaked[0].name}, a loop variable of a finished while_loop; "
                            "use the while_loop's outputs instead")
    sub.nodes = sorted(own - set(sub.inputs), key=lambda n: n.creation_index)
    return tuple(sorted(captured, key=lambda n: n.creation_index))


def _truth(value, op):
    value = np.asarray(value)
    if value.size != 1:
        raise ValueError(f"the condition of {op.op_type} '{op.name}' has shape {value.shape}; it must be one "
                         "value (reduce it, e.g. tfl.reduce_max(x > 0) for 'any')")
    return bool(value.reshape(()))


def _sub_plan(plans, key, fetches, fed, backend):
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = ExecutionPlan(fetches, frozenset(fed), backend)
    return plan


def _host_backend():
    return NumpyBackend()


class ControlFlowOp(Operation):
    """Base of ops whose kernel runs subgraphs: the backend binds the kernel (see `bind_kernel`)."""

    abstract = True

    def compute(self, *values):
        """The kernel on host values with the numpy backend (used by backends that cannot bind it)."""
        return self.bind_kernel(_host_backend())(*values)

    @property
    def subgraphs(self):
        """The subgraphs this op runs."""
        raise NotImplementedError

    @property
    def subgraph_nodes(self):
        """Every node of the subgraphs (pictures draw them inside clusters)."""
        return [n for sub in self.subgraphs for n in list(sub.inputs) + list(sub.nodes)]


# ---------------------------------------------------------------- cond
class Cond(ControlFlowOp):
    """Output `index` of true_branch if pred else of false_branch; only the taken branch runs.

    Inputs: pred, then the captures of both branches. Gradient: for each capture c,
    cond(pred, d true_out/dc · g, d false_out/dc · g) (zeros where a branch does not read c).
    """

    def __init__(self, pred, true_branch, false_branch, index=0, name=None):
        self.true_branch, self.false_branch, self.index = true_branch, false_branch, index
        self.captures = tuple(sorted(set(true_branch.captures) | set(false_branch.captures),
                                     key=lambda n: n.creation_index))
        super().__init__(pred, *self.captures, name=name)

    @property
    def subgraphs(self):
        return [self.true_branch, self.false_branch]

    @property
    def branch_outputs(self):
        """The two nodes this op chooses between."""
        return [self.true_branch.outputs[self.index], self.false_branch.outputs[self.index]]

    def infer_shape(self, pred_shape, *capture_shapes):
        if pred_shape is not None and any(d is not None and d != 1 for d in pred_shape):
            raise ShapeError(f"the condition must be a single value, got shape {pred_shape}; "
                             "reduce it first, e.g. tfl.reduce_max(x > 0)")
        a, b = (o.shape for o in self.branch_outputs)
        if a is None or b is None or len(a) != len(b):
            return None
        return tuple(x if x == y else None for x, y in zip(a, b))  # a dim the branches disagree on is unknown

    def infer_dtype(self, *dtypes):
        a, b = (o.dtype for o in self.branch_outputs)
        if a != b:
            raise ShapeError(f"output {self.index} of the branches has dtype {a} in the true branch and {b} in "
                             "the false one; cast one of them with tfl.cast so both agree")
        return a

    def bind_kernel(self, backend):
        """The kernel: evaluate pred, run the taken branch's sub-plan on the captured values."""
        plans = {}

        def run(pred, *captured):
            branch = self.true_branch if _truth(backend.to_host(pred), self) else self.false_branch
            out = branch.outputs[self.index]
            plan = _sub_plan(plans, id(branch), [out], self.captures, backend)
            value = plan.run(dict(zip(self.captures, captured)))[0]
            if isinstance(value, np.ndarray) and any(value is c for c in captured):
                value = value.copy()  # never hand out an alias of an input (it may be a Variable's value)
            return value
        return run


def _is_eager(value):
    """An eager Tensor (it computes at once and belongs to no graph)."""
    return getattr(value, "graph", False) is None


def _eager_while_loop(cond_fn, body_fn, loop_vars, maximum_iterations, single):
    """while_loop on eager Tensors: a Python loop (constants among the loop variables become Tensors)."""
    from .eager import tensor
    values = [v if _is_eager(v) else tensor(v.value) for v in loop_vars]
    steps = 0
    while (maximum_iterations is None or steps < maximum_iterations) and bool(np.asarray(cond_fn(*values))):
        out = body_fn(*values)
        values = list(out) if isinstance(out, (list, tuple)) else [out]
        steps += 1
    return values[0] if single else values


def cond(pred, true_fn, false_fn, name=None):
    """`true_fn()` if the scalar boolean node `pred` is true at run time, else `false_fn()` (graph control flow).

    Both functions take no arguments and return a node or a list/tuple of nodes with
    matching dtypes; only the taken branch runs. Returns the same structure of nodes.
    """
    if _is_eager(pred):  # eager mode: Python decides, and autograd records the branch that ran
        return true_fn() if bool(np.asarray(pred)) else false_fn()
    graph = get_default_graph()
    pred = as_node(pred)
    with graph.name_scope(name or "cond") as scope:
        true_branch = Subgraph.trace(true_fn, scope="true")
        false_branch = Subgraph.trace(false_fn, scope="false")
        if len(true_branch.outputs) != len(false_branch.outputs):
            raise TinyflowError(f"cond '{scope}': the true branch returns {len(true_branch.outputs)} value(s) and "
                                f"the false branch {len(false_branch.outputs)}; both must return the same number")
        outputs = [Cond(pred, true_branch, false_branch, i, name="Cond") for i in range(len(true_branch.outputs))]
    return outputs[0] if true_branch.single and false_branch.single else outputs


def _gradient_in(branch, index, captures, grad):
    """d branch.outputs[index] / d capture · grad for each capture (zeros where it does not depend on it).

    The branch is differentiated on a copy that reads each capture through its own
    Identity: the derivative is then a partial one, even when one capture is computed
    from another (the outer backward pass adds the paths between captures itself).
    """
    proxies = [identity(c) for c in captures]
    output = _clone(branch, dict(zip(captures, proxies)))[index]
    grads = gradients(output, proxies, grad_ys=grad)
    return [zeros_like(c) if g is None else g for c, g in zip(captures, grads)]


def _float(node):
    return node.dtype is not None and np.issubdtype(node.dtype, np.floating)


@register_gradient(Cond)
def _cond_grad(op, grad):
    wrt = [c for c in op.captures if _float(c)]
    if not wrt:
        return [None] * len(op.inputs)
    grads = cond(op.inputs[0], lambda: _gradient_in(op.true_branch, op.index, wrt, grad),
                 lambda: _gradient_in(op.false_branch, op.index, wrt, grad), name="cond_grad")
    grads = grads if isinstance(grads, list) else [grads]
    by_capture = dict(zip(wrt, grads))
    return [None] + [by_capture.get(c) for c in op.captures]


# ---------------------------------------------------------------- while_loop
class WhileLoop(ControlFlowOp):
    """Loop variable `index` after `while cond(*vars): vars = body(*vars)` (at most `maximum_iterations` times).

    Inputs: the initial loop variables, then the captures of the test and the body.
    Gradient (needs maximum_iterations): the loop unrolled into that many conds.
    """

    def __init__(self, loop_vars, test, body, maximum_iterations=None, index=0, name=None):
        self.test, self.body, self.index = test, body, index
        self.maximum_iterations = maximum_iterations
        self.n_vars = len(loop_vars)
        self.captures = tuple(sorted(set(test.captures) | set(body.captures), key=lambda n: n.creation_index))
        super().__init__(*loop_vars, *self.captures, name=name)

    @property
    def subgraphs(self):
        return [self.test, self.body]

    @property
    def branch_outputs(self):
        """The test and this variable's body output."""
        return [self.test.outputs[0], self.body.outputs[self.index]]

    def infer_shape(self, *shapes):
        return self.body.inputs[self.index].shape

    def infer_dtype(self, *dtypes):
        return dtypes[self.index]

    def bind_kernel(self, backend):
        """The kernel: run the test's and the body's sub-plans until the test fails or the bound is hit."""
        plans = {}
        fed = list(self.body.inputs) + list(self.captures)
        limit = self.maximum_iterations

        def run(*values):
            loop, captured = list(values[:self.n_vars]), list(values[self.n_vars:])
            test = _sub_plan(plans, "test", [self.test.outputs[0]], fed, backend)
            body = _sub_plan(plans, "body", self.body.outputs, fed, backend)
            steps = 0
            while limit is None or steps < limit:
                feeds = dict(zip(fed, loop + captured))
                if not _truth(backend.to_host(test.run(feeds)[0]), self):
                    break
                loop = body.run(feeds)
                steps += 1
            value = loop[self.index]
            if isinstance(value, np.ndarray) and any(value is v for v in values):
                value = value.copy()
            return value
        return run


def while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=None, name=None):
    """Repeat `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)` is true (graph control flow).

    `cond_fn` returns a scalar boolean node; `body_fn` returns as many nodes as there
    are loop variables, each with its variable's dtype and a compatible shape. With
    `maximum_iterations=N` the loop stops after N steps and can be differentiated.
    Returns the final loop variables (a single node if `loop_vars` was one node).
    """
    single = not isinstance(loop_vars, (list, tuple))
    loop_vars = [as_node(v) for v in ([loop_vars] if single else loop_vars)]
    if maximum_iterations is not None and (not isinstance(maximum_iterations, (int, np.integer))
                                           or isinstance(maximum_iterations, bool) or maximum_iterations < 0):
        raise TinyflowError(f"maximum_iterations must be a non-negative int or None, got {maximum_iterations!r}")
    if any(_is_eager(v) for v in loop_vars):
        return _eager_while_loop(cond_fn, body_fn, loop_vars, maximum_iterations, single)
    graph = get_default_graph()
    with graph.name_scope(name or "while") as scope:
        inputs = [Placeholder(v.shape, v.dtype, name=f"loop_var{i}") for i, v in enumerate(loop_vars)]
        test = Subgraph.trace(cond_fn, inputs, scope="cond")
        body = Subgraph.trace(body_fn, inputs, scope="body")
        for p in inputs:  # the loop-variable placeholders belong to the loop, never to the outer graph
            p._subgraph = body
        if len(test.outputs) != 1 or test.outputs[0].dtype != np.bool_:
            raise TinyflowError(f"while_loop '{scope}': cond_fn must return one boolean node (e.g. i < 10), "
                                f"got {[(o.name, str(o.dtype)) for o in test.outputs]}")
        if len(body.outputs) != len(inputs):
            raise TinyflowError(f"while_loop '{scope}': body_fn returned {len(body.outputs)} value(s) for "
                                f"{len(inputs)} loop variable(s); return one new value per loop variable")
        for i, (p, out) in enumerate(zip(inputs, body.outputs)):
            if out.dtype != p.dtype or not shapes_compatible(out.shape, p.shape):
                raise ShapeError(f"while_loop '{scope}': loop variable {i} is {p.dtype} of shape {p.shape} before "
                                 f"the loop but body_fn makes it {out.dtype} of shape {out.shape}; a loop variable "
                                 "must keep its dtype and shape (cast it, or start from a value of the final shape)")
        outputs = [WhileLoop(loop_vars, test, body, maximum_iterations, i, name="While") for i in range(len(inputs))]
    return outputs[0] if single else outputs


def _clone(sub, replacements):
    """Rebuild a subgraph's outputs with some of its nodes replaced (the unrolled loop's steps)."""
    from .jit.ops_io import rebuild_op
    built = dict(replacements)
    for node in sub.nodes:
        if node not in built:
            built[node] = rebuild_op(node, [built.get(i, i) for i in node.inputs])
    return [built.get(o, o) for o in sub.outputs]


def _unrolled(op):
    """The loop as `maximum_iterations` conds, built once per loop and shared by its outputs' gradients."""
    cache = op.body.__dict__.setdefault("_unrolled", {})  # the body is shared by every output op of one loop
    key = tuple(op.inputs)
    if key not in cache:
        loop = list(op.inputs[:op.n_vars])
        with op.graph.name_scope("while_unrolled"):
            for step in range(op.maximum_iterations):
                current = list(loop)
                keep_going = _clone(op.test, dict(zip(op.test.inputs, current)))[0]
                stepped = cond(keep_going, lambda: _clone(op.body, dict(zip(op.body.inputs, current))),
                               lambda: [_identity(v) for v in current], name=f"step{step}")
                loop = stepped if isinstance(stepped, list) else [stepped]
        cache[key] = loop
    return cache[key]


def _identity(node):
    return identity(node)


@register_gradient(WhileLoop)
def _while_grad(op, grad):
    if op.maximum_iterations is None:
        raise GradientError(
            f"cannot differentiate while_loop '{op.name}' (created at {op.creation_site}): its number of steps "
            "is unbounded. Pass maximum_iterations=N to tfl.while_loop so the backward pass can unroll it.")
    final = _unrolled(op)[op.index]
    wrt = list(dict.fromkeys(i for i in op.inputs if _float(i)))  # a node may be a loop var and a capture
    grads = dict(zip(wrt, gradients(final, wrt, grad_ys=grad))) if wrt else {}
    # the unrolled loop's gradient already sums every path from a node: hand it over once
    return [grads.pop(i, None) for i in op.inputs]
