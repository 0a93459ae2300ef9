"""Forward values and gradients of the neural-network ops (convolution, pooling, normalization, resizing) against
PyTorch on the same inputs, in graph mode and in eager mode.

One row per case: how tinyflow and torch spell it, and the inputs (float64). The test projects
the output on a fixed random tensor and compares the value and the gradient of every input.
"""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="these checks compare with PyTorch; pip install torch")
F = torch.nn.functional
_rng = np.random.default_rng(11)


def normal(*shape):
    return _rng.standard_normal(shape)


def distinct(*shape):
    return _rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 + 0.01 * _rng.random(shape)


def row(case_id, tfl_fn, torch_fn, *inputs):
    return pytest.param(tfl_fn, torch_fn, [np.asarray(v) for v in inputs], id=case_id)


def same(name, **kw):
    """The same function name and keywords in tinyflow and torch.nn.functional."""
    return (lambda *a: getattr(tfl, name)(*a, **kw)), (lambda *a: getattr(F, name)(*a, **kw))


MEAN, VAR = normal(2), normal(2) ** 2 + 0.5  # running statistics: constants (torch refuses their gradients)
ROWS = [
    row("conv2d", *same("conv2d"), normal(2, 3, 5, 6), normal(4, 3, 3, 2)),
    row("conv2d-stride-padding", *same("conv2d", stride=2, padding=1), normal(2, 2, 6, 5), normal(3, 2, 3, 3)),
    row("conv2d-dilation", *same("conv2d", dilation=(2, 1), padding=(2, 0)), normal(1, 2, 7, 5), normal(2, 2, 3, 2)),
    row("conv2d-groups", *same("conv2d", groups=2, stride=(1, 2)), normal(2, 4, 5, 6), normal(6, 2, 2, 3)),
    row("conv2d-depthwise", *same("conv2d", groups=3, padding=1), normal(2, 3, 5, 5), normal(6, 1, 3, 3)),
    row("conv2d-same", *same("conv2d", padding="same", dilation=2), normal(1, 2, 6, 7), normal(3, 2, 2, 3)),
    row("conv2d-bias", lambda x, w, b: tfl.conv2d(x, w, bias=b, padding=1), lambda x, w, b: F.conv2d(x, w, b, padding=1),
        normal(2, 2, 4, 4), normal(3, 2, 3, 3), normal(3)),
    row("conv1d", *same("conv1d", stride=2, padding=2, dilation=2, groups=2), normal(2, 4, 9), normal(4, 2, 3)),
    row("conv3d", *same("conv3d", stride=(1, 2, 1), padding=1), normal(1, 2, 4, 5, 4), normal(3, 2, 2, 3, 2)),
    row("conv_transpose2d", *same("conv_transpose2d"), normal(2, 3, 4, 3), normal(3, 2, 3, 3)),
    row("conv_transpose2d-stride", *same("conv_transpose2d", stride=2, padding=1, output_padding=1),
        normal(2, 3, 4, 3), normal(3, 2, 3, 2)),
    row("conv_transpose2d-groups-dilation",
        *same("conv_transpose2d", stride=(2, 3), groups=2, dilation=2, padding=(1, 0), output_padding=(1, 2)),
        normal(2, 4, 3, 3), normal(4, 2, 3, 2)),
    row("conv_transpose1d", *same("conv_transpose1d", stride=3, padding=1), normal(2, 2, 5), normal(2, 3, 4)),
    row("conv_transpose3d", *same("conv_transpose3d", stride=2, padding=1), normal(1, 2, 2, 3, 2),
        normal(2, 2, 3, 3, 3)),
    row("max_pool2d", *same("max_pool2d", kernel_size=2), distinct(2, 3, 6, 4)),
    row("max_pool2d-padding", *same("max_pool2d", kernel_size=3, stride=2, padding=1), distinct(2, 2, 7, 6)),
    row("max_pool2d-ceil", *same("max_pool2d", kernel_size=(3, 2), stride=2, ceil_mode=True), distinct(1, 2, 7, 8)),
    row("max_pool2d-dilation", *same("max_pool2d", kernel_size=2, dilation=2, padding=1, stride=(1, 2)),
        distinct(2, 2, 7, 7)),
    row("max_pool1d", *same("max_pool1d", kernel_size=3, stride=2, padding=1, ceil_mode=True), distinct(2, 3, 9)),
    row("max_pool3d", *same("max_pool3d", kernel_size=2, padding=1, dilation=2), distinct(1, 2, 5, 4, 6)),
    row("max_pool2d-indices", lambda x: tfl.cast(tfl.max_pool2d(x, 3, 2, 1, return_indices=True)[1], "float64"),
        lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1].double(), distinct(2, 2, 6, 7)),
    row("avg_pool2d", *same("avg_pool2d", kernel_size=3, stride=2, padding=1), normal(2, 3, 7, 6)),
    row("avg_pool2d-exclude-pad", *same("avg_pool2d", kernel_size=3, stride=2, padding=1, count_include_pad=False,
                                        ceil_mode=True), normal(2, 2, 6, 6)),
    row("avg_pool1d", *same("avg_pool1d", kernel_size=3, stride=2, padding=1, ceil_mode=True), normal(2, 3, 8)),
    row("avg_pool3d", *same("avg_pool3d", kernel_size=3, stride=2, padding=1, count_include_pad=False),
        normal(1, 2, 5, 4, 6)),
    row("global_avg_pool", tfl.global_avg_pool, lambda x: F.adaptive_avg_pool2d(x, 1), normal(2, 3, 4, 5)),
    row("global_max_pool", tfl.global_max_pool, lambda x: F.adaptive_max_pool2d(x, 1), distinct(2, 3, 4, 5)),
    row("layer_norm", lambda x, w, b: tfl.layer_norm(x, (3, 4), w, b), lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
        normal(2, 3, 4), normal(3, 4), normal(3, 4)),
    row("layer_norm-plain", lambda x: tfl.layer_norm(x, 5, eps=1e-3), lambda x: F.layer_norm(x, (5,), eps=1e-3),
        normal(4, 5) * 3 + 1),
    row("instance_norm", lambda x, w, b: tfl.instance_norm(x, w, b),
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b), normal(2, 3, 4, 4), normal(3), normal(3)),
    row("group_norm", lambda x, w, b: tfl.group_norm(x, 2, w, b), lambda x, w, b: F.group_norm(x, 2, w, b),
        normal(2, 4, 3, 3), normal(4), normal(4)),
    row("batch_norm", lambda x, w, b: tfl.batch_norm(x, MEAN, VAR, w, b, eps=1e-3),
        lambda x, w, b: F.batch_norm(x, torch.tensor(MEAN), torch.tensor(VAR), w, b, eps=1e-3), normal(3, 2, 4),
        normal(2), normal(2)),
    row("batch_norm-training", lambda x, w, b: tfl.batch_norm(x, np.zeros(2), np.ones(2), w, b, training=True),
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), normal(4, 2, 3, 3), normal(2), normal(2)),
    row("interpolate-nearest", *same("interpolate", scale_factor=2), normal(1, 2, 3, 4)),
    row("interpolate-nearest-size", *same("interpolate", size=(5, 7)), normal(2, 1, 3, 4)),
    row("interpolate-nearest-exact", *same("interpolate", size=(2, 3), mode="nearest-exact"), normal(1, 2, 5, 7)),
    row("interpolate-bilinear", *same("interpolate", scale_factor=(2, 1.5), mode="bilinear"), normal(1, 2, 3, 4)),
    row("interpolate-bilinear-shrink", *same("interpolate", size=(2, 3), mode="bilinear"), normal(1, 2, 5, 7)),
    row("interpolate-align-corners", *same("interpolate", size=(5, 3), mode="bilinear", align_corners=True),
        normal(1, 2, 3, 4)),
    row("interpolate-bicubic", *same("interpolate", size=(6, 9), mode="bicubic"), normal(1, 2, 5, 7)),
    row("interpolate-linear", *same("interpolate", scale_factor=1.5, mode="linear"), normal(2, 3, 5)),
    row("interpolate-trilinear", *same("interpolate", size=(3, 5, 4), mode="trilinear", align_corners=True),
        normal(1, 1, 2, 3, 2)),
    row("matmul-vector-left", tfl.matmul, torch.matmul, normal(3), normal(2, 3, 4)),
    row("matmul-vector-right", tfl.matmul, torch.matmul, normal(2, 5, 3), normal(3)),
    row("matmul-vectors", tfl.matmul, torch.matmul, normal(4), normal(4)),
]


