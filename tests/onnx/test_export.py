"""tfl.onnx.export: checked by onnx.checker and compared with onnxruntime at batch sizes 1 and 5."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is needed (pip install onnxruntime)")


def check_against_onnxruntime(model_or_fn, spec, path, make_input, rtol=1e-5, atol=1e-6):
    model = tfl.onnx.export(model_or_fn, path, input_spec=[spec])
    onnx.checker.check_model(onnx.load(str(path)))
    assert model.opset_import[0].version == 17
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    f = tfl.jit.to_static(model_or_fn, input_spec=[spec])
    for batch in (1, 5):
        x = make_input(batch)
        (got,) = session.run(None, {session.get_inputs()[0].name: x})
        np.testing.assert_allclose(got, f(x), rtol=rtol, atol=atol)
    return model


def test_mlp_with_every_activation(tmp_path):
    model = tfl.nn.Sequential(tfl.nn.Linear(13, 16, act="relu"), tfl.nn.Linear(16, 8, act="tanh"),
                              tfl.nn.Linear(8, 8, act="sigmoid"), tfl.nn.Linear(8, 4, act="leaky_relu"),
                              tfl.nn.Linear(4, 3), tfl.nn.Dropout(0.3))
    rng = np.random.default_rng(0)
    onnx_model = check_against_onnxruntime(model, InputSpec([None, 13], "float32", "x"), tmp_path / "mlp.onnx",
                                           lambda n: rng.standard_normal((n, 13)).astype(np.float32))
    used = {n.op_type for n in onnx_model.graph.node}
    assert {"MatMul", "Add", "Relu", "Tanh", "Sigmoid", "LeakyRelu"} <= used
    assert "Where" not in used and "RandomUniformLike" not in used  # dropout folded away in evaluation mode


def test_convnet_with_pooling_batch_norm_and_flatten(tmp_path):
    model = tfl.nn.Sequential(tfl.nn.Conv2D(1, 4, 3, padding=1, act="relu"), tfl.nn.BatchNorm2d(4),
                              tfl.nn.MaxPool2D(2), tfl.nn.Conv2D(4, 6, 3, stride=1, padding=1),
                              tfl.nn.AvgPool2D(2, padding=0), tfl.nn.Flatten(), tfl.nn.Linear(24, 10))
    bn = model.layers[1]
    bn.running_mean.value = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
    bn.running_var.value = np.array([1.5, 0.5, 2.0, 1.0], np.float32)
    rng = np.random.default_rng(1)
    onnx_model = check_against_onnxruntime(model, InputSpec([None, 1, 8, 8]), tmp_path / "cnn.onnx",
                                           lambda n: rng.standard_normal((n, 1, 8, 8)).astype(np.float32), rtol=1e-4,
                                           atol=1e-5)
    used = [n.op_type for n in onnx_model.graph.node]
    assert {"Conv", "MaxPool", "AveragePool", "Reshape"} <= set(used)
    assert used.count("BatchNormalization") == 1 and "Sqrt" not in used  # one op, moving statistics


def test_batch_norm_1d_becomes_one_batch_normalization(tmp_path):
    model = tfl.nn.Sequential(tfl.nn.Linear(5, 3), tfl.nn.BatchNorm1d(3, eps=1e-3))
    model.layers[1].running_var.value = np.array([0.5, 2.0, 1.0], np.float32)
    model.layers[1].weight.value = np.array([1.5, -1.0, 0.5], np.float32)
    rng = np.random.default_rng(4)
    onnx_model = check_against_onnxruntime(model, InputSpec([None, 5]), tmp_path / "bn.onnx",
                                           lambda n: rng.standard_normal((n, 5)).astype(np.float32))
    (bn,) = [n for n in onnx_model.graph.node if n.op_type == "BatchNormalization"]
    assert abs(bn.attribute[0].f - 1e-3) < 1e-9


def mixed_ops(x):
    """Softmax, log-softmax, reductions, transpose, concat, exp/log/div/sub/sqrt/abs, max/min."""
    a = tfl.softmax(x, axis=-1) + tfl.log_softmax(x, axis=0)
    b = tfl.transpose(tfl.concat([x, tfl.exp(x) / (tfl.abs(x) + 1.0)], axis=1))
    c = tfl.reduce_sum(b, axis=0)
    d = tfl.reduce_mean(x, axis=1, keepdims=True) - tfl.reduce_max(x, axis=1, keepdims=True)
    e = tfl.sqrt(tfl.square(x) + 1.0) - tfl.log(tfl.maximum(x, 0.5)) + tfl.minimum(x, 0.0) * 2.0
    return tfl.concat([a, tfl.reshape(c, (-1, 1)) + d, e, tfl.identity(x) ** 2.0], axis=1)


def test_softmax_reductions_shapes_and_elementwise_ops(tmp_path):
    rng = np.random.default_rng(2)
    check_against_onnxruntime(mixed_ops, InputSpec([None, 3], "float32", "x"), tmp_path / "mixed.onnx",
                              lambda n: rng.standard_normal((n, 3)).astype(np.float32), rtol=1e-5, atol=1e-5)


def gated(x):
    """A tensor `if` and a tensor `while` (become ONNX If and Loop)."""
    if tfl.reduce_sum(x) > 0:
        y = tfl.tanh(x) * 3.0
    else:
        y = x * x
    steps = tfl.Constant(0)
    while tfl.reduce_max(tfl.abs(y)) > 1.0:
        y = y / 2.0
        steps = steps + 1
    return y + tfl.cast(steps, "float32")


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                                "reduce_logsumexp", "squeeze"])
def test_reducing_or_squeezing_no_axes_exports_as_the_identity_onnxruntime_computes(tmp_path, op):
    """axis=() reduces (squeezes) nothing in tinyflow; ONNX reads empty axes as every axis."""
    fn = (lambda x: tfl.squeeze(x, ())) if op == "squeeze" else (lambda x: getattr(tfl, op)(x, axis=()))
    rng = np.random.default_rng(4)
    check_against_onnxruntime(fn, InputSpec([None, 1, 3]), tmp_path / f"{op}.onnx",
                              lambda n: rng.standard_normal((n, 1, 3)).astype(np.float32))


def test_control_flow_becomes_if_and_loop(tmp_path):
    rng = np.random.default_rng(5)
    spec = InputSpec([None, 3], "float32", "x")
    model = check_against_onnxruntime(gated, spec, tmp_path / "gated.onnx",
                                      lambda n: (rng.standard_normal((n, 3)) * 4).astype(np.float32))
    assert {"If", "Loop"} <= {n.op_type for n in model.graph.node}
    session = ort.InferenceSession(str(tmp_path / "gated.onnx"), providers=["CPUExecutionProvider"])
    f = tfl.jit.to_static(gated, input_spec=[spec])
    for x in (np.full((2, 3), -3.0, np.float32), np.full((4, 3), 0.1, np.float32)):  # each branch, 0 and more steps
        (got,) = session.run(None, {session.get_inputs()[0].name: x})
        np.testing.assert_allclose(got, f(x), rtol=1e-6)


def test_an_op_without_a_mapping_is_named(tmp_path):
    def loss(x):
        return tfl.nn.sigmoid_cross_entropy(x, tfl.ones_like(x))
    with pytest.raises(tfl.onnx.OnnxExportError, match="no ONNX mapping for op type 'SigmoidCrossEntropy'"):
        tfl.onnx.export(loss, tmp_path / "loss.onnx", input_spec=[InputSpec([None, 2])])
    assert not (tmp_path / "loss.onnx").exists()


def test_an_op_made_with_elementwise_op_exports_as_the_onnx_ops_of_its_expression(tmp_path):
    """An elementwise op defined from outside the package has no rule of its own: its expression is its ONNX form."""
    onnxruntime = pytest.importorskip("onnxruntime")
    swish = tfl.elementwise_op("ExportedSwish", "exported_swish(x, beta=1.0)", "x * sigmoid(beta * x)")
    x = tfl.Placeholder((2, 3), "float32", name="x")
    y = swish(x, beta=1.5) + 1.0
    values = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    expected = tfl.Session().run(y, {x: values})
    model = tfl.onnx.export_graph([x], [y])
    got = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": values})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_an_expression_spelled_as_onnx_ops_adds_no_unused_initializers():
    """Only log1p and expm1 need the constant 1: other functions of an expression add no initializer for it."""
    softsign = tfl.elementwise_op("SpelledSoftsign", "spelled_softsign(x)", "x / (1 + abs(x)) + log1p(exp(x))")
    x = tfl.Placeholder((2, 3), "float32", name="x")
    model = tfl.onnx.export_graph([x], [softsign(x)])
    read = {name for node in model.graph.node for name in node.input}
    assert [t.name for t in model.graph.initializer if t.name not in read] == []


INDEX_KEYS = {"negative-int": (-1,), "ints-around-a-slice": (0, slice(1, 3), -2),
              "new-axes": (None, 1, None, slice(None, None, -1)), "int-ellipsis": (2, Ellipsis, None),
              "array": (np.array([[0, 2], [1, 1]]), slice(1, 3)),
              "new-axis-array": (slice(None), None, np.array([[1], [2]]))}


@pytest.mark.parametrize("key", INDEX_KEYS.values(), ids=INDEX_KEYS.keys())
def test_indexing_with_ints_new_axes_and_an_array_exports_as_numpy_indexes(key):
    onnxruntime = pytest.importorskip("onnxruntime")
    values = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = tfl.Placeholder(values.shape, "float32", name="x")
    model = tfl.onnx.export_graph([x], [x[key]])
    got = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": values})[0]
    np.testing.assert_array_equal(got, values[key])
