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
        lines = [f"gradcheck{f' of {self.checked}' if self.checked else ''} {'passed' if self.ok else 'FAILED'}"]
        if self.fed_only:
            lines.append(f"  integer input(s) {', '.join(map(str, self.fed_only))} fed but not checked "
                         "(pass floats to check them)")
        lines += [f"  direction {d['direction']}: analytic {d['analytic']:.6g}, numeric {d['numeric']:.6g}, "
                  f"error {d['error']:.3g}" for d in self.directional]
        w = self.worst
        if w:
            lines.append(f"  worst element: input {w['input']} index {w['index']} (input value {w['value']:.6g}): "
                         f"analytic {w['analytic']:.6g}, numeric {w['numeric']:.6g}")
            if w.get("ops"):
                lines.append(f"  check the gradient function(s) registered for: {', '.join(w['ops'])}")
        return "\n".join(lines)


def gradcheck(build, inputs, eps=1e-6, atol=1e-6, rtol=1e-4, directions=3, seed=0, backend=None,
              raise_on_failure=True):
    """Compare tfl.gradients of `build(*input_nodes)` with central finite differences in float64: `build` gets
    one Placeholder per input and returns a node, whose derivatives along random directions are compared; on
    failure every element is checked to report the worst one. Integer inputs (labels) are fed, not checked."""
    inputs = [np.asarray(v).astype(np.float64) if np.asarray(v).dtype.kind == "f" else np.asarray(v) for v in inputs]
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
        built_ops = list(dict.fromkeys(n.op_type for n in graph.nodes[len(nodes):]))  # where a failure points
        sess = Session(graph, backend=backend)
        feed = dict(zip(nodes, inputs))
        loss = reduce_sum(out * Constant(rng.standard_normal(np.shape(sess.run(out, feed)))))
        grads = gradients(loss, [nodes[i] for i in checked])
        analytic = {i: np.zeros_like(inputs[i]) if g is None else sess.run(g, feed) for i, g in zip(checked, grads)}

        def slope(steps):
            """The loss's central finite difference along `steps` ({input index: direction})."""
            shifted = [{**feed, **{nodes[i]: inputs[i] + sign * eps * s for i, s in steps.items()}} for sign in (1, -1)]
            return (float(sess.run(loss, shifted[0])) - float(sess.run(loss, shifted[1]))) / (2 * eps)

        results = []
        for k in range(directions):
            steps = {i: rng.standard_normal(inputs[i].shape) for i in checked}
            numeric, exact = slope(steps), float(sum(np.sum(analytic[i] * s) for i, s in steps.items()))
            results.append(dict(direction=k, analytic=exact, numeric=numeric, error=abs(numeric - exact)))
        ok = all(r["error"] <= atol + rtol * abs(r["numeric"]) for r in results)
        worst = None
        for i in [] if ok else checked:  # element by element: the one with the largest error
            for index in np.ndindex(inputs[i].shape):
                unit = np.zeros_like(inputs[i])
                unit[index] = 1.0
                numeric, exact = slope({i: unit}), float(analytic[i][index])
                if worst is None or abs(numeric - exact) > worst["error"]:
                    worst = dict(input=i, index=index, value=float(inputs[i][index]), analytic=exact, numeric=numeric,
                                 error=abs(numeric - exact), ops=built_ops)
    report = GradcheckReport(ok, results, worst, checked=f"{out.op_type} node '{out.name}'",
                             fed_only=[i for i in range(len(inputs)) if i not in checked])
    if not ok and raise_on_failure:
        raise GradientCheckError(str(report))
    return report
