"""Assignment 4: optimizers against their formulas and against tinyflow's (= PyTorch's) optimizers."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.assignment4

START = np.array([[1.0, -2.0], [0.5, 3.0]])
TARGET = np.array([[0.0, 1.0], [-1.0, 2.0]])


@pytest.fixture
def a4(student_module):
    return student_module("assignment4_optimizers")


def trajectory(optimizer, steps=6):
    """Parameter values after each step of minimising a quartic-ish loss with `optimizer`."""
    with tfl.Graph().as_default():
        w = tfl.Variable(START.copy(), name="w")
        loss = tfl.reduce_sum(tfl.square(w - TARGET) * (1.0 + tfl.square(w)))
        train = optimizer.minimize(loss)
        values = []
        with tfl.Session() as sess:
            for _ in range(steps):
                sess.run(train)
                values.append(w.value.copy())
    return np.array(values)


def test_momentum_first_step_is_plain_sgd(a4):
    sgd = trajectory(tfl.optim.SGD(0.01), steps=1)
    np.testing.assert_allclose(trajectory(a4.Momentum(0.01, momentum=0.9), steps=1), sgd, rtol=1e-12)


def test_momentum_matches_sgd_with_momentum(a4):
    np.testing.assert_allclose(trajectory(a4.Momentum(0.01, momentum=0.9)),
                               trajectory(tfl.optim.SGD(0.01, momentum=0.9)), rtol=1e-10)


def test_rmsprop_first_step_formula(a4):
    w = START
    g = 2 * (w - TARGET) * (1 + w ** 2) + 2 * w * (w - TARGET) ** 2
    s = 0.01 * g ** 2
    np.testing.assert_allclose(trajectory(a4.RMSProp(0.01, alpha=0.99), steps=1)[0],
                               w - 0.01 * g / (np.sqrt(s) + 1e-8), rtol=1e-10)


def test_rmsprop_matches_tinyflow(a4):
    np.testing.assert_allclose(trajectory(a4.RMSProp(0.01, alpha=0.9, eps=1e-6)),
                               trajectory(tfl.optim.RMSProp(0.01, alpha=0.9, eps=1e-6)), rtol=1e-10)


def test_adam_first_step_moves_each_weight_by_about_lr(a4):
    """With bias correction, step 1 is p - lr·g/(|g| + ε): every weight moves by lr against its gradient."""
    step = trajectory(a4.Adam(0.1), steps=1)[0] - START
    np.testing.assert_allclose(np.abs(step), 0.1, rtol=1e-6)


def test_adam_matches_tinyflow(a4):
    np.testing.assert_allclose(trajectory(a4.Adam(0.05, betas=(0.8, 0.99))),
                               trajectory(tfl.optim.Adam(0.05, betas=(0.8, 0.99))), rtol=1e-10)


def test_slots_are_state_variables_holding_the_moments(a4):
    w = tfl.Variable(START.copy(), name="w")
    train = a4.Adam(0.1, betas=(0.9, 0.99)).minimize(tfl.reduce_sum(w * w))
    state = {v.name: v for v in tfl.get_default_graph().variables() if not v.trainable}
    assert {"Adam/w/step", "Adam/w/exp_avg", "Adam/w/exp_avg_sq"} <= set(state)
    with tfl.Session() as sess:
        sess.run(train)
    g = 2 * START  # the gradient of sum(w²) at the start
    assert state["Adam/w/step"].value == 1
    np.testing.assert_allclose(state["Adam/w/exp_avg"].value, 0.1 * g)
    np.testing.assert_allclose(state["Adam/w/exp_avg_sq"].value, 0.01 * g * g)
