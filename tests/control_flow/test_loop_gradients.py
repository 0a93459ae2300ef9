"""Gradients of while loops without a bound: a backward loop popping what the forward loop pushed."""
import gc
import weakref

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.control_flow import StackPush, StackValue
from tinyflow.testing import gradcheck

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="the loop gradients are compared with PyTorch's")


def rnn_loop(x, w, b, n):
    """h <- tanh(h * w + b), n times (n a node): loss = sum(h²) + the sum of every h (a second loop variable)."""
    def body(k, h, total):
        h = tfl.tanh(h * w + b)
        return k + 1, h, total + tfl.reduce_sum(h)
    _, h, total = tfl.while_loop(lambda k, h, total: tfl.less(k, n), body,
                                 [tfl.Constant(np.int64(0)), x, tfl.Constant(np.float64(0.0))])
    return tfl.reduce_sum(h * h) + total


def rnn_torch(x, w, b, n):
    h, total = x, 0.0
    for _ in range(n):
        h = torch.tanh(h * w + b)
        total = total + h.sum()
    return (h * h).sum() + total


@pytest.mark.parametrize("steps", [0, 1, 2, 7])
@pytest.mark.parametrize("optimize", [True, False])
def test_gradients_match_torch_for_0_1_2_and_many_iterations(steps, optimize):
    rng = np.random.default_rng(steps)
    values = [rng.standard_normal(4), rng.standard_normal(4) * 0.7, rng.standard_normal(4) * 0.3]
    x, w, b = (tfl.Placeholder((4,), "float64", name=n) for n in "xwb")
    n = tfl.Placeholder((), "int64", name="n")
    loss = rnn_loop(x, w, b, n)
    grads = tfl.gradients(loss, [x, w, b])
    with tfl.Session(optimize=optimize) as sess:
        ours = sess.run([loss] + grads, {x: values[0], w: values[1], b: values[2], n: steps})
    leaves = [torch.tensor(v, requires_grad=True) for v in values]
    expected = rnn_torch(*leaves, steps)
    expected.backward()
    np.testing.assert_allclose(ours[0], expected.item(), rtol=1e-12)
    for got, leaf in zip(ours[1:], leaves):
        expected_grad = np.zeros(4) if leaf.grad is None else leaf.grad.numpy()  # torch: None when unused
        np.testing.assert_allclose(got, expected_grad, rtol=1e-10, atol=1e-12)


def newton_sqrt(a):
    """sqrt(a) by Newton steps until converged: how many steps run depends on a."""
    def body(y, steps):
        return 0.5 * (y + a / y), steps + 1
    y, steps = tfl.while_loop(lambda y, s: tfl.greater(tfl.reduce_max(tfl.abs(y * y - a) / a), 1e-14), body,
                              [a + 1.0, tfl.Constant(np.int64(0))])
    return y, steps


def test_the_number_of_iterations_depends_on_the_data():
    a = tfl.Placeholder((3,), "float64", name="a")
    y, steps = newton_sqrt(a)
    (grad,) = tfl.gradients(tfl.reduce_sum(y), [a])
    with tfl.Session() as sess:
        few = sess.run([y, steps, grad], {a: np.array([1.0, 1.1, 0.9])})
        many = sess.run([y, steps, grad], {a: np.array([1.0, 900.0, 1e-4])})
    assert few[1] < many[1]
    for values, (root, _, g) in zip([[1.0, 1.1, 0.9], [1.0, 900.0, 1e-4]], [few, many]):
        np.testing.assert_allclose(root, np.sqrt(values), rtol=1e-9)
        np.testing.assert_allclose(g, 0.5 / np.sqrt(values), rtol=1e-6)  # d sqrt(a) / da, through every step


def test_nested_loops_cond_inside_loop_and_captured_weights():
    def build(x, w):
        def body(k, h, total):
            h = tfl.tanh(tfl.matmul(h[None, :], w)[0] + x)
            h = tfl.cond(tfl.greater(tfl.reduce_sum(h), 0.0), lambda: h * 2.0, lambda: -h * x)
            _, h = tfl.while_loop(lambda j, u: tfl.less(j, k + 1), lambda j, u: (j + 1, tfl.tanh(u) * w[0]),
                                  [tfl.Constant(np.int64(0)), h])  # the inner count depends on the outer k
            return k + 1, h, total + tfl.reduce_sum(h * h)
        _, h, total = tfl.while_loop(lambda k, h, t: tfl.less(k, 3), body,
                                     [tfl.Constant(np.int64(0)), x, tfl.Constant(np.float64(0.0))])
        return total + tfl.reduce_sum(h)
    gradcheck(build, [np.array([0.3, -0.7, 1.2]), np.eye(3) * 0.5 + 0.1])


