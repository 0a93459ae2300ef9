"""Every optimizer's first three updates equal the torch.optim formulas, computed here by hand.

The references below are plain-Python transcriptions of the pseudo-code in the
torch.optim documentation, one element at a time, independent of tinyflow.
"""
import math

import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

C = [0.5, 2.0, -1.0]        # loss = Σ c (w - t)² / 2, so grad = c (w - t)
T = [1.0, -2.0, 0.5]
W0 = [0.3, 0.7, -1.2]


def grad_at(w):
    return [c * (wi - t) for c, wi, t in zip(C, w, T)]


def sgd_reference(lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, steps=3):
    w, buf, history = list(W0), None, []
    for step in range(steps):
        g = grad_at(w)
        g = [gi + weight_decay * wi for gi, wi in zip(g, w)]
        if momentum:
            buf = list(g) if buf is None else [momentum * b + (1 - dampening) * gi for b, gi in zip(buf, g)]
            g = [gi + momentum * b for gi, b in zip(g, buf)] if nesterov else list(buf)
        w = [wi - lr * gi for wi, gi in zip(w, g)]
        history.append(w)
    return history


def adam_reference(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False,
                   steps=3):
    b1, b2 = betas
    w, m, v, vmax, history = list(W0), [0.0] * 3, [0.0] * 3, [0.0] * 3, []
    for t in range(1, steps + 1):
        g = grad_at(w)
        if decoupled:
            w = [wi * (1 - lr * weight_decay) for wi in w]
        else:
            g = [gi + weight_decay * wi for gi, wi in zip(g, w)]
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g)]
        v = [b2 * vi + (1 - b2) * gi * gi for vi, gi in zip(v, g)]
        m_hat = [mi / (1 - b1 ** t) for mi in m]
        if amsgrad:
            vmax = [max(a, b) for a, b in zip(vmax, v)]
            v_hat = [vi / (1 - b2 ** t) for vi in vmax]
        else:
            v_hat = [vi / (1 - b2 ** t) for vi in v]
        w = [wi - lr * mh / (math.sqrt(vh) + eps) for wi, mh, vh in zip(w, m_hat, v_hat)]
        history.append(w)
    return history


def rmsprop_reference(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, steps=3):
    w, sq, ga, buf, history = list(W0), [0.0] * 3, [0.0] * 3, [0.0] * 3, []
    for _ in range(steps):
        g = [gi + weight_decay * wi for gi, wi in zip(grad_at(w), w)]
        sq = [alpha * s + (1 - alpha) * gi * gi for s, gi in zip(sq, g)]
        if centered:
            ga = [alpha * a + (1 - alpha) * gi for a, gi in zip(ga, g)]
            avg = [math.sqrt(s - a * a) + eps for s, a in zip(sq, ga)]
        else:
            avg = [math.sqrt(s) + eps for s in sq]
        if momentum > 0:
            buf = [momentum * b + gi / a for b, gi, a in zip(buf, g, avg)]
            w = [wi - lr * b for wi, b in zip(w, buf)]
        else:
            w = [wi - lr * gi / a for wi, gi, a in zip(w, g, avg)]
        history.append(w)
    return history


def adagrad_reference(lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                      steps=3):
    w, acc, history = list(W0), [initial_accumulator_value] * 3, []
    for t in range(1, steps + 1):
        g = [gi + weight_decay * wi for gi, wi in zip(grad_at(w), w)]
        clr = lr / (1 + (t - 1) * lr_decay)
        acc = [a + gi * gi for a, gi in zip(acc, g)]
        w = [wi - clr * gi / (math.sqrt(a) + eps) for wi, gi, a in zip(w, g, acc)]
        history.append(w)
    return history


CONFIGS = [
    ("SGD", dict(lr=0.1), sgd_reference),
    ("SGD", dict(lr=0.1, momentum=0.9), sgd_reference),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.05), sgd_reference),
    ("SGD", dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.01), sgd_reference),
    ("Adam", dict(lr=0.1), adam_reference),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), adam_reference),
    ("Adam", dict(lr=0.1, amsgrad=True), adam_reference),
    ("AdamW", dict(lr=0.1), lambda **kw: adam_reference(weight_decay=0.01, decoupled=True, **kw)),
    ("AdamW", dict(lr=0.1, weight_decay=0.2, amsgrad=True),
     lambda **kw: adam_reference(decoupled=True, **kw)),
    ("RMSProp", dict(lr=0.01), rmsprop_reference),
    ("RMSProp", dict(lr=0.01, alpha=0.9, momentum=0.5, weight_decay=0.1), rmsprop_reference),
    ("RMSProp", dict(lr=0.01, centered=True, momentum=0.9), rmsprop_reference),
    ("AdaGrad", dict(lr=0.1), adagrad_reference),
    ("AdaGrad", dict(lr=0.1, lr_decay=0.5, weight_decay=0.1, initial_accumulator_value=0.2), adagrad_reference),
]


