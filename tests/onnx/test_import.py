"""tfl.onnx.load: models become tinyflow graphs with ONNX names, run on every backend, and train."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx_model_builders import if_model, make_model  # noqa: E402

from tinyflow.onnx.rules import IMPORTS  # noqa: E402


def mlp_model():
    """x (None, 3) -> MatMul W1 -> Add b1 -> Relu -> MatMul W2 -> y, torch-style node names."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h0"], name="/fc1/MatMul"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="/fc1/Add"),
             helper.make_node("Relu", ["h1"], ["h2"], name="/act/Relu"),
             helper.make_node("MatMul", ["h2", "W2"], ["y"], name="/fc2/MatMul")]
    inits = [("W1", rng.standard_normal((3, 4)).astype(np.float32)), ("b1", np.full(4, 0.1, np.float32)),
             ("W2", rng.standard_normal((4, 2)).astype(np.float32))]
    return make_model(nodes, [("x", TensorProto.FLOAT, ["batch", 3])], [("y", TensorProto.FLOAT, ["batch", 2])],
                      inits), dict(inits)


def numpy_mlp(x, w):
    return np.maximum(x @ w["W1"] + w["b1"], 0) @ w["W2"]


def test_a_model_becomes_placeholders_variables_and_named_ops(backend):
    model, weights = mlp_model()
    prog = tfl.onnx.load(model)
    assert list(prog.inputs) == ["x"] and list(prog.outputs) == ["y"]
    x = prog.inputs["x"]
    assert isinstance(x, tfl.Placeholder) and x.shape == (None, 3) and x.dtype == np.float32
    assert [v.name for v in prog.variables] == ["W1", "b1", "W2"] and all(v.trainable for v in prog.variables)
    assert prog.outputs["y"].name == "fc2/MatMul" and prog.graph.get_node("fc1/Add").op_type == "Add"
    data = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(prog({"x": data})["y"], numpy_mlp(data, weights), rtol=1e-5, atol=1e-6)
    assert prog.graph is tfl.get_default_graph()


def test_a_program_runs_in_one_session_per_backend_that_says_what_ran_where():
    model, weights = mlp_model()
    prog = tfl.onnx.load(model)
    data = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(prog({"x": data}, backend="numpy")["y"], numpy_mlp(data, weights), rtol=1e-5)
    session = prog.session("numpy")
    assert session is prog.session("numpy") and session is not prog.session("numpy", optimize=False)
    assert session.backend.name == "numpy" and session.graph is prog.graph
    assert session.backend.report.as_dict()["host_ops"]["MatMul"] == 2  # the last run's two products


def test_load_takes_a_path_bytes_or_a_model_proto_and_run_is_one_call(tmp_path):
    model, weights = mlp_model()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    data = np.ones((2, 3), np.float32)
    for source in (str(path), path, path.read_bytes(), model):
        with tfl.Graph().as_default():
            np.testing.assert_allclose(tfl.onnx.load(source)({"x": data})["y"], numpy_mlp(data, weights), rtol=1e-5)
    before = len(tfl.get_default_graph().nodes)
    np.testing.assert_allclose(tfl.onnx.run(path, {"x": data})["y"], numpy_mlp(data, weights), rtol=1e-5)
    assert len(tfl.get_default_graph().nodes) == before  # run() builds in a graph of its own


def test_imported_models_train_and_trainable_false_freezes_them():
    model, weights = mlp_model()
    prog = tfl.onnx.load(model)
    target = tfl.Placeholder((None, 2))
    loss = tfl.reduce_mean(tfl.square(prog.outputs["y"] - target))
    grads = tfl.gradients(loss, prog.variables)
    assert all(g is not None for g in grads)
    train = tfl.optim.SGD(0.1).minimize(loss)
    data = np.random.default_rng(2).standard_normal((8, 3)).astype(np.float32)
    goal = np.zeros((8, 2), np.float32)
    with tfl.Session() as sess:
        first = sess.run(loss, {prog.inputs["x"]: data, target: goal})
        for _ in range(20):
            sess.run(train, {prog.inputs["x"]: data, target: goal})
        assert sess.run(loss, {prog.inputs["x"]: data, target: goal}) < first
    with tfl.Graph().as_default():
        frozen = tfl.onnx.load(model, trainable=False)
        assert frozen.variables and not any(v.trainable for v in frozen.variables)


