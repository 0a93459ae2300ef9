"""Assignment 2: gradient functions and gradcheck."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.testing import gradcheck

pytestmark = pytest.mark.assignment2


@pytest.fixture
def a2(student_module):
    return student_module("assignment2_gradients")


def test_numeric_gradient_of_known_functions(a2):
    x = np.array([[0.5, -1.0], [2.0, 0.1]])
    original = x.copy()
    np.testing.assert_allclose(a2.numeric_gradient(lambda v: np.sum(v ** 3), x), 3 * x ** 2, rtol=1e-6)
    np.testing.assert_array_equal(x, original)  # x is left as it was
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert a2.relative_error(a2.numeric_gradient(lambda v: np.sum(np.sin(v) * w), x), np.cos(x) * w) < 1e-7


def test_numeric_gradient_agrees_with_a_tinyflow_gradient(a2):
    x0 = np.random.default_rng(0).standard_normal((3, 4))
    x = tfl.Placeholder((3, 4), "float64")
    loss = tfl.reduce_sum(tfl.tanh(x) * x)
    with tfl.Session() as sess:
        analytic = sess.run(tfl.gradients(loss, [x])[0], {x: x0})
        numeric = a2.numeric_gradient(lambda v: float(sess.run(loss, {x: v})), x0)
    assert a2.relative_error(analytic, numeric) < 1e-6


def test_swish_gradient(a2):
    assert gradcheck(a2.Swish, [np.random.default_rng(1).standard_normal((4, 3))]).ok


def test_weighted_sum_gradient_for_both_inputs(a2):
    rng = np.random.default_rng(2)
    assert gradcheck(a2.WeightedSum, [rng.standard_normal((5, 3)), rng.standard_normal(3)]).ok


def test_weighted_sum_gradient_with_an_unknown_batch(a2):
    x, w = tfl.Placeholder((None, 3), "float64"), tfl.Variable(np.array([1.0, -2.0, 0.5]))
    gx, gw = tfl.gradients(tfl.reduce_sum(a2.WeightedSum(x, w)), [x, w])
    data = np.arange(6.0).reshape(2, 3)
    with tfl.Session() as sess:
        got_x, got_w = sess.run([gx, gw], {x: data})
    np.testing.assert_allclose(got_x, np.tile(w.value, (2, 1)))
    np.testing.assert_allclose(got_w, data.sum(0))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_logsumexp_gradient(a2, shape):
    assert gradcheck(a2.LogSumExp, [np.random.default_rng(3).standard_normal(shape)]).ok
