"""The backprop engine: dependency order, summing, broadcasting, seeds, errors, higher order."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.testing import gradcheck


def run(fetches, feed=None):
    with tfl.Session() as sess:
        return sess.run(fetches, feed or {})


def test_diamond_graph_waits_for_every_consumer():
    # loss = x*a*b + x: a plain BFS would pop x after the `+` delivered and miss the product path
    x, a, b = (tfl.Variable(np.array(v)) for v in (2.0, 3.0, 5.0))
    loss = x * a * b + x
    gx, ga, gb = run(tfl.gradients(loss, [x, a, b]))
    assert (gx, ga, gb) == (3.0 * 5.0 + 1.0, 2.0 * 5.0, 2.0 * 3.0)


@pytest.mark.parametrize("build, expected", [
    (lambda x: x * x * x, lambda x: 3 * x ** 2),                       # one node consumed three times
    (lambda x: (x + x) * (x - 1.0), lambda x: 4 * x - 2),             # two paths of different length
    (lambda x: tfl.exp(x) * tfl.exp(x) + tfl.exp(x), lambda x: 2 * np.exp(2 * x) + np.exp(x)),
    (lambda x: tfl.add_n([x, x * 2.0, tfl.square(x)]), lambda x: 3 + 2 * x),
])
def test_shared_subexpressions_get_exact_gradients(build, expected):
    value = np.array([0.5, -1.5, 2.0])
    x = tfl.Placeholder((3,), "float64")
    (g,) = tfl.gradients(tfl.reduce_sum(build(x)), [x])
    np.testing.assert_allclose(run(g, {x: value}), expected(value), rtol=1e-12)


def test_broadcast_gradients_are_summed_not_averaged():
    x = tfl.Placeholder((None, 3), "float64")
    b = tfl.Variable(np.zeros(3))
    s = tfl.Variable(np.array(2.0))
    loss = tfl.reduce_sum((x + b) * s)
    gb, gs = run(tfl.gradients(loss, [b, s]), {x: np.ones((4, 3))})
    np.testing.assert_allclose(gb, [8.0, 8.0, 8.0])  # 4 rows summed, times s
    assert gs == 12.0


def test_unconnected_stopped_and_integer_inputs_get_none():
    x = tfl.Placeholder((3,), "float64")
    unused = tfl.Variable(np.zeros(3))
    labels = tfl.Placeholder((3,), "int64")
    y = tfl.reduce_sum(x * tfl.stop_gradient(x) + tfl.cast(labels, "float64"))
    gx, gu, gl = tfl.gradients(y, [x, unused, labels])
    assert gu is None and gl is None
    np.testing.assert_allclose(run(gx, {x: [1.0, 2.0, 3.0], labels: [0, 1, 2]}), [1.0, 2.0, 3.0])


def test_several_ys_are_summed_and_non_scalar_ys_seeded_with_ones():
    x = tfl.Placeholder((2,), "float64")
    y1, y2 = x * 3.0, tfl.square(x)
    (g,) = tfl.gradients([y1, y2], [x])
    np.testing.assert_allclose(run(g, {x: [1.0, 2.0]}), [5.0, 7.0])
    (ones,) = tfl.gradients(y2, [y2])
    np.testing.assert_allclose(run(ones, {x: [1.0, 2.0]}), [1.0, 1.0])


def test_grad_ys_seeds_the_backward_pass():
    x = tfl.Placeholder((2,), "float64")
    y = x * 3.0
    (g,) = tfl.gradients(y, [x], grad_ys=[np.array([1.0, -2.0])])
    np.testing.assert_allclose(run(g, {x: [0.0, 0.0]}), [3.0, -6.0])
    with pytest.raises(tfl.GradientError, match="grad_ys"):
        tfl.gradients(y, [x], grad_ys=[np.ones(5)])


def test_gradients_are_graph_nodes_so_second_derivatives_work():
    x = tfl.Placeholder((3,), "float64")
    y = tfl.reduce_sum(x ** 3.0)
    (g,) = tfl.gradients(y, [x])
    (h,) = tfl.gradients(g, [x])
    assert isinstance(g, tfl.Node) and g.role == "gradient"
    np.testing.assert_allclose(run(h, {x: [1.0, 2.0, -1.0]}), [6.0, 12.0, -6.0])


@pytest.mark.parametrize("f", [
    lambda x: tfl.tanh(x) * tfl.sigmoid(x),
    lambda x: tfl.softmax(x) * x,
    lambda x: tfl.log_softmax(x * 2.0),
    lambda x: tfl.matmul(x, tfl.transpose(x)),
    lambda x: tfl.reduce_max(x, axis=1) * tfl.reduce_mean(x),
])
def test_double_backward_matches_finite_differences(f):
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((3, 4))
    gradcheck(lambda x: tfl.gradients(tfl.reduce_sum(f(x) * 1.5), [x])[0] * weights, [rng.standard_normal((3, 4))])


def test_double_backward_through_conv_and_pool():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 1, 3, 3))

    def first_gradient(x):
        y = tfl.max_pool2d(tfl.tanh(tfl.conv2d(x, w, padding=1)), 2)
        return tfl.gradients(tfl.reduce_sum(tfl.square(y)), [x])[0]
    gradcheck(first_gradient, [rng.standard_normal((1, 1, 4, 4))])


def test_missing_gradient_names_the_op_type_and_node():
    class Mystery(tfl.Operation):
        def __init__(self, x, name=None):
            super().__init__(x, name=name)

        def compute(self, x):
            return x

        def infer_shape(self, s):
            return s

    x = tfl.Placeholder((2,), name="x")
    y = Mystery(x, name="mystery")
    with pytest.raises(tfl.GradientError) as err:
        tfl.gradients(tfl.reduce_sum(y), [x])
    for fragment in ("Mystery", "'mystery'", "test_gradients.py", "register_gradient", "not_differentiable"):
        assert fragment in str(err.value)


def test_gradient_function_results_are_checked():
    class Twice(tfl.Operation):
        def __init__(self, x, name=None):
            super().__init__(x, name=name)

        def compute(self, x):
            return 2 * x

        def infer_shape(self, s):
            return s

    x = tfl.Placeholder((2, 3), name="x")

    @tfl.register_gradient(Twice)
    def _wrong_count(op, grad):
        return [grad, grad]
    with pytest.raises(tfl.GradientError, match=r"Twice.*returned 2 gradient\(s\) for 1 input"):
        tfl.gradients(tfl.reduce_sum(Twice(x)), [x])

    @tfl.register_gradient(Twice)
    def _wrong_shape(op, grad):
        return [tfl.reduce_sum(grad, axis=0)]
    with pytest.raises(tfl.GradientError, match=r"Twice.*shape \(3,\) for input 0.*\(2, 3\)"):
        tfl.gradients(tfl.reduce_sum(Twice(x)), [x])


def test_non_differentiable_ops_pass_no_gradient():
    x = tfl.Placeholder((3,), "float64")
    y = tfl.reduce_sum(tfl.sign(x) * x)  # sign is marked non-differentiable
    (g,) = tfl.gradients(y, [x])
    np.testing.assert_allclose(run(g, {x: [-2.0, 3.0, 1.0]}), [-1.0, 1.0, 1.0])


def test_dropout_gradient_is_the_same_mask_as_the_forward_pass():
    x = tfl.Placeholder((1000,), "float64")
    y = tfl.dropout(x, rate=0.3, seed=3)
    (g,) = tfl.gradients(tfl.reduce_sum(y), [x])
    out, grad = run([y, g], {x: np.ones(1000)})
    assert np.array_equal(out, grad)  # y = x * mask, x = 1: the output is the mask
    assert set(np.unique(grad)) == {0.0, 1.0 / 0.7}
    assert 0.2 < np.mean(grad == 0) < 0.4


def test_gradients_of_a_stop_at_xs_does_not_walk_further_back():
    a = tfl.Variable(np.array(2.0))
    x = a * 3.0
    y = x * x
    gx, ga = tfl.gradients(y, [x, a])
    assert (run(gx), run(ga)) == (12.0, 36.0)


def test_gradients_of_something_not_a_node_raise_an_argument_error():
    x = tfl.Placeholder((3,), name="x")
    with pytest.raises(tfl.ArgumentError, match=r"gradients\(\) takes graph nodes, got 3.0"):
        tfl.gradients(3.0, [x])
