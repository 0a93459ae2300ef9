"""Graph control flow: tfl.cond and tfl.while_loop run subgraphs, differentiate, and draw as clusters."""
import numpy as np
import pytest

import tinyflow as tfl
import tinyflow.testing  # noqa: F401
from tinyflow.errors import ExecutionError, ShapeError, TinyflowError

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


class Counted(tfl.Operation):
    """Identity that counts how often it runs (to see which branch ran)."""

    runs = 0

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        type(self).runs += 1
        return x

    def infer_shape(self, x_shape):
        return x_shape


tfl.not_differentiable(Counted)


def test_cond_runs_only_the_taken_branch_and_keeps_a_dynamic_batch():
    x = tfl.Placeholder((None, 3), "float32", name="x")
    flag = tfl.Placeholder((), "bool", name="flag")
    y = tfl.cond(flag, lambda: Counted(x) * 2.0, lambda: tfl.exp(x))
    assert y.shape == (None, 3) and y.dtype == np.float32
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tfl.Session() as sess:
        Counted.runs = 0
        np.testing.assert_allclose(sess.run(y, {x: data, flag: False}), np.exp(data), rtol=1e-6)
        assert Counted.runs == 0
        np.testing.assert_allclose(sess.run(y, {x: data[:1], flag: True}), data[:1] * 2)
        assert Counted.runs == 1


def test_cond_with_several_outputs_and_tensor_predicate():
    x = tfl.Placeholder((4,), "float64", name="x")
    a, b = tfl.cond(tfl.greater(tfl.reduce_sum(x), 0.0), lambda: (x + 1.0, x * 2.0), lambda: (x - 1.0, x * 3.0))
    with tfl.Session() as sess:
        ra, rb = sess.run([a, b], {x: np.ones(4)})
        np.testing.assert_allclose(ra, 2.0)
        np.testing.assert_allclose(rb, 2.0)
        ra, rb = sess.run([a, b], {x: -np.ones(4)})
        np.testing.assert_allclose(ra, -2.0)
        np.testing.assert_allclose(rb, -3.0)


def test_cond_gradient_follows_the_taken_branch():
    x = tfl.Placeholder((3,), "float64", name="x")
    flag = tfl.Placeholder((), "bool", name="flag")
    y = tfl.cond(flag, lambda: tfl.square(x), lambda: x * 5.0)
    (g,) = tfl.gradients(tfl.reduce_sum(y), [x])
    data = np.array([1.0, 2.0, 3.0])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: data, flag: True}), 2 * data)
        np.testing.assert_allclose(sess.run(g, {x: data, flag: False}), np.full(3, 5.0))


def test_training_a_variable_through_cond_matches_the_branch_free_model():
    w = tfl.Variable(np.array([0.5, -0.25], np.float32), name="w")
    x = tfl.Placeholder((None, 2), name="x")
    flag = tfl.Placeholder((), "bool", name="flag")
    loss = tfl.reduce_mean(tfl.square(tfl.cond(flag, lambda: tfl.matmul(x, w[:, None]), lambda: x * 0.0)))
    train = tfl.optim.SGD(0.1).minimize(loss)
    data = np.ones((3, 2), np.float32)
    with tfl.Session() as sess:
        sess.run(train, {x: data, flag: False})
        np.testing.assert_allclose(w.value, [0.5, -0.25])  # the false branch does not read w: no update
        sess.run(train, {x: data, flag: True})
        # d/dw mean((x·w)^2) = 2 (x·w) x, with x·w = 0.25
        np.testing.assert_allclose(w.value, [0.5 - 0.1 * 0.5, -0.25 - 0.1 * 0.5], rtol=1e-6)


def test_cond_errors_name_the_problem():
    x = tfl.Placeholder((3,), "float32", name="x")
    with pytest.raises(ShapeError, match="dtype"):
        tfl.cond(tfl.Placeholder((), "bool"), lambda: x, lambda: tfl.cast(x, "float64"))
    with pytest.raises(TinyflowError, match="same number"):
        tfl.cond(tfl.Placeholder((), "bool"), lambda: (x, x), lambda: x)
    with pytest.raises(ShapeError, match="single value"):
        tfl.cond(tfl.Placeholder((3,), "bool"), lambda: x, lambda: x)
    unknown = tfl.Placeholder(None, "bool", name="unknown")
    y = tfl.cond(unknown, lambda: x, lambda: -x)
    with tfl.Session() as sess, pytest.raises(ExecutionError, match="one value"):
        sess.run(y, {x: np.ones(3), unknown: np.ones(3, bool)})


