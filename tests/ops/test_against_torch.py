"""Forward values and gradients of the ops added for ONNX import against PyTorch on the same inputs.

One row per op type: how tinyflow and torch spell it, and the inputs (float64; integer
inputs are fed, never differentiated). The test projects the output on a fixed random
tensor and compares the value and the gradient of every float input.
"""
import numpy as np
import pytest

import tinyflow as tfl

torch = pytest.importorskip("torch", reason="these checks compare with PyTorch; pip install torch")
F = torch.nn.functional
_rng = np.random.default_rng(7)


def normal(*shape):
    return _rng.standard_normal(shape)


def off_zero(*shape):
    x = _rng.standard_normal(shape)
    return x + 0.1 * np.sign(x)


def row(op_type, tfl_fn, torch_fn, *inputs):
    return pytest.param(tfl_fn, torch_fn, [np.asarray(v) for v in inputs], id=op_type)


ROWS = [
    row("Reciprocal", tfl.reciprocal, torch.reciprocal, off_zero(3, 4)),
    row("Floor", tfl.floor, torch.floor, normal(3, 4) * 3),
    row("Ceil", tfl.ceil, torch.ceil, normal(3, 4) * 3),
    row("Sin", tfl.sin, torch.sin, normal(3, 4) * 2),
    row("Cos", tfl.cos, torch.cos, normal(3, 4) * 2),
    row("Erf", tfl.erf, torch.erf, normal(3, 4)),
    row("Mod", tfl.mod, torch.remainder, normal(3, 4) * 3, off_zero(4)),
    row("Mod-fmod", tfl.fmod, torch.fmod, normal(3, 4) * 3, off_zero(3, 1)),
    row("Clip", lambda x: tfl.clip(x, -0.5, 0.7), lambda x: torch.clamp(x, -0.5, 0.7), normal(3, 4)),
    row("Clip-tensors", tfl.clip, torch.clamp, normal(3, 4), normal(4) - 0.5, normal(3, 1) + 0.5),
    row("Elu", lambda x: tfl.elu(x, 0.7), lambda x: F.elu(x, 0.7), off_zero(3, 4)),
    row("Selu", tfl.selu, F.selu, off_zero(3, 4)),
    row("Gelu", tfl.gelu, F.gelu, normal(3, 4) * 2),
    row("Gelu-tanh", lambda x: tfl.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh"),
        normal(3, 4) * 2),
    row("Softsign", tfl.softsign, F.softsign, normal(3, 4) * 2),
    row("PRelu", lambda x, w: tfl.prelu(x, tfl.reshape(w, (3, 1, 1))), F.prelu, off_zero(2, 3, 2, 2), normal(3)),
    row("HardSigmoid", tfl.hard_sigmoid, F.hardsigmoid, normal(3, 4) * 4),
    row("HardSwish", tfl.hard_swish, F.hardswish, normal(3, 4) * 4),
]


@pytest.mark.parametrize("tfl_fn, torch_fn, inputs", ROWS)
def test_value_and_gradient_equal_torch(tfl_fn, torch_fn, inputs):
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
    out = tfl_fn(*placeholders)
    projection = np.random.default_rng(0).standard_normal(out.shape)
    floats = [p for p, v in zip(placeholders, inputs) if v.dtype.kind == "f"]
    grads = tfl.gradients(tfl.reduce_sum(out * tfl.Constant(projection)), floats)
    with tfl.Session() as sess:
        value, *grad_values = sess.run([out, *grads], dict(zip(placeholders, inputs)))

    tensors = [torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in inputs]
    expected = torch_fn(*tensors)
    (expected * torch.tensor(projection)).sum().backward()
    # float64 throughout, but torch keeps a few constants in float32 (hardsigmoid's 1/6): rtol 1e-6
    np.testing.assert_allclose(value, expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    for got, t in zip(grad_values, [t for t in tensors if t.requires_grad]):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-6, atol=1e-9)