@pytest.mark.parametrize("name, hyper, reference", CONFIGS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CONFIGS)])
def test_first_three_updates_match_the_documented_formula(name, hyper, reference):
    w = tfl.Variable(np.array(W0), name="w")
    loss = 0.5 * tfl.reduce_sum(np.array(C) * tfl.square(w - np.array(T)))
    train = getattr(tfl.optim, name)(**hyper).minimize(loss)
    expected = reference(**hyper) if name not in ("AdamW",) else reference(**hyper)
    with tfl.Session() as sess:
        for step in range(3):
            assert sess.run(train) is None
            np.testing.assert_allclose(w.value, expected[step], rtol=1e-12, atol=1e-15,
                                       err_msg=f"{name}{hyper} step {step + 1}")


@pytest.mark.parametrize("name, hyper, reference", CONFIGS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CONFIGS)])
def test_an_update_changes_the_arrays_its_variables_hold_now(name, hyper, reference):
    """Update kernels keep pointers to the state they change: new arrays (assign, a restored checkpoint) must win."""
    w = tfl.Variable(np.array(W0), name="w")
    loss = 0.5 * tfl.reduce_sum(np.array(C) * tfl.square(w - np.array(T)))
    train = getattr(tfl.optim, name)(**hyper).minimize(loss)
    state = [node for node in tfl.get_default_graph().nodes if isinstance(node, tfl.Variable)]  # w and its slots
    initial = [var.value.copy() for var in state]
    with tfl.Session() as sess:
        sess.run(train)
        sess.run(train)
        for var, value in zip(state, initial):
            var.value = value  # back to the start, in new arrays
        sess.run(train)
        np.testing.assert_allclose(w.value, reference(**hyper)[0], rtol=1e-12, atol=1e-15)


def test_defaults_follow_torch_optim():
    assert tfl.optim.Adam().hyper == dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                                          decoupled=False) and tfl.optim.Adam().lr == 1e-3
    assert tfl.optim.AdamW().hyper["weight_decay"] == 0.01
    r = tfl.optim.RMSProp()
    assert r.lr == 1e-2 and r.hyper == dict(alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False)
    a = tfl.optim.AdaGrad()
    assert a.lr == 1e-2 and a.hyper == dict(lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                                            eps=1e-10)
    assert tfl.optim.SGD(0.1).hyper == dict(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0)


def test_slots_are_non_trainable_variables_in_the_graph(fresh_graph):
    w = tfl.Variable(np.zeros(3), name="w")
    tfl.optim.Adam(amsgrad=True).minimize(tfl.reduce_sum(tfl.square(w - 1.0)))
    slots = {v.name for v in fresh_graph.variables() if not v.trainable}
    assert slots == {"Adam/w/step", "Adam/w/exp_avg", "Adam/w/exp_avg_sq", "Adam/w/max_exp_avg_sq"}
    assert all(n.role == "optimizer" for n in fresh_graph.nodes if n.name.startswith("Adam/"))


def test_learning_rate_may_be_a_scalar_node_for_schedules():
    w = tfl.Variable(np.array([1.0]), name="w")
    lr = tfl.Placeholder((), "float64", name="lr")
    train = tfl.optim.SGD(lr).minimize(tfl.reduce_sum(w * 2.0))
    with tfl.Session() as sess:
        sess.run(train, {lr: 0.5})
        sess.run(train, {lr: 0.25})
    np.testing.assert_allclose(w.value, [1.0 - 1.0 - 0.5])


def test_var_list_limits_what_is_trained_and_compute_apply_split():
    a = tfl.Variable(np.array(1.0), name="a")
    b = tfl.Variable(np.array(1.0), name="b")
    loss = tfl.square(a) + tfl.square(b)
    opt = tfl.optim.SGD(0.25)
    pairs = opt.compute_gradients(loss, var_list=[a])
    assert [v for _, v in pairs] == [a]
    with tfl.Session() as sess:
        sess.run(opt.apply_gradients(pairs))
    assert (a.value, b.value) == (0.5, 1.0)


def test_a_loss_without_trainable_inputs_is_an_error():
    a = tfl.Variable(np.array(1.0), name="a")
    tfl.Variable(np.array(1.0), name="b")
    with pytest.raises(tfl.GradientError, match="no gradient for any of the variables"):
        tfl.optim.SGD(0.1).minimize(tfl.square(a), var_list=[tfl.get_default_graph().get_node("b")])


@pytest.mark.parametrize("bad", [lambda: tfl.optim.SGD(-1.0), lambda: tfl.optim.Adam(betas=(1.0, 0.9)),
                                 lambda: tfl.optim.SGD(0.1, nesterov=True), lambda: tfl.optim.RMSProp(alpha=2.0)])
def test_invalid_hyper_parameters_are_rejected(bad):
    with pytest.raises(ValueError):
        bad()

