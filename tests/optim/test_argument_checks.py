"""Optimizers refuse unusable hyper-parameters and arguments when they are built, naming what is wrong."""
import math

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.optim.optimizer import HyperParameterError

NAN, INF = math.nan, math.inf

BAD = [
    ("SGD", dict(lr=NAN), "lr=nan"), ("SGD", dict(lr=INF), "lr=inf"), ("SGD", dict(lr=-0.1), "lr=-0.1"),
    ("SGD", dict(lr="0.1"), "is a str"), ("SGD", dict(lr=True), "is a bool"),
    ("SGD", dict(lr=0.1, momentum=NAN), "momentum=nan"), ("SGD", dict(lr=0.1, momentum=-0.9), "momentum"),
    ("SGD", dict(lr=0.1, weight_decay=INF), "weight_decay=inf"), ("SGD", dict(lr=0.1, dampening=2.0), "dampening"),
    ("SGD", dict(lr=0.1, nesterov=True), "Nesterov"),
    ("Adam", dict(lr=NAN), "lr=nan"), ("Adam", dict(eps=NAN), "eps=nan"), ("Adam", dict(eps=-1e-8), "eps"),
    ("Adam", dict(betas=(NAN, 0.9)), r"betas\[0\]"), ("Adam", dict(betas=(0.9, 1.0)), r"betas\[1\]"),
    ("Adam", dict(betas=(0.9,)), "pair"), ("Adam", dict(betas=0.9), "pair"),
    ("AdamW", dict(weight_decay=-0.01), "weight_decay"), ("AdamW", dict(lr=INF), "lr=inf"),
    ("RMSProp", dict(alpha=NAN), "alpha=nan"), ("RMSProp", dict(alpha=1.5), "alpha"),
    ("RMSProp", dict(eps=INF), "eps=inf"), ("RMSProp", dict(momentum=NAN), "momentum=nan"),
    ("AdaGrad", dict(lr_decay=NAN), "lr_decay=nan"), ("AdaGrad", dict(initial_accumulator_value=-1), "initial"),
    ("AdaGrad", dict(eps=INF), "eps=inf"),
]


@pytest.mark.parametrize("name, hyper, message", BAD, ids=[f"{n}-{h}" for n, h, _ in BAD])
def test_nan_inf_negative_and_non_numbers_are_refused_naming_optimizer_and_argument(name, hyper, message):
    with pytest.raises(HyperParameterError, match=message) as err:
        getattr(tfl.optim, name)(**hyper)
    assert isinstance(err.value, tfl.TinyflowError) and isinstance(err.value, ValueError)
    assert str(err.value).startswith(f"{name}:")


def test_good_values_and_scalar_learning_rate_nodes_are_accepted():
    tfl.optim.SGD(0.0, momentum=0.9, nesterov=True, dampening=0.0)
    tfl.optim.Adam(lr=np.float32(1e-3), betas=[0.0, 0.5], eps=0.0)
    tfl.optim.RMSProp(alpha=1.0)
    tfl.optim.SGD(tfl.Placeholder((), "float32", name="lr"))
    with pytest.raises(HyperParameterError, match="float scalar"):
        tfl.optim.SGD(tfl.Placeholder((3,), "float32", name="lrs"))


def test_minimize_of_a_number_is_a_graph_error():
    with pytest.raises(tfl.GraphError, match="needs the loss as a tinyflow node, got float 2.0"):
        tfl.optim.SGD(0.1).minimize(2.0)


def test_an_integer_variable_in_var_list_is_named_with_its_dtype():
    w = tfl.Variable(np.ones(3, np.float32), name="w")
    steps = tfl.Variable(np.arange(3), name="steps")
    loss = tfl.reduce_sum(w * 2.0)
    with pytest.raises(tfl.GradientError, match="cannot train Variable node 'steps'.*dtype int64") as err:
        tfl.optim.SGD(0.1).minimize(loss, var_list=[w, steps])
    assert "does not depend" not in str(err.value)


def test_var_list_must_be_a_list_of_variables():
    w = tfl.Variable(np.ones(3, np.float32), name="w")
    loss = tfl.reduce_sum(w * 2.0)
    with pytest.raises(tfl.GraphError, match=r"write var_list=\[w\]"):
        tfl.optim.SGD(0.1).minimize(loss, var_list=w)
    with pytest.raises(tfl.GraphError, match="must hold Variables, got Placeholder"):
        tfl.optim.SGD(0.1).minimize(loss, var_list=[tfl.Placeholder((3,), name="p")])


def test_integer_variables_are_left_out_of_the_default_var_list():
    w = tfl.Variable(np.ones(3, np.float32), name="w")
    counter = tfl.Variable(np.array(0), name="counter")
    train = tfl.optim.SGD(0.5).minimize(tfl.reduce_sum(w * 2.0) + tfl.cast(counter, "float32"))
    with tfl.Session() as sess:
        sess.run(train)
    np.testing.assert_allclose(w.value, [0.0, 0.0, 0.0])
    assert counter.value == 0
