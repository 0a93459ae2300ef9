"""Plans compiled per feed shapes: any value a kernel returns can feed a sub-plan, and shapes that never
stop changing compile a bounded number of times."""
import numpy as np

import tinyflow as tfl
from tinyflow.session.plan import MAX_SPECIALISATIONS, ExecutionPlan


class Half(tfl.Operation):
    """A user's op whose compute returns a Python float, not an array."""

    def compute(self, x):
        return float(x) / 2

    def infer_shape(self, shape):
        return ()

    def infer_dtype(self, dtype):
        return np.dtype(np.float64)


def test_control_flow_runs_values_without_a_shape_attribute():
    x = tfl.Placeholder((), np.float64, name="x")
    halved = tfl.while_loop(lambda v: v > 1.0, lambda v: Half(v), [x])
    picked = tfl.cond(x > 0, lambda: Half(x) * 2.0, lambda: Half(x))
    with tfl.Session() as sess:
        for _ in range(3):  # the first run is interpreted, later ones compiled
            assert np.ravel(sess.run(halved, {x: 40.0})).tolist() == [0.625]
            assert float(sess.run(picked, {x: 3.0})) == 3.0


def test_feed_shapes_that_keep_changing_compile_a_bounded_number_of_times(monkeypatch):
    compiles = []
    original_compile = ExecutionPlan.compile

    def counting_compile(plan, kernels=None):
        compiles.append(plan)
        return original_compile(plan, kernels)
    monkeypatch.setattr(ExecutionPlan, "compile", counting_compile)
    x = tfl.Placeholder((None,), name="x")
    start = tfl.Constant(np.int64(0))
    # the body's sub-plan sees a longer value at each of the 60 iterations
    _, grown = tfl.while_loop(lambda i, v: i < 60, lambda i, v: (i + 1, tfl.concat([v, v[:1] * 0.5], axis=0)),
                              [start, x])
    doubled = x * 2.0
    with tfl.Session() as sess:
        for _ in range(3):
            assert sess.run(grown, {x: np.ones(4, np.float32)}).shape == (64,)
        for rows in range(1, 40):  # a top-level plan fed 39 batch sizes
            np.testing.assert_array_equal(sess.run(doubled, {x: np.ones(rows, np.float32)}), 2.0)
    per_plan = {id(plan): compiles.count(plan) for plan in compiles}
    assert max(per_plan.values()) <= MAX_SPECIALISATIONS + 1  # one per shape at first, then one general form


class RowSums(tfl.Operation):
    """A user's op whose infer_shape returns an int, which shapes accept for a 1-d shape."""

    def compute(self, x):
        return x.sum(axis=1)

    def infer_shape(self, shape):
        return None if shape is None else shape[0]


def test_shapes_inferred_for_the_feed_shapes_are_normalised_like_static_ones():
    x = tfl.Placeholder((None, 3), name="x")
    total = tfl.reduce_sum(RowSums(x))
    with tfl.Session() as sess:
        for rows in (4, 4, 5):  # interpreted, then compiled for each feed shape
            assert sess.run(total, {x: np.ones((rows, 3), np.float32)}) == 3.0 * rows
