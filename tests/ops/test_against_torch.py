"""Forward values and gradients of the elementwise table and the ops added for ONNX import against PyTorch.

One row per op type: how tinyflow and torch spell it, and the inputs (float64; integer
inputs are fed, never differentiated). The test projects the output on a fixed random
tensor and compares the value and the gradient of every float input.
"""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.ops.elementwise_ops import GRADIENTS

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

torch = pytest.importorskip("torch", reason="these checks compare with PyTorch; pip install torch")
F = torch.nn.functional
_rng = np.random.default_rng(7)


def normal(*shape):
    return _rng.standard_normal(shape)


def off_zero(*shape):
    x = _rng.standard_normal(shape)
    return x + 0.1 * np.sign(x)


def distinct(*shape):
    return _rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1 + 0.01 * _rng.random(shape)


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
    row("Fmod", tfl.fmod, torch.fmod, normal(3, 4) * 3, off_zero(3, 1)),
    row("Clip", lambda x: tfl.clip(x, -0.5, 0.7), lambda x: torch.clamp(x, -0.5, 0.7), normal(3, 4)),
    row("Clip-tensors", tfl.clip, torch.clamp, normal(3, 4), normal(4) - 0.5, normal(3, 1) + 0.5),
    row("Elu", lambda x: tfl.elu(x, 0.7), lambda x: F.elu(x, 0.7), off_zero(3, 4)),
    row("Selu", tfl.selu, F.selu, off_zero(3, 4)),
    row("Gelu", tfl.gelu, F.gelu, normal(3, 4) * 2),
    row("GeluTanh", lambda x: tfl.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh"),
        normal(3, 4) * 2),
    row("Softsign", tfl.softsign, F.softsign, normal(3, 4) * 2),
    row("PRelu", lambda x, w: tfl.prelu(x, tfl.reshape(w, (3, 1, 1))), F.prelu, off_zero(2, 3, 2, 2), normal(3)),
    row("HardSigmoid", tfl.hard_sigmoid, F.hardsigmoid, normal(3, 4) * 4),
    row("HardSwish", tfl.hard_swish, F.hardswish, normal(3, 4) * 4),
    # the rest of the elementwise table, with the edges issue 35 names (pow at 0, abs and sign at 0, ties)
    row("Add", tfl.add, torch.add, normal(3, 4), normal(4)),
    row("Subtract", tfl.subtract, torch.sub, normal(3, 4), normal(3, 1)),
    row("Multiply", tfl.multiply, torch.mul, normal(3, 4), normal(4)),
    row("Divide", tfl.divide, torch.div, normal(3, 4), off_zero(3, 1)),
    row("Power", tfl.power, torch.pow, np.abs(normal(3, 4)) + 0.5, normal(3, 4)),
    row("Power-zero-exponent", lambda x: x ** 0.0, lambda x: x ** 0.0, np.array([0.0, 1.5, -2.0])),
    row("Power-zero-base", tfl.power, torch.pow, np.array([0.0, 0.0, 2.0]), np.array([2.0, 0.0, 1.5])),
    row("Power-negative-base", tfl.power, torch.pow, np.array([-2.0, -0.5]), np.array([2.0, 3.0])),
    row("Maximum", tfl.maximum, torch.maximum, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 4.0])),
    row("Minimum", tfl.minimum, torch.minimum, np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 4.0])),
    row("Negative", tfl.negative, torch.neg, normal(3, 4)),
    row("Square", tfl.square, torch.square, normal(3, 4)),
    row("Sqrt", tfl.sqrt, torch.sqrt, np.abs(normal(3, 4)) + 0.1),
    row("Exp", tfl.exp, torch.exp, normal(3, 4)),
    row("Log", tfl.log, torch.log, np.abs(normal(3, 4)) + 0.1),
    row("Abs", tfl.abs, torch.abs, np.array([-1.5, 0.0, 2.0])),
    row("Sign", tfl.sign, torch.sign, np.array([-1.5, 0.0, 2.0])),
    row("Sigmoid", tfl.sigmoid, torch.sigmoid, normal(3, 4) * 3),
    row("Tanh", tfl.tanh, torch.tanh, normal(3, 4)),
    row("Relu", tfl.relu, torch.relu, off_zero(3, 4)),
    row("LeakyRelu", lambda x: tfl.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2), off_zero(3, 4)),
    row("Softplus", tfl.softplus, F.softplus, normal(3, 4) * 3),
    row("Silu", tfl.silu, F.silu, normal(3, 4) * 3),
    row("Hardtanh", lambda x: tfl.hardtanh(x, -0.5, 0.8), lambda x: F.hardtanh(x, -0.5, 0.8), off_zero(3, 4)),
    row("Where", tfl.where, torch.where, normal(3, 4) > 0, normal(3, 4), normal(4)),
    row("ReduceMin", lambda x: tfl.reduce_min(x, 1), lambda x: torch.amin(x, 1), distinct(3, 4)),
    row("ReduceProd", lambda x: tfl.reduce_prod(x, 0), lambda x: torch.prod(x, 0), off_zero(3, 4)),
    row("ReduceLogSumExp", lambda x: tfl.reduce_logsumexp(x, (0, 2)), lambda x: torch.logsumexp(x, (0, 2)),
        normal(2, 3, 4) * 3),
    row("Norm", lambda x: tfl.norm(x, 1, keepdims=True), lambda x: torch.linalg.vector_norm(x, dim=1, keepdim=True),
        normal(3, 4)),
    row("Gather", lambda x, i: tfl.gather(x, i), lambda x, i: x[i], normal(5, 3), np.array([[4, 0], [1, 4]])),
    row("Gather-axis", lambda x, i: tfl.gather(x, i, axis=1), lambda x, i: torch.index_select(x, 1, i),
        normal(3, 4), np.array([3, 0, 3])),
    row("TakeAlongAxis", lambda x, i: tfl.take_along_axis(x, i, 1), lambda x, i: torch.gather(x, 1, i),
        normal(3, 4), np.array([[0, 3], [1, 1], [3, 2]])),
    row("TopK", lambda x: tfl.topk(x, 3)[0], lambda x: torch.topk(x, 3).values, distinct(3, 5)),
    row("TopK-smallest", lambda x: tfl.topk(x, 2, axis=0, largest=False)[0],
        lambda x: torch.topk(x, 2, dim=0, largest=False).values, distinct(4, 3)),
    row("Pad-constant", lambda x: tfl.pad(x, ((0, 0), (1, 2), (2, 0)), value=0.5),
        lambda x: F.pad(x, (2, 0, 1, 2), value=0.5), normal(2, 3, 4)),
    row("Pad-reflect", lambda x: tfl.pad(x, ((0, 0), (0, 0), (2, 3)), mode="reflect"),
        lambda x: F.pad(x, (2, 3), mode="reflect"), normal(2, 3, 5)),
    row("Pad-edge", lambda x: tfl.pad(x, ((0, 0), (0, 0), (1, 2), (3, 1)), mode="edge"),
        lambda x: F.pad(x, (3, 1, 1, 2), mode="replicate"), normal(1, 2, 3, 4)),
    row("Pad-wrap", lambda x: tfl.pad(x, ((0, 0), (0, 0), (1, 2)), mode="wrap"),
        lambda x: F.pad(x, (1, 2), mode="circular"), normal(2, 3, 4)),
    row("Pad-crop", lambda x: tfl.pad(x, ((-1, 2), (1, -2))), lambda x: F.pad(x, (1, -2, -1, 2)), normal(3, 4)),
    row("Tile", lambda x: tfl.tile(x, (2, 1, 3)), lambda x: torch.tile(x, (2, 1, 3)), normal(2, 3)),
    row("BroadcastTo", lambda x: tfl.expand(x, (2, 3, -1)), lambda x: x.expand(2, 3, -1), normal(3, 1) + normal(1, 4)),
    row("ReshapeTo", tfl.reshape, lambda x, s: x.reshape(tuple(s.tolist())), normal(2, 6), np.array([3, -1, 2])),
    row("ExpandTo", tfl.expand, lambda x, s: x.expand(*s.tolist()), normal(3, 1), np.array([2, 3, 4])),
    row("Squeeze", lambda x: tfl.squeeze(x, 1), lambda x: torch.squeeze(x, 1), normal(3, 1, 2)),
    row("Unsqueeze", lambda x: tfl.unsqueeze(x, -1), lambda x: torch.unsqueeze(x, -1), normal(3, 2)),
    row("Flatten", lambda x: tfl.flatten(x, 1, 2), lambda x: torch.flatten(x, 1, 2), normal(2, 3, 4, 2)),
    row("Split", lambda x: tfl.split(x, [1, 3], axis=1)[1] * tfl.split(x, 2, axis=1)[0][:, :1],
        lambda x: torch.split(x, [1, 3], 1)[1] * torch.split(x, 2, 1)[0][:, :1], normal(2, 4)),
    row("Stack", lambda a, b: tfl.stack([a, b], axis=-1), lambda a, b: torch.stack([a, b], -1), normal(2, 3),
        normal(2, 3)),
    row("Einsum", lambda a, b: tfl.einsum("bij,bjk->bik", a, b), lambda a, b: torch.einsum("bij,bjk->bik", a, b),
        normal(2, 3, 4), normal(2, 4, 2)),
    row("Einsum-diagonal", lambda a: tfl.einsum("...ii->...i", a), lambda a: torch.einsum("...ii->...i", a),
        normal(2, 3, 3)),
    row("Einsum-outer", lambda a, b: tfl.einsum("i,j", a, b), lambda a, b: torch.einsum("i,j", a, b), normal(3),
        normal(2)),
    row("Triangle", lambda x: tfl.tril(x, -1), lambda x: torch.tril(x, -1), normal(2, 4, 3)),
    row("Triangle-upper", lambda x: tfl.triu(x, 1), lambda x: torch.triu(x, 1), normal(4, 3)),
    # issue 35: what PyTorch and needle users reach for (torch's gradient of floor_divide is not implemented: 0)
    row("FloorDivide", tfl.floor_divide, lambda a, b: torch.floor_divide(a.detach(), b.detach()) + 0 * (a + b),
        normal(3, 4) * 3, off_zero(4)),
    row("FloorDivide-operators", lambda a, b: a // b + a % b + 7.0 // b, lambda a, b: (a // b).detach() + a % b + (
        7.0 // b).detach() + 0 * b, normal(3, 4) * 3, off_zero(3, 1)),
    row("Max", lambda x: tfl.max(x, 1), lambda x: torch.amax(x, 1), distinct(3, 4)),
    row("Min", lambda x: tfl.min(x, 0, keepdims=True), lambda x: torch.amin(x, 0, keepdim=True), distinct(3, 4)),
    row("Var", lambda x: tfl.var(x, 1), lambda x: torch.var(x, 1), normal(3, 4)),
    row("Var-population", lambda x: tfl.var(x, correction=0), lambda x: torch.var(x, correction=0), normal(3, 4)),
    row("Std", lambda x: tfl.std(x, (0, 2), keepdims=True), lambda x: torch.std(x, (0, 2), keepdim=True),
        normal(2, 3, 4)),
    row("CumSum", lambda x: tfl.cumsum(x, -1), lambda x: torch.cumsum(x, -1), normal(3, 4)),
    row("CumProd", lambda x: tfl.cumprod(x, 0), lambda x: torch.cumprod(x, 0), off_zero(4, 3)),
    row("CumProd-zeros", lambda x: tfl.cumprod(x, 1), lambda x: torch.cumprod(x, 1),
        np.array([[2.0, 0.0, 3.0, 0.0, 5.0], [1.5, -2.0, 0.0, 4.0, 0.5], [0.0, 2.0, 3.0, 4.0, 5.0]])),
    row("LogSumExp", lambda x: tfl.logsumexp(x, 1), lambda x: torch.logsumexp(x, 1), normal(3, 4) * 3),
    row("Flip", lambda x: tfl.flip(x, (0, 2)), lambda x: torch.flip(x, (0, 2)), normal(2, 3, 4)),
    row("Roll", lambda x: tfl.roll(x, (1, -5), (0, 1)), lambda x: torch.roll(x, (1, -5), (0, 1)), normal(3, 4)),
    row("Roll-flattened", lambda x: tfl.roll(x, 5), lambda x: torch.roll(x, 5), normal(3, 4)),
    row("Outer", tfl.outer, torch.outer, normal(3), normal(4)),
    row("MaskedFill", lambda x, m: tfl.masked_fill(x, m, -1.5), lambda x, m: x.masked_fill(m, -1.5), normal(3, 4),
        normal(4) > 0),
    row("OneHot", lambda x, i: x * tfl.one_hot(i, 4), lambda x, i: x * F.one_hot(i, 4), normal(3, 4),
        np.array([3, 0, 1])),
    row("Diag", lambda x: tfl.diag(x, 1), lambda x: torch.diag(x, 1), normal(3, 4)),
    row("Diag-vector", lambda x: tfl.diag(x, -1), lambda x: torch.diag(x, -1), normal(3)),
    row("RepeatInterleave", lambda x: tfl.repeat_interleave(x, 2, 1), lambda x: torch.repeat_interleave(x, 2, 1),
        normal(2, 3)),
    row("RepeatInterleave-counts", lambda x: tfl.repeat_interleave(x, [1, 0, 2], 0),
        lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 2]), 0), normal(3, 2)),
    row("Constructors", lambda x: x * tfl.arange(4) + tfl.linspace(-1, 1, 4) - x @ tfl.eye(4) / tfl.full((4,), 3.0),
        lambda x: x * torch.arange(4) + torch.linspace(-1, 1, 4) - x @ torch.eye(4, dtype=x.dtype) / torch.full(
            (4,), 3.0), normal(3, 4)),
    row("NllLoss", tfl.nn.nll_loss, F.nll_loss, np.log(_rng.dirichlet(np.ones(5), 4)), np.array([0, 3, -100, 4])),
    row("NllLoss-spatial", lambda x, t: tfl.nn.nll_loss(x, t, reduction="none"),
        lambda x, t: F.nll_loss(x, t, reduction="none"), normal(2, 4, 3), np.array([[0, 3, 1], [2, 2, 0]])),
    row("L1Loss", tfl.nn.l1_loss, F.l1_loss, normal(3, 4), normal(3, 4)),
    row("SmoothL1Loss", lambda x, t: tfl.nn.smooth_l1_loss(x, t, 0.5, "sum"),
        lambda x, t: F.smooth_l1_loss(x, t, reduction="sum", beta=0.5), normal(3, 4), normal(3, 4)),
    row("BinaryCrossEntropy", tfl.nn.binary_cross_entropy, F.binary_cross_entropy, 0.05 + 0.9 * _rng.random((3, 4)),
        _rng.random((3, 4))),
    row("BinaryCrossEntropyWithLogits", lambda x, t: tfl.nn.binary_cross_entropy_with_logits(x, t, "none"),
        lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction="none"), normal(3, 4) * 5, _rng.random((3, 4))),
    row("Conv-bias-groups-dilation", lambda x, w, b: tfl.conv2d(x, w, stride=(2, 1), padding=1, dilation=(1, 2),
                                                                   groups=2, bias=b),
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2), normal(2, 4, 7, 6),
        normal(6, 2, 3, 2), normal(6)),
    row("Conv1d-bias-groups-dilation", lambda x, w, b: tfl.conv1d(x, w, padding=2, dilation=2, groups=3, bias=b),
        lambda x, w, b: F.conv1d(x, w, b, padding=2, dilation=2, groups=3), normal(2, 3, 8), normal(6, 1, 3),
        normal(6)),
    row("ConvTranspose-bias-groups-dilation", lambda x, w, b: tfl.conv_transpose2d(
        x, w, stride=2, padding=1, groups=2, dilation=2, bias=b), lambda x, w, b: F.conv_transpose2d(
        x, w, b, stride=2, padding=1, groups=2, dilation=2), normal(2, 4, 3, 3), normal(4, 3, 2, 2), normal(6)),
    # rank-0 tensors take axis 0 and -1 (as torch's dim); integer lists and tuples index as integer arrays
    row("Softmax-scalar", lambda x: tfl.softmax(x, 0), lambda x: torch.softmax(x, 0), np.array(1.3)),
    row("LogSoftmax-scalar", lambda x: tfl.log_softmax(x, -1), lambda x: torch.log_softmax(x, -1), np.array(1.3)),
    row("ReduceSum-scalar", lambda x: tfl.reduce_sum(x, -1) * tfl.reduce_max(x, 0), lambda x: torch.sum(x, -1) *
        torch.amax(x, 0), np.array(1.3)),
    row("GetItem-list", lambda x: x[[0, 2, 0]], lambda x: x[[0, 2, 0]], normal(3, 4)),
    row("GetItem-tuple", lambda x: x[(1, 0, -1), [0, 3, 2]], lambda x: x[(1, 0, -1), [0, 3, 2]], normal(3, 4)),
    # last, so that the draws of the rows above stay as they were
    row("MatMul", tfl.matmul, torch.matmul, normal(2, 3, 4), normal(4, 2)),
]


