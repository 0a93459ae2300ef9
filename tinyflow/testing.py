"""Checking gradients by finite differences: the tool to test any op, yours included."""
import numpy as np

from .autodiff.gradients import gradients
from .errors import GradientCheckError, TinyflowError
from .graph import Graph
from .nodes import Constant, Placeholder
from .ops.reductions import reduce_sum
from .session import Session


class GradcheckInputError(TinyflowError, TypeError):
    """gradcheck was given inputs it cannot differentiate (no floating-point input)."""


class GradcheckReport:
    """What gradcheck found: whether it passed, and the worst disagreement."""

    def __init__(self, ok, directional, worst, checked="", fed_only=()):
        self.ok, self.directional, self.worst, self.checked = ok, directional, worst, checked
        self.fed_only = tuple(fed_only)  # integer inputs: fed, never differentiated

    def __str__(self):
        of = f" of {self.checked}" if self.checked else ""
        lines = [f"gradcheck{of} {'passed' if self.ok else 'FAILED'}"]
        if self.fed_only:
            lines.append(f"  integer input(s) {', '.join(map(str, self.fed_only))} fed but not checked "
                         "(pass floats to check them)")
        for d in self.directional:
            lines.append(f"  direction {d['direction']}: analytic {d['analytic']:.6g}, "
                         f"numeric {d['numeric']:.6g}, error {d['error']:.3g}")
        if self.worst:
            w = self.worst
            lines.append(f"  worst element: input {w['input']} index {w['index']} (input value {w['value']:.6g}): "
                         f"analytic {w['analytic']:.6g}, numeric {w['numeric']:.6g}")
            if w.get("ops"):
                lines.append(f"  check the gradient function(s) registered for: {', '.join(w['ops'])}")
        return "\n".join(lines)


def _as_float64(value):
    array = np.asarray(value)
    return array.astype(np.float64) if array.dtype.kind == "f" else array


def gradcheck(build, inputs, eps=1e-6, atol=1e-6, rtol=1e-4, directions=3, seed=0, backend=None,
              raise_on_failure=True):
    """Compare tfl.gradients of `build(*input_nodes)` with central finite differences in float64.

    `build` receives one Placeholder per input and returns a node. The output
    is projected on a random tensor, then the analytic and numeric
    derivatives along random directions are compared; on failure every
    element is checked to report the worst one. Integer inputs (labels) are
    fed but not differentiated.
    """
    inputs = [_as_float64(v) for v in inputs]
    checked = [i for i, v in enumerate(inputs) if v.dtype.kind == "f"]
    if not checked:
        kinds = ", ".join(f"input {i}: {v.dtype}" for i, v in enumerate(inputs)) or "no inputs"
        raise GradcheckInputError(
            f"gradcheck has nothing to differentiate: no input is floating-point ({kinds}). Finite "
            "differences need real-valued inputs: pass e.g. np.array([1, 2, 3], dtype=np.float64) or "
            "x.astype(np.float64); integer inputs (such as class labels) are only fed, never checked.")
    rng = np.random.default_rng(seed)
    with Graph().as_default() as graph:
        nodes = [Placeholder(v.shape, v.dtype, name=f"input{i}") for i, v in enumerate(inputs)]
        out = build(*nodes)
        # the op types `build` created: the gradient functions a failure points at
        built_ops = list(dict.fromkeys(n.op_type for n in graph.nodes[len(nodes):]))
        sess = Session(graph, backend=backend)
        feed = dict(zip(nodes, inputs))
        projection = Constant(rng.standard_normal(np.shape(sess.run(out, feed))))
        loss = reduce_sum(out * projection)
        grads = gradients(loss, [nodes[i] for i in checked])
        analytic = [np.zeros_like(inputs[i]) if g is None else sess.run(g, feed) for i, g in zip(checked, grads)]

        def loss_at(shifted):
            return float(sess.run(loss, {**feed, **shifted}))

        results, ok = [], True
        for k in range(directions):
            steps = {i: rng.standard_normal(inputs[i].shape) for i in checked}
            plus = {nodes[i]: inputs[i] + eps * steps[i] for i in checked}
            minus = {nodes[i]: inputs[i] - eps * steps[i] for i in checked}
            numeric = (loss_at(plus) - loss_at(minus)) / (2 * eps)
            exact = float(sum(np.sum(a * steps[i]) for a, i in zip(analytic, checked)))
            error = abs(numeric - exact)
            ok &= error <= atol + rtol * abs(numeric)
            results.append(dict(direction=k, analytic=exact, numeric=numeric, error=error))

        worst = None if ok else _worst_element(inputs, checked, analytic, nodes, feed, loss_at, eps)
        if worst is not None:
            worst["ops"] = built_ops
    report = GradcheckReport(ok, results, worst, checked=f"{out.op_type} node '{out.name}'",
                             fed_only=[i for i in range(len(inputs)) if i not in checked])
    if not ok and raise_on_failure:
        raise GradientCheckError(str(report))
    return report


def _worst_element(inputs, checked, analytic, nodes, feed, loss_at, eps):
    """Element-by-element finite differences, returning the element with the largest error."""
    worst = None
    for a, i in zip(analytic, checked):
        for index in np.ndindex(inputs[i].shape):
            bumped = inputs[i].copy()
            bumped[index] += eps
            up = loss_at({nodes[i]: bumped})
            bumped[index] -= 2 * eps
            numeric = (up - loss_at({nodes[i]: bumped})) / (2 * eps)
            error = abs(numeric - a[index])
            if worst is None or error > worst["error"]:
                worst = dict(input=i, index=index, value=float(inputs[i][index]), analytic=float(a[index]),
                             numeric=numeric, error=error)
    return worst
