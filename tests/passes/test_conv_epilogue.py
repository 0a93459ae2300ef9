"""Convolution epilogues: Conv → bias Add → Relu / Clip runs as one ConvBiasAct, computing what the three ops compute."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tinyflow as tfl
from tinyflow.backends.c_backend import fits_conv_bias
from tinyflow.ops.conv import Conv

from helpers import assert_close, op_types, run_both

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

RNG = np.random.default_rng(0)
# (input channels, output channels, kernel, stride, groups): odd channels, stride 2, groups, depthwise (with a
# channel multiplier too), pointwise 1x1 and a strided 1x1 (which goes through im2col)
SHAPES = [(3, 5, 3, 1, 1), (4, 6, 3, 2, 2), (5, 5, 3, 1, 5), (3, 6, 3, 2, 3), (5, 7, 1, 1, 1), (7, 5, 1, 2, 1)]
EPILOGUES = [("bias", None), ("bias", "relu"), ("bias", "relu6"), (None, "relu"), (None, "relu6")]


def computing(plan):
    """The op types a plan runs, less its leaves and the bias's reshape (a view)."""
    return [t for t in op_types(plan) if t not in ("Variable", "Constant", "Reshape")]


def conv_chain(x, channels, out, kernel, stride, groups, bias, act, dtype, residual=None):
    """Conv, then bias, then residual: a Placeholder "r" of the output's shape added as operand `residual` ("first",
    "second" or None), then act."""
    w = tfl.Constant(RNG.standard_normal((out, channels // groups, kernel, kernel)).astype(dtype))
    y = Conv(x, w, stride, kernel // 2, 1, groups)
    if bias:
        y = y + tfl.reshape(tfl.Variable(RNG.standard_normal(out).astype(dtype)), (1, -1, 1, 1))
    if residual:
        r = tfl.Placeholder(y.shape, dtype, name="r")
        y = r + y if residual == "first" else y + r
    return activation(y, act)


def activation(y, act):
    return {None: y, "relu": tfl.relu(y) if act == "relu" else None, "relu6": tfl.clip(y, 0.0, 6.0)}[act]


def fused_nodes(plan):
    return [step.node for step in plan.steps if step.node.op_type == "ConvBiasAct"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias, act", EPILOGUES)
def test_conv_bias_and_activation_run_as_one_op_with_the_values_of_the_three(backend, dtype, batch, shape, bias, act):
    x = tfl.Placeholder((None, shape[0], 9, 7), dtype, name="x")
    y = conv_chain(x, *shape, bias, act, dtype)
    feed = {x: (3 * RNG.standard_normal((batch, shape[0], 9, 7))).astype(dtype)}
    ref, sess = tfl.Session(optimize=False).run(y, feed), tfl.Session()
    out = sess.run(y, feed)
    assert computing(sess.plan([y], {x})) == ["ConvBiasAct"]
    if backend == "c":
        assert sess.backend.report.kernel_ops["ConvBiasAct"] == 1  # the C kernel, not the numpy fallback
    tight = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert_close(out, ref, **tight)
    assert out.dtype == dtype and (act is None or out.min() >= 0) and (act != "relu6" or out.max() <= 6)


RESIDUALS = [("bias", "relu", "first"), ("bias", "relu6", "second"), ("bias", None, "first"), (None, "relu", "second"),
             (None, None, "first")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias, act, order", RESIDUALS)
def test_residual_add_in_either_operand_order_runs_in_the_convolutions_epilogue(backend, dtype, batch, shape, bias,
                                                                                act, order):
    x = tfl.Placeholder((None, shape[0], 9, 7), dtype, name="x")
    y = conv_chain(x, *shape, bias, act, dtype, residual=order)
    r = tfl.get_default_graph().get_node("r")
    feed = {x: (3 * RNG.standard_normal((batch, shape[0], 9, 7))).astype(dtype)}
    feed[r] = (3 * RNG.standard_normal((batch,) + r.shape[1:])).astype(dtype)
    ref, sess = tfl.Session(optimize=False).run(y, feed), tfl.Session()
    out = sess.run(y, feed)
    plan = sess.plan([y], {x, r})
    assert computing(plan) == ["ConvBiasAct"] and fused_nodes(plan)[0].residual
    if backend == "c":
        assert sess.backend.report.kernel_ops["ConvBiasAct"] == 1  # the C kernel, not the numpy fallback
    tight = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert_close(out, ref, **tight)


def test_residual_broadcast_at_run_time_is_added_by_numpy_not_the_c_epilogue(backend):
    x = tfl.Placeholder((None, 3, 6, 6), name="x")
    y = conv_chain(x, 3, 4, 3, 1, 1, "bias", "relu", "float32", residual="second")
    r = tfl.get_default_graph().get_node("r")  # (None, 4, 6, 6): fed one image for a batch of three
    feed = {x: RNG.standard_normal((3, 3, 6, 6)).astype(np.float32), r: RNG.standard_normal((1, 4, 6, 6))
            .astype(np.float32)}
    ref, sess = tfl.Session(optimize=False).run(y, feed), tfl.Session()
    out = sess.run(y, feed)
    assert computing(sess.plan([y], {x, r})) == ["ConvBiasAct"] and out.shape == (3, 4, 6, 6)
    assert sess.backend.report.kernel_ops["ConvBiasAct"] == 0
    assert_close(out, ref)


def test_c_kernel_refuses_a_residual_of_another_shape_than_the_output():
    x = tfl.Placeholder((None, 2, 4, 4), name="x")
    y = tfl.relu(Conv(x, tfl.Constant(np.ones((3, 2, 1, 1), np.float32))) + tfl.Placeholder((None, 3, 4, 4)))
    plan = tfl.Session().plan([y], {x, tfl.get_default_graph().get_node("Placeholder")})
    op, = fused_nodes(plan)
    arrays = np.ones((2, 2, 4, 4), np.float32), np.ones((3, 2, 1, 1), np.float32)
    assert fits_conv_bias(op, *arrays, np.ones((2, 3, 4, 4), np.float32))
    assert not fits_conv_bias(op, *arrays, np.ones((1, 3, 4, 4), np.float32))
    assert not fits_conv_bias(op, *arrays, np.ones((2, 3, 4, 1), np.float32))


def test_residual_sum_or_biased_value_read_elsewhere_stops_the_chain_there():
    x = tfl.Placeholder((None, 2, 5, 5), name="x")
    biased = Conv(x, tfl.Constant(RNG.standard_normal((2, 2, 3, 3)).astype(np.float32)), padding=1) + \
        tfl.Constant(RNG.standard_normal((2, 1, 1)).astype(np.float32))
    total = biased + x
    y = tfl.relu(total)
    feed = {x: RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)}
    out, ref, plan = run_both([y, total * 2.0], feed)  # the sum has another reader: the Relu stays out
    assert [n.residual for n in fused_nodes(plan)] == [True] and fused_nodes(plan)[0].bounds[0] == -np.inf
    assert_close(out, ref)
    out, ref, plan = run_both([y, biased * 2.0], feed)  # the biased value has another reader: the residual stays out
    assert [n.residual for n in fused_nodes(plan)] == [False] and "Relu" not in op_types(plan)
    assert_close(out, ref)


def test_an_intermediate_that_is_fetched_or_read_elsewhere_is_not_fused():
    x = tfl.Placeholder((None, 2, 5, 5), name="x")
    conv = Conv(x, tfl.Constant(RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)), padding=1)
    biased = conv + tfl.Constant(RNG.standard_normal((3, 1, 1)).astype(np.float32))
    y = tfl.clip(biased, 0.0, 6.0)
    feed = {x: RNG.standard_normal((2, 2, 5, 5)).astype(np.float32)}
    out, ref, plan = run_both([conv, y], feed)
    assert "ConvBiasAct" not in op_types(plan)
    assert_close(out, ref)
    out, ref, plan = run_both([y, biased * 2.0], feed)  # the Clip's input has another reader: the bias alone fuses
    assert computing(plan)[0] == "ConvBiasAct" and "Clip" in computing(plan)
    assert_close(out, ref)


def test_a_bias_not_per_channel_is_not_fused():
    x = tfl.Placeholder((2, 3, 4, 4), name="x")
    conv = Conv(x, tfl.Constant(RNG.standard_normal((3, 3, 1, 1)).astype(np.float32)))
    y = tfl.relu(conv + tfl.Constant(RNG.standard_normal((1, 1, 4, 1)).astype(np.float32)))
    out, ref, plan = run_both(y, {x: RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)})
    assert "Add" in str(plan.optimized.nodes) and "Relu" not in op_types(plan)  # Conv, then Add+Relu fused
    assert_close(out, ref)


def test_training_graph_fuses_conv_bias_relu_and_keeps_its_gradients():
    x = tfl.Placeholder((2, 3, 6, 6), "float64", name="x")
    conv = tfl.nn.Conv2D(3, 4, 3, padding=1, act="relu", bias_init="uniform", dtype="float64")
    loss = tfl.reduce_sum(tfl.square(conv(x)))
    grads = tfl.gradients(loss, [x, conv.weight, conv.bias])
    out, ref, plan = run_both([loss] + grads, {x: RNG.standard_normal((2, 3, 6, 6))})
    assert "ConvBiasAct" in op_types(plan)
    assert_close(out, ref, rtol=1e-12)


def test_training_graph_fuses_the_residual_and_keeps_its_gradients():
    x = tfl.Placeholder((2, 4, 6, 6), "float64", name="x")
    conv = tfl.nn.Conv2D(4, 4, 3, padding=1, bias_init="uniform", dtype="float64")
    identity = tfl.tanh(x)  # the residual's own gradient flows back through it to x
    loss = tfl.reduce_sum(tfl.square(tfl.relu(identity + conv(x))))
    grads = tfl.gradients(loss, [x, conv.weight, conv.bias])
    out, ref, plan = run_both([loss] + grads, {x: RNG.standard_normal((2, 4, 6, 6))})
    assert [(n.residual, n.bounds) for n in fused_nodes(plan)] == [(True, (0.0, np.inf))]
    assert_close(out, ref, rtol=1e-12)


def batch_norm_parameters(channels, dtype, frozen=False):
    """Running mean and variance, γ and β of `channels`: Constants if `frozen`, else Variables."""
    values = (RNG.standard_normal(channels), RNG.uniform(0.5, 2.0, channels), RNG.standard_normal(channels),
              RNG.standard_normal(channels))
    return [(tfl.Constant if frozen else tfl.Variable)(v.astype(dtype)) for v in values]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bias, act, frozen", [("bias", "relu", False), (None, "relu6", True), (None, None, False)])
def test_inference_batch_norm_of_a_convolution_is_folded_into_its_filters_and_bias(backend, dtype, batch, shape, bias,
                                                                                   act, frozen):
    x = tfl.Placeholder((None, shape[0], 9, 7), dtype, name="x")
    conv = conv_chain(x, *shape, bias, None, dtype)
    mean, var, gamma, beta = batch_norm_parameters(shape[1], dtype, frozen)
    y = activation(tfl.nn.batch_norm(conv, mean, var, gamma, beta, eps=1e-3), act)
    feed = {x: (3 * RNG.standard_normal((batch, shape[0], 9, 7))).astype(dtype)}
    ref, sess = tfl.Session(optimize=False).run(y, feed), tfl.Session()
    out = sess.run(y, feed)
    plan = sess.plan([y], {x})
    assert plan.optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == 1
    assert computing(plan)[-1] == "ConvBiasAct" and "Conv" not in computing(plan)
    if frozen:  # parameters all constants: the folded filters and bias are constants too
        assert computing(plan) == ["ConvBiasAct"]
    tight = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    assert_close(out, ref, **tight)


def test_batch_norm_layers_fold_in_eval_mode_follow_their_variables_and_never_fold_in_training_mode():
    x = tfl.Placeholder((None, 3, 8, 8), name="x")
    conv, norm = tfl.nn.Conv2D(3, 4, 3, padding=1, bias_init="uniform"), tfl.nn.BatchNorm2d(4)
    y = tfl.relu(norm(conv(x)))
    for variable, value in zip((norm.running_mean, norm.running_var, norm.weight, norm.bias),
                               batch_norm_parameters(4, "float32")):
        variable.value = value.value
    feed = {x: RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)}
    sess, plain = tfl.Session(), tfl.Session(optimize=False)
    assert_close(sess.run(y, feed), plain.run(y, feed), rtol=1e-5, atol=1e-5)
    assert sess.plan([y], {x}).optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == 1
    norm.running_var.value = norm.running_var.value * 3.0  # fine-tuned between runs: the plan reads the new value
    conv.weight.value = conv.weight.value[::-1].copy()
    assert_close(sess.run(y, feed), plain.run(y, feed), rtol=1e-5, atol=1e-5)
    flag = tfl.nn.training_flag()
    training = {**feed, flag: True}  # the batch's statistics: nothing to fold
    assert_close(sess.run(y, training), plain.run(y, training), rtol=1e-5, atol=1e-5)
    assert sess.plan([y], {x, flag}).optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == 0
    batch = tfl.nn.batch_norm(conv(x), norm.running_mean, norm.running_var, norm.weight, norm.bias, training=True)
    out, ref, plan = run_both(batch, feed)  # (x - μ)/√(σ² + ε)·γ + β as in inference, but μ and σ² are the batch's
    assert plan.optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == 0
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_batch_norm_of_a_convolution_read_elsewhere_is_not_folded():
    x = tfl.Placeholder((None, 3, 6, 6), name="x")
    conv = Conv(x, tfl.Constant(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)), padding=1)
    y = tfl.nn.batch_norm(conv, *batch_norm_parameters(4, "float32"))
    out, ref, plan = run_both([y, conv * 2.0], {x: RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)})
    assert plan.optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == 0
    assert_close(out, ref)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:It is recommended that constant folding")