def test_an_op_without_a_rule_is_named_before_anything_is_built():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("Hardmax", ["r"], ["y"], name="the_hardmax")]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2, 3])], [("y", TensorProto.FLOAT, [2, 3])], opset=13)
    graph = tfl.Graph()
    with pytest.raises(tfl.onnx.OnnxImportError, match=r"Hardmax node 'the_hardmax'.*no import rule for the ONNX op "
                                                        r"'Hardmax' \(opset 13\)") as err:
        tfl.onnx.load(model, graph=graph)
    assert err.value.unsupported and not graph.nodes and isinstance(err.value, tfl.TinyflowError)


def test_an_attribute_the_rule_does_not_read_is_refused(monkeypatch):
    monkeypatch.setitem(IMPORTS, "LeakyRelu", lambda ctx, node: tfl.relu(ctx.input(0)))  # forgets alpha
    model = make_model([helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky", alpha=0.2)],
                       [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    with pytest.raises(tfl.onnx.OnnxImportError, match=r"LeakyRelu node 'leaky' \(opset 17\).*\['alpha'\]") as err:
        tfl.onnx.load(model)
    assert err.value.unsupported
    invalid = make_model([helper.make_node("Relu", ["x"], ["y"], name="r", mystery=3)],
                         [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])])
    with pytest.raises(tfl.onnx.OnnxImportError, match="Relu node 'r' is not valid ONNX.*mystery") as err:
        tfl.onnx.load(invalid)
    assert not err.value.unsupported


def test_static_shape_arithmetic_folds_and_dynamic_shapes_run():
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Concat", ["minus_one", "s"], ["target"], axis=0, name="cat"),
             helper.make_node("ConstantOfShape", ["s"], ["zeros"], name="zeros",
                              value=numpy_helper.from_array(np.array([2.5], np.float32))),
             helper.make_node("Add", ["x", "zeros"], ["shifted"], name="shift"),
             helper.make_node("Reshape", ["shifted", "target"], ["y"], name="reshape")]
    inits = [("minus_one", np.array([-1], np.int64))]
    static = make_model(nodes, [("x", TensorProto.FLOAT, [2, 3])], [("y", TensorProto.FLOAT, [1, 2, 3])], inits)
    prog = tfl.onnx.load(static)
    assert not [n for n in prog.graph.nodes if n.op_type in ("Shape", "Fill", "Concat", "ReshapeTo")]  # all folded
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(prog({"x": x})["y"], (x + 2.5).reshape(1, 2, 3))
    with tfl.Graph().as_default():  # a batch of unknown size: the shape is computed at run time
        dynamic = make_model(nodes, [("x", TensorProto.FLOAT, ["n", 3])], [("y", TensorProto.FLOAT, [1, "n", 3])],
                             inits)
        prog = tfl.onnx.load(dynamic)
        assert {"Shape", "Fill", "ReshapeTo"} <= {n.op_type for n in prog.graph.nodes}
        assert prog.outputs["y"].shape == (None, None, 3)  # -1 next to a run-time size: unknown until run time
        for batch in (1, 4):
            x = np.arange(3 * batch, dtype=np.float32).reshape(batch, 3)
            np.testing.assert_array_equal(prog({"x": x})["y"], (x + 2.5).reshape(1, batch, 3))


def test_graph_inputs_can_be_fixed_as_constants():
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="total", keepdims=0)]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2, 3]), ("axes", TensorProto.INT64, [1])],
                       [("y", TensorProto.FLOAT, None)])
    with pytest.raises(tfl.onnx.OnnxImportError, match=r"graph input 'axes'.*constants=\{'axes': value\}"):
        tfl.onnx.load(model)
    with tfl.Graph().as_default():
        prog = tfl.onnx.load(model, constants={"axes": np.array([1])})
        assert list(prog.inputs) == ["x"]
        np.testing.assert_array_equal(prog({"x": np.ones((2, 3), np.float32)})["y"], [3, 3])