@pytest.mark.parametrize("tfl_fn, torch_fn, inputs", ROWS)
def test_value_and_gradient_equal_torch(tfl_fn, torch_fn, inputs):
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
    out = tfl_fn(*placeholders)
    feed = dict(zip(placeholders, inputs))
    with tfl.Session() as sess:
        shape = sess.run(out, feed).shape  # (the static shape may hold dims known only at run time)
    projection = np.random.default_rng(0).standard_normal(shape)
    floats = [p for p, v in zip(placeholders, inputs) if v.dtype.kind == "f"]
    grads = tfl.gradients(tfl.reduce_sum(out * tfl.Constant(projection)), floats)
    with tfl.Session() as sess:
        value, *grad_values = sess.run([out, *grads], feed)

    tensors = [torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in inputs]
    expected = torch_fn(*tensors)
    (expected * torch.tensor(projection)).sum().backward()
    # float64 throughout, but torch keeps a few constants in float32 (hardsigmoid's 1/6): rtol 1e-6
    np.testing.assert_allclose(value, expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    for got, t in zip(grad_values, [t for t in tensors if t.requires_grad]):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", ["eager", "to_static"])
@pytest.mark.parametrize("tfl_fn, torch_fn, inputs", ROWS)
def test_eager_and_to_static_value_and_gradient_equal_torch(mode, tfl_fn, torch_fn, inputs):
    """The same public functions on eager Tensors, and traced by to_static, backpropagated by Tensor.backward()."""
    tensors = [tfl.tensor(v, requires_grad=v.dtype.kind == "f", dtype=v.dtype) for v in inputs]
    out = (tfl_fn if mode == "eager" else tfl.jit.to_static(tfl_fn))(*tensors)
    assert isinstance(out, tfl.Tensor)
    projection = np.random.default_rng(0).standard_normal(out.shape)
    (out * projection).sum().backward()

    expected_in = [torch.tensor(v, requires_grad=v.dtype.kind == "f") for v in inputs]
    expected = torch_fn(*expected_in)
    (expected * torch.tensor(projection)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-9)
    for got, t in zip([x for x in tensors if x.requires_grad], [t for t in expected_in if t.requires_grad]):
        np.testing.assert_allclose(got.grad, t.grad.numpy(), rtol=1e-6, atol=1e-9)


# the differentiable forward ops added for ONNX import (their backward ops are checked through them)
ONNX_ROUND_OPS = {"Reciprocal", "Floor", "Ceil", "Sin", "Cos", "Erf", "Mod", "Clip", "ReduceMin", "ReduceProd",
                  "ReduceLogSumExp"}
ONNX_ROUND_MODULES = ("elementwise_ops", "indexing", "pad", "matmul", "shape_ops")


def test_every_differentiable_op_added_for_onnx_has_a_torch_row():
    from tinyflow.nodes import OP_TYPES
    from tinyflow.ops.registry import NOT_DIFFERENTIABLE, registered_op_types
    differentiable = {t for t, fn in registered_op_types().items() if fn is not NOT_DIFFERENTIABLE}
    from tinyflow.ops.elementwise_ops import OPS as TABLE_OPS
    # the elementwise table's own rows only: other tests make ops with tfl.elementwise_op, and every order of
    # an elementwise gradient (CosGradGrad0, ...) is made on first use
    added = {t for t, cls in OP_TYPES.items() if cls.__module__.rsplit(".", 1)[-1] in ONNX_ROUND_MODULES
             and (cls.__module__.rsplit(".", 1)[-1] != "elementwise_ops" or t in TABLE_OPS)}
    forward = {t for t in (added | ONNX_ROUND_OPS) & differentiable
               if not t.endswith("Grad") and t not in GRADIENTS and t not in ("ProdOfOthers", "Cast")}
    rows = {p.id.split("-")[0] for p in ROWS}
    assert forward - rows == set(), f"add a row comparing these with torch: {sorted(forward - rows)}"
