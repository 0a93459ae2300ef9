"""Multi-tensor updates: one node (one C call) for a train op's updates, with the same results as one per Variable."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

OPTIMIZERS = {
    "sgd": lambda: tfl.optim.SGD(0.05),
    "sgd-nesterov": lambda: tfl.optim.SGD(0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda: tfl.optim.Adam(1e-2),
    "adamw-amsgrad": lambda: tfl.optim.AdamW(1e-2, amsgrad=True),
    "rmsprop-centered": lambda: tfl.optim.RMSProp(1e-2, momentum=0.5, centered=True),
    "adagrad": lambda: tfl.optim.AdaGrad(0.1, lr_decay=0.01, weight_decay=0.01),
}


def train(optimizer, dtype, optimize, steps=5):
    """Parameters and losses of a small MLP after `steps` steps (its own graph, seeded)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5)).astype(dtype)
    Y = rng.standard_normal((40, 1)).astype(dtype)
    with tfl.Graph().as_default() as graph:
        tfl.set_seed(1)
        x, t = tfl.Placeholder((None, 5), dtype, name="x"), tfl.Placeholder((None, 1), dtype, name="t")
        net = tfl.nn.Sequential(tfl.nn.Linear(5, 16, act="tanh"), tfl.nn.Linear(16, 1))
        loss = tfl.nn.mse_loss(net(x), t)
        train_op = OPTIMIZERS[optimizer]().minimize(loss)
        sess = tfl.Session(graph=graph, optimize=optimize)
        losses = [float(sess.run([train_op, loss], {x: X, t: Y})[1]) for _ in range(steps)]
        plan = sess.plan([train_op, loss], {x, t})
    return [p.value.copy() for p in net.parameters()], losses, plan


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_update_node_gives_the_results_of_one_update_per_variable(optimizer, dtype):
    merged_params, merged_losses, plan = train(optimizer, dtype, optimize=True)
    params, losses, _ = train(optimizer, dtype, optimize={"multi_tensor": False})
    updates = [s.node for s in plan.steps if "Apply" in s.node.op_type or s.node.op_type == "MultiTensorUpdate"]
    assert [u.op_type for u in updates] == ["MultiTensorUpdate"] and len(updates[0].members) == 4
    assert plan.report.counts()["multi_tensor"] == {"merged_updates": 1, "update_ops": 4}
    assert merged_losses == losses  # the same kernels, in one call: bit for bit
    for a, b in zip(merged_params, params):
        np.testing.assert_array_equal(a, b)


def test_updates_of_other_optimizers_or_learning_rates_stay_apart():
    x = tfl.Placeholder((None, 3), name="x")
    a, b, c = (tfl.Variable(np.ones((3, 1), np.float32), name=n) for n in "abc")
    loss = tfl.reduce_sum(x @ a) + tfl.reduce_sum(x @ b) + tfl.reduce_sum(x @ c)
    train_op = tfl.group(tfl.optim.Adam(0.1).minimize(loss, var_list=[a, b]),
                         tfl.optim.SGD(0.1).minimize(loss, var_list=[c]))
    sess = tfl.Session()
    sess.run(train_op, {x: np.ones((2, 3), np.float32)})
    kinds = sorted(s.node.op_type for s in sess.plan([train_op], {x}).steps if "Update" in s.node.op_type
                   or "Apply" in s.node.op_type)
    assert kinds == ["ApplySGD", "MultiTensorUpdate"]  # Adam's two merged; SGD's one alone
    np.testing.assert_allclose(c.value, 1 - 0.1 * 2)


def test_a_fetched_update_is_not_merged():
    w, v = tfl.Variable(np.ones(3, np.float32), name="w"), tfl.Variable(np.ones(3, np.float32), name="v")
    loss = tfl.reduce_sum(w * v)
    train_op = tfl.optim.SGD(0.1).minimize(loss)
    update_w = train_op.inputs[0]
    sess = tfl.Session()
    sess.run([train_op, update_w])
    assert all(s.node.op_type != "MultiTensorUpdate" for s in sess.plan([train_op, update_w], set()).steps)
    np.testing.assert_allclose(w.value, 0.9)


def test_a_variable_given_a_new_array_is_updated_in_its_new_array():
    w, v = tfl.Variable(np.ones(4, np.float32), name="w"), tfl.Variable(np.ones(4, np.float32), name="v")
    train_op = tfl.optim.Adam(0.1).minimize(tfl.reduce_sum(w * w + v))
    sess = tfl.Session()
    sess.run(train_op)
    w.value = np.full(4, 5.0, np.float32)  # cached C pointers point into the old array now
    sess.run(train_op)
    assert w.value[0] < 5.0 and np.all(w.value == w.value[0])