def test_run_fixes_the_graph_inputs_the_import_needs_from_the_values_given():
    """tfl.onnx.run, as the ONNX backend does, takes an input the import needs as a constant (ReduceSum's axes) from
    the inputs it is given: no constants= to write."""
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="total", keepdims=0)]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2, 3]), ("axes", TensorProto.INT64, [1])],
                       [("y", TensorProto.FLOAT, None)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for axis, expected in ((0, [3, 5, 7]), (1, [3, 12])):
        np.testing.assert_array_equal(tfl.onnx.run(model, {"x": x, "axes": np.array([axis])})["y"], expected)
    with pytest.raises(tfl.onnx.OnnxImportError, match=r"graph input 'axes'"):
        tfl.onnx.run(model, {"x": x})  # not given: the error says what to pass


def test_a_subgraph_rule_reads_outer_values_by_name(monkeypatch):
    """The API control-flow rules use: ctx.import_graph inside the functions tfl.cond traces."""
    def import_if(ctx, node):
        then_graph, else_graph = ctx.attr("then_branch"), ctx.attr("else_branch")
        return tfl.cond(ctx.input(0), lambda: ctx.import_graph(then_graph)[0],
                        lambda: ctx.import_graph(else_graph)[0], name=ctx.name)
    monkeypatch.setitem(IMPORTS, "If", import_if)
    model = if_model()
    prog = tfl.onnx.load(model)
    x = np.float32([4, 5, 6])
    np.testing.assert_allclose(prog({"x0": np.float32(1), "x": x})["y"], x * [1, 2, 3])
    np.testing.assert_allclose(prog({"x0": np.float32(-1), "x": x})["y"], x - [1, 2, 3])
    (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["y"]), [prog.graph.get_node("w")])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {prog.inputs["x0"]: 1.0, prog.inputs["x"]: x}), x)


def test_export_then_import_gives_the_same_values(tmp_path, backend):
    model = tfl.nn.Sequential(tfl.nn.Conv2D(1, 4, 3, padding=1, act="relu"), tfl.nn.BatchNorm2d(4),
                              tfl.nn.MaxPool2D(2), tfl.nn.Flatten(), tfl.nn.Linear(64, 10, act="tanh"))
    model.layers[1].running_var.value = np.array([1.5, 0.5, 2.0, 1.0], np.float32)
    spec = InputSpec([None, 1, 8, 8], "float32", "x")
    tfl.onnx.export(model, tmp_path / "cnn.onnx", input_spec=[spec])
    x = np.random.default_rng(3).standard_normal((3, 1, 8, 8)).astype(np.float32)
    expected = tfl.jit.to_static(model, input_spec=[spec])(x)
    with tfl.Graph().as_default():
        prog = tfl.onnx.load(tmp_path / "cnn.onnx")
        (name,) = prog.inputs
        np.testing.assert_allclose(prog({name: x})["output"], np.asarray(expected), rtol=1e-5, atol=1e-6)
        statistics = [v for v in prog.variables if "running" in v.name]
        assert len(statistics) == 2 and not any(v.trainable for v in statistics)


