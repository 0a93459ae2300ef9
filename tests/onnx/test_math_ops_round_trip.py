"""The ops added for ONNX import, exported: onnx.checker accepts them, onnxruntime computes what tinyflow
computes, and importing the file back gives the same values and the same gradients."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is needed (pip install onnxruntime)")

_rng = np.random.default_rng(5)
X = _rng.standard_normal((4, 6)).astype(np.float32) * 2
X3 = _rng.standard_normal((2, 3, 4)).astype(np.float32)


def spec(shape, dtype="float32", name="x"):
    return InputSpec([None, *shape[1:]], dtype, name)


# (id, function, inputs): each function's first input has a dynamic batch dimension
ROWS = [
    ("math", lambda x: tfl.reciprocal(tfl.abs(x) + 1) + tfl.floor(x) - tfl.ceil(x) + tfl.sin(x) * tfl.cos(x)
     + tfl.erf(x) + tfl.softsign(x), [X]),
    ("mod", lambda x: tfl.mod(x * 3, 1.5) + tfl.fmod(x * 3, -1.5) + tfl.mod(x, -0.7), [X]),
    ("clip-activations", lambda x: tfl.clip(x, -1.0, 0.5) + tfl.clip(x, min=0.2) + tfl.elu(x, 0.3) + tfl.selu(x)
     + tfl.hard_sigmoid(x) + tfl.hard_swish(x) + tfl.gelu(x) + tfl.gelu(x, approximate="tanh"), [X]),
    ("prelu", lambda x: tfl.prelu(x, np.linspace(-1, 1, 6).astype(np.float32)), [X]),
    ("logic", lambda x: tfl.cast(tfl.logical_xor(tfl.logical_and(x > 0, x < 1), tfl.logical_not(
        tfl.logical_or(x > 2, x < -2))), "float32"), [X]),
    ("reductions", lambda x: tfl.reduce_min(x, 1) + tfl.reduce_prod(x, 1) + tfl.reduce_logsumexp(x, 1)
     + tfl.norm(x, 1), [X]),
    ("arg", lambda x: tfl.cast(tfl.argmax(x, 1) + tfl.argmin(x, 1)
                               + tfl.ops.reductions.ArgMax(x, 1, select_last_index=True), "float32"), [X]),
    ("argmax-flat", lambda x: tfl.cast(tfl.argmax(x) + tfl.argmin(x, keepdims=True), "float32"), [X]),
    ("gather", lambda x, i: tfl.gather(x, i, axis=1) * 2, [X, np.array([5, 0, -1], np.int64)]),
    ("topk", lambda x: tfl.topk(x, 3)[0] + tfl.cast(tfl.topk(x, 3, axis=1, largest=False)[1], "float32"), [X]),
    ("pad", lambda x: tfl.pad(x, ((0, 0), (2, -1)), value=0.5) + tfl.pad(x, ((0, 0), (1, 0)), mode="reflect")
     + tfl.pad(x, ((0, 0), (0, 1)), mode="edge"), [X]),
    ("shapes", lambda x: tfl.squeeze(tfl.unsqueeze(x, (1, 3)), 1) * tfl.flatten(tfl.unsqueeze(x, -1), 1)[:, None, :]
     + tfl.tile(x, (1, 1))[:, :1, None], [X]),
    ("flatten-dynamic", lambda x: tfl.flatten(x, 0, 1), [X3]),
    ("expand-tile", lambda x: tfl.expand(x[:, :1], (3, 1, 6)) + tfl.tile(x, (3, 1, 1)), [X]),
    ("split-stack", lambda x: tfl.stack(tfl.split(x, [2, 4], axis=1)[1:] + [x[:, ::-1][:, :4]], axis=0), [X]),
    ("slices", lambda x: x[:, 1] + x[..., -1] + x[::-1, 5] + x[1:-1:2, None, 2:], [X]),
    ("slice-array", lambda x: x[:, np.array([0, 0, 2])] * 2.0, [X]),
    ("einsum-trilu", lambda x: tfl.tril(tfl.einsum("bij,bkj->bik", x, x), -1) + tfl.triu(x[:, :, :3], 1), [X3]),
]


@pytest.mark.parametrize("fn, inputs", [pytest.param(f, i, id=n) for n, f, i in ROWS])
def test_export_runs_in_onnxruntime_and_imports_back(fn, inputs, tmp_path, backend):
    specs = [spec(v.shape, v.dtype.name, f"x{k}") for k, v in enumerate(inputs)]
    path = tmp_path / "model.onnx"
    tfl.onnx.export(fn, path, input_spec=specs)
    onnx.checker.check_model(onnx.load(str(path)))
    expected = np.asarray(tfl.jit.to_static(fn, input_spec=specs)(*inputs))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {s.name: v for s, v in zip(session.get_inputs(), inputs)})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with tfl.Graph().as_default():
        prog = tfl.onnx.load(path)
        feeds = dict(zip(prog.inputs, inputs))  # the inputs keep the order of the function's arguments
        np.testing.assert_allclose(prog(feeds)["output"], expected, rtol=1e-5, atol=1e-5)
        if expected.dtype.kind == "f" and inputs[0].dtype.kind == "f":
            x = next(iter(prog.inputs.values()))
            (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["output"]), [x])
            placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
            (expected_grad,) = tfl.gradients(tfl.reduce_sum(fn(*placeholders)), [placeholders[0]])
            assert (grad is None) == (expected_grad is None)  # integer results (argmax, logic) have none
            if grad is not None:
                with tfl.Session() as sess:
                    got_grad = sess.run(grad, {prog.inputs[k]: v for k, v in feeds.items()})
                    want_grad = sess.run(expected_grad, dict(zip(placeholders, inputs)))
                np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-5)


def test_shapes_computed_at_run_time_reshape_and_expand(backend):
    """torch's exports of x.view(n, 3, 2) with a dynamic batch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "zero_axis"], ["n1"]),
             helper.make_node("Concat", ["n1", "rest"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"]),
             helper.make_node("Reshape", ["x", "copy_first"], ["z"]),
             helper.make_node("Concat", ["n1", "ones"], ["wide"], axis=0),
             helper.make_node("Expand", ["bias", "wide"], ["b"]),
             helper.make_node("Add", ["z", "b"], ["out"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
             numpy_helper.from_array(np.array([3, 2], np.int64), "rest"),
             numpy_helper.from_array(np.array([0, -1], np.int64), "copy_first"),
             numpy_helper.from_array(np.array([6], np.int64), "ones"),
             numpy_helper.from_array(np.linspace(0, 1, 6).astype(np.float32).reshape(1, 6), "bias")]
    graph = helper.make_graph(nodes, "dynamic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    prog = tfl.onnx.load(model)
    assert prog.outputs["y"].shape == (None, 3, 2) and prog.outputs["out"].shape == (None, 6)
    for n in (1, 4):
        x = np.arange(n * 6, dtype=np.float32).reshape(n, 6)
        want = session.run(None, {"x": x})
        got = prog({"x": x})
        np.testing.assert_allclose(got["y"], want[0])
        np.testing.assert_allclose(got["out"], want[1])
    (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["y"]) + tfl.reduce_sum(prog.outputs["out"]),
                            [prog.variables[0]])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(grad, {prog.inputs["x"]: np.ones((4, 6), np.float32)}), np.full((1, 6), 4))


def test_sizes_static_next_to_a_dynamic_batch_are_known_when_the_graph_is_built(backend):
    """x[:, :t] with t = x.shape[1] of an input of shape (n, 5): the Slice's end is 5 even though n is unknown."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["t"], axis=0),
             helper.make_node("Unsqueeze", ["t", "zero_axis"], ["t1"]),
             helper.make_node("Slice", ["table", "zero_axis", "t1", "zero_axis"], ["rows"]),
             helper.make_node("Tile", ["x", "reps"], ["tiled"]),
             helper.make_node("Add", ["tiled", "rows"], ["y"])]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
             numpy_helper.from_array(np.array([1, 1], np.int64), "reps"),
             numpy_helper.from_array(np.arange(8, dtype=np.float32), "table")]
    graph = helper.make_graph(nodes, "positions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])], inits)
    prog = tfl.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert prog.outputs["y"].shape == (None, 5)
    x = np.ones((3, 5), np.float32)
    np.testing.assert_array_equal(prog({"x": x})["y"], x + np.arange(5))
