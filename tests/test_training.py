"""End to end: the user story of the README converges where it should."""
import numpy as np
import pytest

import tinyflow as tfl


def standardized_boston():
    X, y = tfl.data.load_boston()
    return (X - X.mean(0)) / X.std(0), y[:, None]


def test_linear_regression_by_gradient_descent_reaches_least_squares(backend):
    X, y = standardized_boston()
    x = tfl.Placeholder((None, 13), "float64", name="x")
    t = tfl.Placeholder((None, 1), "float64", name="t")
    w = tfl.Variable(np.zeros((13, 1)), name="w")
    b = tfl.Variable(np.zeros(1), name="b")
    loss = tfl.reduce_mean(tfl.square(x @ w + b - t))
    train = tfl.optim.SGD(lr=0.2, momentum=0.9).minimize(loss)
    with tfl.Session() as sess:
        for _ in range(3000):
            sess.run(train, {x: X, t: y})
    solution, *_ = np.linalg.lstsq(np.hstack([X, np.ones((506, 1))]), y, rcond=None)
    np.testing.assert_allclose(np.vstack([w.value, b.value[:, None]]), solution, atol=1e-4)


def test_the_readme_user_story_trains_with_adam_in_float32(backend):
    X, y = tfl.data.load_boston()
    X_std = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    x = tfl.Placeholder(shape=(None, 13), name="x")
    t = tfl.Placeholder(shape=(None, 1), name="t")
    w = tfl.Variable(np.zeros((13, 1), np.float32), name="w")
    b = tfl.Variable(np.zeros(1, np.float32), name="b")
    loss = tfl.reduce_mean(tfl.square(x @ w + b - t))
    train = tfl.optim.Adam(lr=0.01).minimize(loss)
    with tfl.Session() as sess:
        losses = [sess.run([train, loss], {x: X_std, t: y[:, None].astype(np.float32)})[1] for _ in range(500)]
    # Adam moves each weight by about lr per step, so 500 steps cover a good part of the way to y's mean of 22.5
    assert w.value.dtype == np.float32 and losses[-1] < 0.6 * losses[0]
    assert np.all(np.diff(losses) < 0)  # full-batch Adam at this rate decreases the loss at every step


@pytest.mark.slow
def test_a_100000_node_chain_builds_differentiates_and_runs():
    x = tfl.Placeholder((), "float64", name="x")
    one = tfl.Constant(np.float64(1.0))
    y = x
    for _ in range(100_000):
        y = y + one
    (g,) = tfl.gradients(y * 2.0, [x])
    with tfl.Session() as sess:
        value, grad = sess.run([y, g], {x: 0.5})
    assert value == 100_000.5 and grad == 2.0
