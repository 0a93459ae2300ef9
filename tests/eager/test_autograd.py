"""Eager autograd against PyTorch on the same programs: gradients, accumulation, retain_graph, in-place ops."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="PyTorch (torch==2.13.0) is the oracle of these tests")

RNG = np.random.default_rng(7)
X, W, B = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def both(program, *arrays):
    """Run `program(lib, *leaves)` in tinyflow and torch; return (tfl leaves, torch leaves)."""
    ours = [tfl.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    program(tfl, *ours)
    program(torch, *theirs)
    return ours, theirs


def assert_grads_equal(ours, theirs):
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), rtol=1e-6, atol=1e-10)


def test_mlp_gradients_equal_torch():
    def program(lib, x, w, b):
        hidden = lib.tanh(x @ w + b)
        loss = ((hidden * hidden).sum() / 3 + lib.exp(-hidden).mean()) ** 2
        loss.backward()
    assert_grads_equal(*both(program, X, W, B))


def test_broadcast_gradients_are_summed_back_like_torch():
    def program(lib, x, b):
        ((x - b.reshape(1, 3)) * (x / (b.abs() + 1))).sum().backward()
    assert_grads_equal(*both(program, X, RNG.standard_normal(3)))


def test_gradients_accumulate_until_reset():
    def program(lib, x):
        (x * x).sum().backward()
        (x * 3).sum().backward()
    ours, theirs = both(program, X)
    assert_grads_equal(ours, theirs)
    ours[0].grad = None
    (ours[0] * 2).sum().backward()
    np.testing.assert_allclose(ours[0].grad, 2 * np.ones_like(X))


def test_backward_twice_raises_unless_the_graph_is_retained():
    x = tfl.tensor(X, requires_grad=True)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad, 4 * X, rtol=1e-6)
    with pytest.raises(tfl.TinyflowError, match=r"a second time.*retain_graph=True") as err:
        loss.backward()
    assert "test_autograd.py" in str(err.value)  # where the op was created
    tx = torch.tensor(X, requires_grad=True)
    tloss = (tx * tx).sum()
    tloss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        tloss.backward()


def test_in_place_change_of_a_saved_tensor_raises_like_torch():
    def program(lib, x, w):
        a = x * 1
        y = a * w
        a.add_(1)
        y.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        program(torch, torch.tensor(X, requires_grad=True), torch.tensor(np.ones(3), requires_grad=True))
    with pytest.raises(tfl.TinyflowError, match=r"Multiply \(created at .*test_autograd.py:\d+\).*changed in place"):
        program(tfl, tfl.tensor(X, requires_grad=True), tfl.tensor(np.ones(3), requires_grad=True))


def test_in_place_change_of_a_saved_output_raises_like_torch():
    def program(lib, x):
        y = lib.exp(x)
        y.add_(1)
        y.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        program(torch, torch.tensor(X, requires_grad=True))
    with pytest.raises(tfl.TinyflowError, match=r"Exp \(created at .*\) needs its output"):
        program(tfl, tfl.tensor(X, requires_grad=True))


def test_in_place_ops_get_the_gradients_torch_allows():
    def program(lib, x, v, b):
        a = x * 2
        c = a + 1            # saved nothing that the change below touches
        a.add_(v)
        a.mul_(b)            # b's gradient needs a's value before this change
        a.sub_(x)
        a[1] = v[0] * 3      # x[idx] = v
        d = a * 1
        d.zero_()
        d.add_(a * a)
        (d.sum() + c.sum()).backward()
    assert_grads_equal(*both(program, X, RNG.standard_normal(3), RNG.standard_normal(3)))


def test_in_place_on_a_leaf_that_requires_grad_raises_and_no_grad_allows_it():
    w = tfl.tensor(W, requires_grad=True)
    with pytest.raises(tfl.TinyflowError, match="leaf tensor that requires grad"):
        w.add_(1)
    (w * w).sum().backward()
    with tfl.no_grad():
        w.sub_(0.1 * w.grad)      # the hand-written SGD step of PyTorch tutorials
    np.testing.assert_allclose(w.numpy(), W - 0.1 * 2 * W, rtol=1e-6)
    assert w.is_leaf and w.requires_grad


def test_no_grad_records_nothing_and_detach_leaves_the_graph():
    x = tfl.tensor(X, requires_grad=True)
    with tfl.no_grad():
        y = x * 2
        assert not tfl.eager.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and tfl.eager.is_grad_enabled()
    z = (x * 2).detach()
    assert z.is_leaf and not z.requires_grad
    with pytest.raises(tfl.TinyflowError, match="does not require grad"):
        y.sum().backward()

    @tfl.no_grad()
    def predict(v):
        return v * 3
    assert not predict(x).requires_grad


def test_second_derivative_with_create_graph():
    x = tfl.tensor(X, requires_grad=True)
    (g,) = tfl.eager.grad((x ** 3).sum(), [x], create_graph=True)
    assert g.grad_fn is not None
    g.sum().backward()
    tx = torch.tensor(X, requires_grad=True)
    (tg,) = torch.autograd.grad((tx ** 3).sum(), [tx], create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-6)


def test_backward_of_a_non_scalar_needs_a_seed():
    x = tfl.tensor(X, requires_grad=True)
    y = x * 2
    with pytest.raises(tfl.TinyflowError, match="needs `grad`"):
        y.backward()
    y.backward(np.ones_like(X))
    np.testing.assert_allclose(x.grad, 2 * np.ones_like(X))


def test_grad_fn_chain_and_leaves_are_inspectable():
    x = tfl.tensor(X, requires_grad=True)
    y = tfl.relu(x @ tfl.tensor(W))
    assert y.grad_fn.op_type == "Relu" and not y.is_leaf and x.is_leaf
    (matmul,) = tfl.eager.next_functions(y.grad_fn)
    leaf, constant = tfl.eager.next_functions(matmul)
    assert matmul.op_type == "MatMul" and isinstance(leaf, tfl.eager.LeafGradFn) and leaf.variable is x
    assert constant is None


def test_clone_keeps_the_gradient_path_and_protects_the_original():
    x = tfl.tensor(X, requires_grad=True)
    a = x * 1
    b = a.clone()
    b.add_(1)                     # changes the copy, not what `a * a` saved
    (a * a + b).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * X + 1, rtol=1e-6)


def test_optimizer_step_between_forward_and_backward_is_caught():
    layer = tfl.nn.Sequential(tfl.nn.Linear(3, 2), tfl.nn.Linear(2, 2))  # layer 1 needs layer 2's weight
    opt = tfl.optim.SGD(layer.parameters(), lr=0.1)
    (layer(tfl.tensor(X)) ** 2).sum().backward()
    stale = (layer(tfl.tensor(X)) ** 2).sum()
    opt.step()                    # the weights `stale` saved change in place
    with pytest.raises(tfl.TinyflowError, match="changed in place"):
        stale.backward()