@pytest.mark.parametrize("constant_folding", [False, True])
def test_imported_torch_basic_block_runs_as_convolutions_with_folded_norms_and_residuals(constant_folding, tmp_path):
    torch = pytest.importorskip("torch", reason="the BasicBlock is exported from PyTorch")
    nn = torch.nn

    class BasicBlock(nn.Module):  # ResNet's, with a strided 1x1 downsampling of the identity
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(4, 6, 3, 2, 1, bias=False), nn.BatchNorm2d(6)
            self.conv2, self.bn2 = nn.Conv2d(6, 6, 3, 1, 1, bias=False), nn.BatchNorm2d(6)
            self.down = nn.Sequential(nn.Conv2d(4, 6, 1, 2, bias=False), nn.BatchNorm2d(6))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(out)) + self.down(x))
    torch.manual_seed(0)
    block = BasicBlock()
    for norm in (block.bn1, block.bn2, block.down[1]):  # statistics away from the initial 0 and 1
        norm.running_mean.uniform_(-1, 1), norm.running_var.uniform_(0.5, 2), norm.weight.data.uniform_(0.5, 2)
    block.eval()
    x = torch.randn(3, 4, 9, 9)
    path = str(tmp_path / "block.onnx")
    torch.onnx.export(block, (x,), path, dynamo=False, opset_version=17, do_constant_folding=constant_folding,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["x"], output_names=["y"])
    prog = tfl.onnx.load(path)
    norms = [n.op_type for n in onnx.load(path).graph.node].count("BatchNormalization")
    y, inp = prog.outputs["y"], prog.inputs["x"]
    out, ref, plan = run_both(y, {inp: x.numpy()})
    assert plan.optimized.report.counts()["conv_epilogue"]["folded_batch_norms"] == norms == 3
    assert sorted(n.residual for n in fused_nodes(plan)) == [False, False, True]
    assert not {"Conv", "Add", "Relu"} & set(computing(plan))
    with torch.no_grad():
        assert_close(out, block(x).numpy(), rtol=1e-4, atol=1e-5)
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_c_kernel_refuses_a_bias_without_one_value_per_output_channel():
    x = tfl.Placeholder((1, 2, 4, 4), name="x")
    op = Conv(x, tfl.Constant(np.ones((3, 2, 1, 1), np.float32)))
    arrays = np.ones((1, 2, 4, 4), np.float32), np.ones((3, 2, 1, 1), np.float32)
    assert fits_conv_bias(op, *arrays, np.ones(3, np.float32))
    assert not fits_conv_bias(op, *arrays, np.ones(2, np.float32))


def test_imported_conv_with_bias_and_relu_runs_as_one_op():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    model = helper.make_model(helper.make_graph(
        nodes, "conv_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [_tensor("w", (4, 3, 3, 3)), _tensor("b", (4,))]),
        opset_imports=[helper.make_opsetid("", 17)])
    prog = tfl.onnx.load(model)
    y, x = prog.outputs["y"], prog.inputs["x"]
    out, ref, plan = run_both(y, {x: RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)})
    unfused = tfl.Session(optimize={"conv_epilogue": False}).plan([y], {x})
    assert computing(unfused) == ["Conv", "FusedElementwise"]
    assert computing(plan) == ["ConvBiasAct"]
    assert_close(out, ref)


def _tensor(name, shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)