def test_while_loop_counts_and_respects_maximum_iterations():
    i, total = tfl.while_loop(lambda i, s: tfl.less(i, 10), lambda i, s: (i + 1, s + tfl.cast(i, "float32")),
                              [tfl.Constant(0), tfl.Constant(0.0)])
    capped = tfl.while_loop(lambda v: tfl.less(v, 1e9), lambda v: v * 2.0, tfl.Constant(1.0), maximum_iterations=4)
    with tfl.Session() as sess:
        assert sess.run([i, total, capped]) == [10, 45.0, 16.0]


def test_while_loop_reads_outer_nodes_and_a_dynamic_batch():
    x = tfl.Placeholder((None, 2), "float64", name="x")
    n = tfl.Placeholder((), "int64", name="n")
    _, y = tfl.while_loop(lambda k, v: tfl.less(k, n), lambda k, v: (k + 1, v * x), [tfl.Constant(np.int64(0)), x])
    data = np.array([[1.0, 2.0], [3.0, 0.5]])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: data, n: 3}), data ** 4)
        np.testing.assert_allclose(sess.run(y, {x: data[:1], n: 0}), data[:1])


def test_while_loop_gradient_with_and_without_a_bound():
    def loop(bound):
        return lambda v: tfl.while_loop(lambda k, u: tfl.less(k, 3), lambda k, u: (k + 1, tfl.tanh(u) * v),
                                        [tfl.Constant(0), v], maximum_iterations=bound)[1]
    for bound in (None, 6, 2):  # a bound below the test's count stops the loop there, as in TensorFlow
        tfl.testing.gradcheck(loop(bound), [np.array([0.3, -0.7, 1.2])])


def test_while_loop_shape_and_arity_errors():
    x = tfl.Placeholder((3,), "float32", name="x")
    with pytest.raises(ShapeError, match="keep its dtype and shape"):
        tfl.while_loop(lambda v: tfl.less(tfl.reduce_sum(v), 1.0), lambda v: tfl.concat([v, v], 0), x)
    with pytest.raises(TinyflowError, match="one boolean"):
        tfl.while_loop(lambda v: v, lambda v: v, x)
    with pytest.raises(TinyflowError, match="one new value per loop variable"):
        tfl.while_loop(lambda a, b: tfl.less(tfl.reduce_sum(a), 1.0), lambda a, b: a, [x, x])


def test_branches_and_loop_bodies_are_drawn_as_clusters():
    x = tfl.Placeholder((3,), name="x")
    y = tfl.cond(tfl.greater(tfl.reduce_sum(x), 0.0), lambda: tfl.relu(x), lambda: -x)
    z = tfl.while_loop(lambda v: tfl.less(tfl.reduce_sum(v), 10.0), lambda v: v * 2.0, y, maximum_iterations=5)
    source = tfl.viz.to_graphviz(z).source
    for cluster in ("cluster_cond/true", "cluster_cond/false", "cluster_while/body", "cluster_while/cond"):
        assert cluster in source
    assert "Relu" in source and "style=dashed" in source


def test_a_branch_or_loop_body_that_is_not_a_function_raises_argument_error():
    x = tfl.Placeholder((), "float32", name="x")
    with pytest.raises(tfl.ArgumentError, match="'cond/true' needs a function building its nodes, got 1"):
        tfl.cond(x > 0, 1, lambda: x)
    with pytest.raises(tfl.ArgumentError, match="'while/body' needs a function building its nodes, got 'x'"):
        tfl.while_loop(lambda i: i < 3, "x", [x])


def test_range_of_non_integers_or_a_zero_step_raises_argument_error():
    with pytest.raises(tfl.ArgumentError, match="range: stop='a' is not an integer"):
        tfl.range("a")
    with pytest.raises(tfl.ArgumentError, match="range: step=0.5 is not an integer"):
        tfl.range(0, 3, 0.5)
    for stop in (5, tfl.Placeholder((), "int64")):
        with pytest.raises(tfl.ArgumentError, match="range: step=0 is zero"):
            tfl.range(0, stop, 0)
    assert list(tfl.range(np.int64(2), 8, 3)) == [2, 5]


def test_cond_and_while_loop_on_an_eager_condition_of_several_values_say_to_reduce_it():
    """Eager tfl.cond / tfl.while_loop decide in Python; a condition tensor of several values raises tinyflow's error
    (naming tfl.any / tfl.all), not numpy's raw ValueError; one value decides as in Python."""
    x = tfl.tensor([1.0, -1.0])
    with pytest.raises(TinyflowError, match="tfl.any"):
        tfl.cond(x > 0, lambda: x, lambda: -x)
    with pytest.raises(TinyflowError, match="tfl.any"):
        tfl.while_loop(lambda v: v > 0, lambda v: v - 1.0, [x])
    assert tfl.cond(tfl.tensor(True), lambda: x, lambda: -x) is x
    assert float(tfl.while_loop(lambda v: v > 0, lambda v: v - 1.0, tfl.tensor(2.5))) == -0.5