def torch_values(torch_fn, inputs, projection):
    tensors = [torch.tensor(v, requires_grad=True) for v in inputs]
    expected = torch_fn(*tensors)
    if expected.requires_grad:  # (indices have no gradient)
        (expected * torch.tensor(projection)).sum().backward()
    return expected.detach().numpy(), [t.grad.numpy() if t.grad is not None else np.zeros_like(v)
                                       for t, v in zip(tensors, inputs)]


def check(value, grads, expected, expected_grads):
    np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-9)
    for got, want in zip(grads, expected_grads):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("tfl_fn, torch_fn, inputs", ROWS)
def test_graph_value_and_gradient_equal_torch(tfl_fn, torch_fn, inputs):
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
    out = tfl_fn(*placeholders)
    projection = np.random.default_rng(0).standard_normal(out.shape)
    grads = tfl.gradients(tfl.reduce_sum(out * tfl.Constant(projection)), placeholders)
    grads = [g if g is not None else tfl.zeros_like(p) for g, p in zip(grads, placeholders)]
    with tfl.Session() as sess:
        value, *grad_values = sess.run([out, *grads], dict(zip(placeholders, inputs)))
    check(value, grad_values, *torch_values(torch_fn, inputs, projection))


@pytest.mark.parametrize("mode", ["eager", "to_static"])
@pytest.mark.parametrize("tfl_fn, torch_fn, inputs", ROWS[::3])
def test_eager_and_to_static_value_and_gradient_equal_torch(mode, tfl_fn, torch_fn, inputs):
    tensors = [tfl.tensor(v, requires_grad=True) for v in inputs]
    out = (tfl_fn if mode == "eager" else tfl.jit.to_static(tfl_fn))(*tensors)
    projection = np.random.default_rng(0).standard_normal(out.shape)
    (out * projection).sum().backward()
    grads = [t.grad if t.grad is not None else np.zeros_like(v) for t, v in zip(tensors, inputs)]
    check(out.numpy(), grads, *torch_values(torch_fn, inputs, projection))


NN_MODULES = ("tinyflow.ops.conv", "tinyflow.ops.pooling", "tinyflow.ops.normalization", "tinyflow.ops.resize",
              "tinyflow.nn.norm_layers")


def test_every_public_nn_function_has_a_torch_row():
    public = {n for n in tfl.__all__ if getattr(getattr(tfl, n), "__module__", None) in NN_MODULES}
    rows = {p.id.split("-")[0] for p in ROWS}
    assert public and public - rows == set(), f"add a row comparing these with torch: {sorted(public - rows)}"
