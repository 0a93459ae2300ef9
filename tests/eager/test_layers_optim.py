"""Layers on Tensors and on graph nodes; eager optimizers equal torch.optim over several steps."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="PyTorch (torch==2.13.0) is the oracle of these tests")

RNG = np.random.default_rng(3)
X = RNG.standard_normal((8, 5)).astype(np.float32)
Y = RNG.integers(0, 3, 8)


def _mlp_pair():
    """A tinyflow MLP and a torch MLP with the same weights."""
    ours = tfl.nn.Sequential(tfl.nn.Linear(5, 6, act="tanh"), tfl.nn.Linear(6, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    with torch.no_grad():
        for layer, tlayer in zip(ours.layers, [theirs[0], theirs[2]]):
            tlayer.weight.copy_(torch.from_numpy(layer.weight.value.T.copy()))
            tlayer.bias.copy_(torch.from_numpy(layer.bias.value.copy()))
    return ours, theirs


OPTIMIZERS = [
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)), ("AdamW", dict(lr=0.01)),
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)), ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
]


@pytest.mark.parametrize("name, hyper", OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_eager_optimizer_steps_equal_torch_optim(name, hyper):
    ours, theirs = _mlp_pair()
    opt = getattr(tfl.optim, name)(ours.parameters(), **hyper)
    topt = getattr(torch.optim, name)(theirs.parameters(), **hyper)
    for _ in range(5):
        opt.zero_grad()
        loss = tfl.nn.softmax_cross_entropy(ours(tfl.tensor(X)), Y)
        loss.backward()
        opt.step()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(X)), torch.from_numpy(Y))
        tloss.backward()
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    np.testing.assert_allclose(ours.layers[0].weight.value, theirs[0].weight.detach().numpy().T, rtol=1e-4,
                               atol=1e-6)


def test_optimizer_on_leaf_tensors_updates_them_in_place_of_torch():
    w = tfl.tensor(np.ones(3, np.float32), requires_grad=True)
    tw = torch.ones(3, requires_grad=True)
    opt, topt = tfl.optim.SGD([w], lr=0.5, momentum=0.9), torch.optim.SGD([tw], lr=0.5, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        ((w * w).sum() + w[0]).backward()
        opt.step()
        topt.zero_grad()
        ((tw * tw).sum() + tw[0]).backward()
        topt.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-6)


def test_a_number_first_still_means_the_learning_rate_in_graph_mode():
    opt = tfl.optim.SGD(0.1)
    assert opt.lr == 0.1 and not hasattr(opt, "params")
    with pytest.raises(tfl.TinyflowError, match="eager form"):
        opt.step()


def test_one_layer_serves_graph_mode_and_eager_mode_with_the_same_variables():
    layer = tfl.nn.Linear(5, 2, act="relu")
    x = tfl.Placeholder((None, 5), "float32")
    node = layer(x)
    with tfl.Session() as sess:
        graph_value = sess.run(node, {x: X})
    eager_value = layer(tfl.tensor(X))
    assert isinstance(node, tfl.Node) and isinstance(eager_value, tfl.Tensor)
    np.testing.assert_allclose(eager_value.numpy(), graph_value, rtol=1e-6)
    opt = tfl.optim.Adam(layer.parameters(), lr=0.1)
    (layer(tfl.tensor(X)) ** 2).mean().backward()
    opt.step()
    with tfl.Session() as sess:  # graph mode reads the Variables the eager step updated
        assert not np.allclose(sess.run(node, {x: X}), graph_value)


def test_conv_batchnorm_pool_dropout_flatten_layers_equal_torch():
    conv = tfl.nn.Conv2D(2, 3, 3, padding=1)
    net = tfl.nn.Sequential(conv, tfl.nn.BatchNorm2d(3), tfl.nn.MaxPool2D(2), tfl.nn.Flatten(), tfl.nn.Dropout(0.5))
    tconv = torch.nn.Conv2d(2, 3, 3, padding=1)
    tbn = torch.nn.BatchNorm2d(3)
    with torch.no_grad():
        tconv.weight.copy_(torch.from_numpy(conv.weight.value))
        tconv.bias.copy_(torch.from_numpy(conv.bias.value))
    images = RNG.standard_normal((4, 2, 4, 4)).astype(np.float32)
    net.eval()  # dropout off: both sides deterministic
    net.layers[1].train()
    out = net(tfl.tensor(images, requires_grad=True))
    tout = torch.nn.functional.max_pool2d(tbn(tconv(torch.from_numpy(images))), 2).flatten(1)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(conv.weight.grad, tconv.weight.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(net.layers[1].running_var.value, tbn.running_var.numpy(), rtol=1e-5)


def test_dropout_follows_train_and_eval():
    layer = tfl.nn.Dropout(0.5)
    x = tfl.tensor(np.ones((50, 50), np.float32))
    assert (layer(x).numpy() == 0).mean() > 0.3
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())


def test_eager_optimizer_errors_are_explained():
    with pytest.raises(tfl.TinyflowError, match="leaf tensors that require grad"):
        tfl.optim.Adam([tfl.tensor([1.0])], lr=0.1)
    with pytest.raises(tfl.TinyflowError, match="empty parameter list"):
        tfl.optim.Adam([], lr=0.1)
