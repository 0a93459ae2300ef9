"""The convolution, pooling and normalization layers against torch.nn with the same weights: values and parameter
gradients in eager mode, in graph mode and through tfl.jit.to_static."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="these checks compare with PyTorch; pip install torch")
nn = torch.nn
RNG = np.random.default_rng(5)


def pair(case_id, ours, theirs, shape):
    return pytest.param(ours, theirs, shape, id=case_id)


LAYERS = [
    pair("Conv1D", lambda: tfl.nn.Conv1D(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
         lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), (2, 4, 9)),
    pair("Conv2D-grouped-dilated", lambda: tfl.nn.Conv2D(4, 8, 3, padding="same", dilation=(2, 1), groups=4),
         lambda: nn.Conv2d(4, 8, 3, padding="same", dilation=(2, 1), groups=4), (2, 4, 6, 5)),
    pair("Conv3D", lambda: tfl.nn.Conv3D(2, 3, 2, stride=(1, 2, 2), bias=False),
         lambda: nn.Conv3d(2, 3, 2, stride=(1, 2, 2), bias=False), (1, 2, 3, 5, 4)),
    pair("ConvTranspose2D", lambda: tfl.nn.ConvTranspose2D(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
         lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), (2, 4, 3, 4)),
    pair("LayerNorm", lambda: tfl.nn.LayerNorm((3, 5), eps=1e-4), lambda: nn.LayerNorm((3, 5), eps=1e-4), (2, 4, 3, 5)),
    pair("LayerNorm-no-bias", lambda: tfl.nn.LayerNorm(5, bias=False), lambda: nn.LayerNorm(5, bias=False), (6, 5)),
    pair("GroupNorm", lambda: tfl.nn.GroupNorm(3, 6), lambda: nn.GroupNorm(3, 6), (2, 6, 4)),
    pair("InstanceNorm2d", lambda: tfl.nn.InstanceNorm2d(3, affine=True), lambda: nn.InstanceNorm2d(3, affine=True),
         (2, 3, 4, 5)),
    pair("MaxPool2D", lambda: tfl.nn.MaxPool2D(3, 2, 1, ceil_mode=True), lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True),
         (2, 3, 6, 7)),
    pair("AvgPool3D", lambda: tfl.nn.AvgPool3D(2, padding=1, count_include_pad=False),
         lambda: nn.AvgPool3d(2, padding=1, count_include_pad=False), (1, 2, 3, 4, 3)),
]


def copy_weights(ours, theirs):
    """Give the torch layer our initial values (weight, bias)."""
    params = dict(theirs.named_parameters())
    with torch.no_grad():
        for name in ("weight", "bias"):
            var = getattr(ours, name, None)
            if var is not None:
                params[name].copy_(torch.from_numpy(var.value.astype(np.float64)))
    return params


def torch_run(theirs, x, projection):
    theirs = theirs.double()
    t = torch.tensor(x, requires_grad=True)
    y = theirs(t)
    (y * torch.tensor(projection)).sum().backward()
    return y.detach().numpy(), t.grad.numpy(), {n: p.grad.numpy() for n, p in theirs.named_parameters()}


def compare(ours, got, got_x_grad, got_grads, expected, expected_x_grad, expected_grads):
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got_x_grad, expected_x_grad, rtol=1e-9, atol=1e-10)
    for name, grad in expected_grads.items():
        np.testing.assert_allclose(got_grads[name], grad, rtol=1e-9, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("ours, theirs, shape", LAYERS)
def test_layers_in_eager_mode_equal_torch(ours, theirs, shape):
    layer, reference = ours(), theirs()
    for var in layer.variables():
        var.value = var.value.astype(np.float64)
    copy_weights(layer, reference)
    x = RNG.standard_normal(shape)
    t = tfl.tensor(x, requires_grad=True)
    y = layer(t)
    projection = RNG.standard_normal(y.shape)
    (y * projection).sum().backward()
    grads = {name: getattr(layer, name).grad for name in ("weight", "bias") if getattr(layer, name, None) is not None}
    compare(layer, y.numpy(), t.grad, grads, *torch_run(reference, x, projection))


@pytest.mark.parametrize("ours, theirs, shape", LAYERS[::2])
def test_layers_in_graph_mode_and_to_static_equal_torch(ours, theirs, shape):
    layer, reference = ours(), theirs()
    for var in layer.variables():
        var.value = var.value.astype(np.float64)
    copy_weights(layer, reference)
    x = RNG.standard_normal(shape)
    placeholder = tfl.Placeholder((None,) + shape[1:], "float64")
    y = layer(placeholder)
    projection = RNG.standard_normal(shape[:1] + tuple(y.shape[1:]))
    params = [getattr(layer, n) for n in ("weight", "bias") if getattr(layer, n, None) is not None]
    grads = tfl.gradients(tfl.reduce_sum(y * tfl.Constant(projection)), [placeholder] + params)
    with tfl.Session() as sess:
        value, x_grad, *param_grads = sess.run([y] + grads, {placeholder: x})
    got_grads = {n: g for n, g in zip(("weight", "bias"), param_grads)}
    expected = torch_run(reference, x, projection)
    compare(layer, value, x_grad, got_grads, *expected)
    static = tfl.jit.to_static(layer, input_spec=[InputSpec((None,) + shape[1:], "float64", "x")])
    np.testing.assert_allclose(static(x).numpy(), expected[0], rtol=1e-9, atol=1e-10)
