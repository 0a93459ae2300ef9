"""Assignment 3: the backprop walk with pending counts, against tfl.gradients."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.assignment3


@pytest.fixture
def a3(student_module):
    return student_module("assignment3_backprop")


def diamond():
    """loss = x·a·b + x: x has two consumers, so a plain BFS would take it too early."""
    x, a, b = (tfl.Variable(np.array(v), name=n) for v, n in ((2.0, "x"), (3.0, "a"), (5.0, "b")))
    xa = tfl.multiply(x, a, name="xa")
    xab = tfl.multiply(xa, b, name="xab")
    return tfl.add(xab, x, name="loss"), x, a, b


def test_nodes_between(a3):
    loss, x, a, b = diamond()
    unrelated = tfl.Variable(np.array(1.0), name="unrelated")
    assert {n.name for n in a3.nodes_between(loss, [x])} == {"x", "xa", "xab", "loss"}
    assert {n.name for n in a3.nodes_between(loss, [a, b])} == {"a", "b", "xa", "xab", "loss"}
    assert a3.nodes_between(loss, [unrelated]) == set()


def test_pending_counts_count_consumers_on_the_path(a3):
    loss, x, a, b = diamond()
    counts = {n.name: c for n, c in a3.pending_counts(a3.nodes_between(loss, [x, a, b])).items()}
    assert counts == {"x": 2, "a": 1, "b": 1, "xa": 1, "xab": 1, "loss": 0}


def test_x_waits_for_both_consumers(a3):
    loss, x, a, b = diamond()
    order = [n.name for n in a3.backprop_order(loss, [x, a, b])]
    assert order == ["loss", "xab", "xa", "b", "x", "a"]
    assert order.index("x") > order.index("xa")


def test_the_order_is_the_one_tinyflow_takes(a3):
    loss, x, a, b = diamond()
    assert [n.name for n in a3.backprop_order(loss, [x, a])] == tfl.viz.backprop_steps(loss, [x, a]).order


def run(nodes, feed=None):
    with tfl.Session() as sess:
        return sess.run(nodes, feed or {})


def test_gradients_of_the_diamond(a3):
    loss, x, a, b = diamond()
    assert run(a3.gradients(loss, [x, a, b])) == [16.0, 10.0, 6.0]


def test_gradients_of_an_mlp_with_broadcast_bias_match_tinyflow(a3):
    rng = np.random.default_rng(0)
    inputs = tfl.Placeholder((None, 4), "float64")
    w1, b1 = tfl.Variable(rng.standard_normal((4, 5))), tfl.Variable(rng.standard_normal(5))
    w2 = tfl.Variable(rng.standard_normal((5, 1)))
    hidden = tfl.tanh(inputs @ w1 + b1)
    loss = tfl.reduce_mean(tfl.square(hidden @ w2) + hidden[:, :1])  # hidden is used twice
    feed = {inputs: rng.standard_normal((6, 4))}
    mine, reference = run(a3.gradients(loss, [w1, b1, w2]), feed), run(tfl.gradients(loss, [w1, b1, w2]), feed)
    for got, expected in zip(mine, reference):
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_unconnected_and_integer_paths_get_no_gradient(a3):
    x = tfl.Variable(np.array([1.0, 2.0]), name="x")
    other = tfl.Variable(np.array(3.0), name="other")
    labels = tfl.Constant(np.array([1, 0]))
    loss = tfl.reduce_sum(x * x) + tfl.reduce_sum(tfl.cast(labels, "float64"))
    gx, gother = a3.gradients(loss, [x, other])
    assert gother is None
    np.testing.assert_allclose(run(gx), [2.0, 4.0])
    assert a3.gradients(loss, [labels]) == [None]