def test_a_loop_inside_a_cond():
    def build(x):
        return tfl.cond(tfl.greater(tfl.reduce_sum(x), 0.0),
                        lambda: tfl.while_loop(lambda k, v: tfl.less(tfl.reduce_sum(v * v), 4.0),
                                               lambda k, v: (k + 1, v * 1.3 + x * 0.1), [tfl.Constant(0), x])[1],
                        lambda: x * 3.0)
    gradcheck(build, [np.array([0.3, -0.2, 0.4])])
    gradcheck(build, [np.array([-0.3, -0.2, 0.4])])


def test_second_and_third_order_gradients():
    def loop(x):
        return tfl.while_loop(lambda k, u: tfl.less(k, 3), lambda k, u: (k + 1, tfl.tanh(u) * x),
                              [tfl.Constant(0), x])[1]

    def second(x):
        (g,) = tfl.gradients(tfl.reduce_sum(loop(x) ** 2), [x])
        return g

    def third(x):
        (gg,) = tfl.gradients(tfl.reduce_sum(second(x) ** 2), [x])
        return gg
    gradcheck(second, [np.array([0.3, -0.7, 1.2])])
    gradcheck(third, [np.array([0.3, -0.7, 1.2])])


def test_maximum_iterations_stops_the_loop_and_the_gradient_follows():
    x = tfl.Placeholder((), "float64", name="x")
    y = tfl.while_loop(lambda v: tfl.less(v, 1e9), lambda v: v * x, x, maximum_iterations=4)
    (g,) = tfl.gradients(y, [x])
    with tfl.Session() as sess:
        value, grad = sess.run([y, g], {x: 1.5})
    assert value == pytest.approx(1.5 ** 5) and grad == pytest.approx(5 * 1.5 ** 4)


def test_stacks_are_pushed_only_for_gradients_and_freed_after_the_backward_pass(monkeypatch):
    pushes, stacks = [], []
    push = StackPush.compute

    def watched(self, stack, value):
        pushes.append(self.name)
        if not any(s() is stack for s in stacks):
            stacks.append(weakref.ref(stack))
        return push(self, stack, value)
    monkeypatch.setattr(StackPush, "compute", watched)
    x = tfl.Placeholder((1000,), "float64", name="x")
    _, y = tfl.while_loop(lambda k, v: tfl.less(k, 10), lambda k, v: (k + 1, tfl.tanh(v) * x),
                          [tfl.Constant(0), x])
    loss = tfl.reduce_sum(y)
    (g,) = tfl.gradients(loss, [x])
    with tfl.Session() as sess:
        sess.run(loss, {x: np.full(1000, 0.5)})
        assert pushes == []  # a plan without the gradient records nothing
        profile = sess.memory_profile([loss, g], {x: np.full(1000, 0.5)})
    assert len(pushes) == 10
    rows = {r["node"]: r for r in profile.rows}
    stack_bytes = 10 * 1000 * 8  # one float64 (1000,) value per iteration: tanh(v), which the gradient reads
    assert rows["while/While"]["new_bytes"] >= stack_bytes
    backward = [r for r in profile.rows if r["node"].endswith("WhileGrad")][0]
    assert backward["freed_bytes"] >= stack_bytes  # the stacks die with the backward loop, their last reader
    assert profile.rows[-1]["live_bytes"] <= 2 * 8000 + 8  # the fetched loss and gradient, nothing else
    gc.collect()
    assert stacks and all(s() is None for s in stacks)


def test_a_stack_value_reports_its_arrays():
    stack = StackValue("h")
    stack.values += [np.zeros(3), np.ones(2)]
    assert len(stack) == 2 and [a.size for a in stack.arrays()] == [3, 2] and "2 value" in repr(stack)


def test_a_body_computing_in_a_wider_dtype_keeps_its_float32_gradients():
    x = tfl.Placeholder((3,), "float32", name="x")
    def body(k, h):
        return k + 1, tfl.cast(tfl.tanh(h) * (k + 2), "float32")  # float32 * int64 computes in float64
    _, y = tfl.while_loop(lambda k, h: tfl.less(k, 3), body, [tfl.Constant(np.int64(0)), x])
    (g,) = tfl.gradients(tfl.reduce_sum(y), [x])
    assert g.dtype == np.float32
    value = np.array([0.3, -0.2, 0.5], np.float32)
    with tfl.Session() as sess:
        got = sess.run(g, {x: value})
    h, slope = value.astype(np.float64), np.ones(3)
    for k in range(3):
        slope, h = slope * (k + 2) * (1 - np.tanh(h) ** 2), np.tanh(h) * (k + 2)
    np.testing.assert_allclose(got, slope, rtol=1e-5)