def test_a_slice_with_bounds_known_at_run_time_runs_and_differentiates(backend):
    """y = x[:, 1:len-1] for an x whose length is known only at run time: the bounds come from its shape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["length"], axis=0, name="length"),
             helper.make_node("Sub", ["length", "one"], ["end"], name="end"),
             helper.make_node("Slice", ["x", "one", "end", "one"], ["y"], name="inner")]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2, "n"])], [("y", TensorProto.FLOAT, [2, None])],
                       [("one", np.array([1], np.int64))])
    prog = tfl.onnx.load(model)
    assert prog.graph.get_node("inner").op_type == "RuntimeSlice"
    x = prog.inputs["x"]
    (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["y"] * 3.0), [x])
    with tfl.Session(backend=backend) as sess:
        for n in (2, 5):
            data = np.arange(2 * n, dtype=np.float32).reshape(2, n)
            got, dx = sess.run([prog.outputs["y"], grad], {x: data})
            np.testing.assert_array_equal(got, data[:, 1:n - 1])
            expected = np.zeros_like(data)
            expected[:, 1:n - 1] = 3.0
            np.testing.assert_array_equal(dx, expected)


def test_narrow_types_are_their_values_held_in_wider_dtypes():
    """bfloat16 / float8 / int4 tensors in and out: tinyflow computes with their values, rounded as ONNX rounds."""
    from onnx.reference import ReferenceEvaluator
    nodes = [helper.make_node("Cast", ["x"], ["wide"], to=TensorProto.FLOAT, name="widen"),
             helper.make_node("Mul", ["wide", "wide"], ["square"], name="square"),
             helper.make_node("Cast", ["square"], ["small"], to=TensorProto.FLOAT8E4M3FN, name="to_float8"),
             helper.make_node("Cast", ["square"], ["nibble"], to=TensorProto.INT4, name="to_int4")]
    model = make_model(nodes, [("x", TensorProto.BFLOAT16, [5])], [("small", TensorProto.FLOAT8E4M3FN, [5]),
                                                                  ("nibble", TensorProto.INT4, [5])], opset=21)
    prog = tfl.onnx.load(model)
    assert prog.inputs["x"].dtype == np.float32 and prog.graph.get_node("to_float8").op_type == "RoundToType"
    import ml_dtypes
    x = np.float32([0.3, -1.7, 2.9, 30.0, 1e-3]).astype(ml_dtypes.bfloat16)
    got = prog({"x": x})
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for name, expected in zip(["small", "nibble"], want):
        assert got[name].dtype == expected.dtype
        np.testing.assert_array_equal(got[name].astype(np.float32), expected.astype(np.float32))
    assert float(got["small"].astype(np.float32)[3]) == 448.0  # 900 saturates to float8e4m3fn's largest value


def test_a_range_of_run_time_length_indexes_an_embedding(backend):
    """Position ids 0..n-1 for n known at run time (torch.arange(x.shape[1])), gathered from a table."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "one"], ["length"], axis=0, name="length"),
             helper.make_node("Range", ["zero", "length", "one"], ["positions"], name="positions"),
             helper.make_node("Gather", ["table", "positions"], ["embedded"], axis=0, name="embed"),
             helper.make_node("Add", ["x", "embedded"], ["y"], name="add")]
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    model = make_model(nodes, [("x", TensorProto.FLOAT, ["batch", "n", 2])], [("y", TensorProto.FLOAT, None)],
                       [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)), ("table", table)])
    prog = tfl.onnx.load(model)
    assert prog.graph.get_node("positions").op_type == "Arange"
    for n in (1, 4):
        x = np.ones((3, n, 2), np.float32)
        np.testing.assert_array_equal(prog({"x": x}, backend=backend)["y"], x + table[:n])


def test_a_resize_to_sizes_computed_at_run_time_runs_and_differentiates(backend):
    """Nearest upsampling to twice the (unknown) input size: the sizes vector is read when the graph runs."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Mul", ["s", "scale"], ["sizes"], name="double"),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", name="resize")]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 1, "h", "w"])], [("y", TensorProto.FLOAT, None)],
                       [("scale", np.array([1, 1, 2, 2], np.int64))])
    prog = tfl.onnx.load(model)
    x = prog.inputs["x"]
    (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["y"]), [x])
    with tfl.Session(backend=backend) as sess:
        for h, w in ((2, 3), (1, 4)):
            data = np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w)
            y, dx = sess.run([prog.outputs["y"], grad], {x: data})
            np.testing.assert_array_equal(y, data.repeat(2, axis=2).repeat(2, axis=3))
            np.testing.assert_array_equal(dx, np.full_like(data, 4.0))
