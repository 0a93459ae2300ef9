"""Running fetches with and without the optimiser, side by side."""
import numpy as np

import tinyflow as tfl


def run_both(fetches, feed=None, backend=None, runs=1, **options):
    """(optimised values, unoptimised values, plan) of `fetches` on `backend`."""
    graph = tfl.get_default_graph()
    plain = tfl.Session(graph, backend=backend, optimize=False).run(fetches, feed)
    sess = tfl.Session(graph, backend=backend, optimize=options or True)
    for _ in range(runs):
        optimised = sess.run(fetches, feed)
    nodes = [graph.get_node(f) if isinstance(f, str) else f for f in (fetches if isinstance(fetches, list) else [fetches])]
    plan = sess.plan(nodes, {graph.get_node(k) if isinstance(k, str) else k for k in (feed or {})})
    return optimised, plain, plan


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    """Nested lists of arrays equal within tolerance (NaN where NaN)."""
    if isinstance(a, (list, tuple)):
        for x, y in zip(a, b):
            assert_close(x, y, rtol, atol)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, equal_nan=True)


def op_types(plan):
    """The op types a plan runs, in order."""
    return [step.node.op_type for step in plan.steps]
