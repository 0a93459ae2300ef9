"""ONNX If and Loop, both ways: imported as tfl.cond / tfl.while_loop (scan outputs as recorded values),
exported from converted Python control flow (early exits, lists collected in tensor loops), checked against
onnxruntime, and differentiated."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is needed (pip install onnxruntime)")
from onnx import TensorProto, helper  # noqa: E402
from onnx_model_builders import if_model, make_model  # noqa: E402


def onnxruntime_run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_if_reads_outer_values_and_differentiates(backend):
    model = if_model()
    prog = tfl.onnx.load(model)
    assert "Cond" in {n.op_type for n in prog.graph.nodes}
    x = np.float32([4, 5, 6])
    for x0 in (np.array(1, np.float32), np.array(-1, np.float32)):
        feeds = {"x0": x0, "x": x}
        np.testing.assert_allclose(prog(feeds, backend=backend)["y"], onnxruntime_run(model, feeds)[0])
    (grad,) = tfl.gradients(tfl.reduce_sum(prog.outputs["y"]), [prog.graph.get_node("w")])
    with tfl.Session(backend=backend) as sess:
        np.testing.assert_allclose(sess.run(grad, {prog.inputs["x0"]: 1.0, prog.inputs["x"]: x}), x)
        np.testing.assert_allclose(sess.run(grad, {prog.inputs["x0"]: -1.0, prog.inputs["x"]: x}), [-1, -1, -1])


def test_an_if_on_a_condition_known_at_import_time_keeps_one_branch():
    branch = lambda op: helper.make_graph(  # noqa: E731
        [helper.make_node(op, ["x", "x"], ["out"])], op, [], [helper.make_tensor_value_info("out", 1, None)])
    nodes = [helper.make_node("If", ["flag"], ["y"], name="choose", then_branch=branch("Mul"),
                              else_branch=branch("Add"))]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])],
                       [("flag", np.array([False]))])
    prog = tfl.onnx.load(model)
    assert "Cond" not in {n.op_type for n in prog.graph.nodes}
    np.testing.assert_allclose(prog({"x": np.float32([1, 3])})["y"], [2, 6])


def loop_model():
    """h <- tanh(h * w + x[i]) for i < M while sum(h) < limit; scan outputs h and i·h."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("Mul", ["h", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "row"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_next"]),
         helper.make_node("ReduceSum", ["h_next"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["going"]),
         helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["h_next", "i_float"], ["weighted"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("going", TensorProto.BOOL), ("h_next", TensorProto.FLOAT), ("h_next", TensorProto.FLOAT),
          ("weighted", TensorProto.FLOAT))])
    nodes = [helper.make_node("Loop", ["M", "start", "h0"], ["h", "hs", "weighted"], name="rnn", body=body)]
    return make_model(nodes, [("x", TensorProto.FLOAT, [None, 3]), ("M", TensorProto.INT64, []),
                              ("h0", TensorProto.FLOAT, [3])],
                      [("h", TensorProto.FLOAT, [3]), ("hs", TensorProto.FLOAT, [None, 3]),
                       ("weighted", TensorProto.FLOAT, [None, 3])],
                      [("w", np.float32([0.5, -1.0, 2.0])), ("limit", np.float32(1.5)), ("start", np.array(True))])


@pytest.mark.parametrize("trips, scale", [(0, 1.0), (1, 1.0), (4, 0.3), (6, 2.0)])
def test_loop_with_scan_outputs_equals_onnxruntime_and_differentiates(trips, scale, backend):
    model = loop_model()
    rng = np.random.default_rng(trips)
    feeds = {"x": (rng.standard_normal((6, 3)) * scale).astype(np.float32), "M": np.array(trips, np.int64),
             "h0": np.float32([0.1, -0.2, 0.3])}
    prog = tfl.onnx.load(model)
    got = prog(feeds, backend=backend)
    for name, want in zip(["h", "hs", "weighted"], onnxruntime_run(model, feeds)):
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)
    # gradients through the loop (no bound known when the graph is built) against central differences
    w = prog.graph.get_node("w")
    loss = tfl.reduce_sum(prog.outputs["h"]) + tfl.reduce_sum(prog.outputs["weighted"] * 0.5)
    (grad,) = tfl.gradients(loss, [w])
    with tfl.Session(backend=backend) as sess:
        fed = prog.feed_dict(feeds)
        analytic = sess.run(grad, fed)
        numeric = np.zeros(3)
        for k in range(3):
            values = []
            for delta in (1e-3, -1e-3):
                shifted = np.float32([0.5, -1.0, 2.0])
                shifted[k] += delta
                values.append(sess.run(loss, {**fed, w: shifted}))
            numeric[k] = (values[0] - values[1]) / 2e-3
    np.testing.assert_allclose(analytic, numeric, rtol=2e-2, atol=2e-3)


def collect_until(x):
    """A tensor for-loop with `break` and a list it appends to, then an early `return` (issue 22's forms)."""
    total = x[0] * 0.0
    kept = []
    for row in x:
        total = total + tfl.tanh(row) + 0.5
        kept.append(total * 2.0)
        if tfl.reduce_sum(total) > 4.0:
            break
    stacked = tfl.stack(kept)
    if tfl.reduce_max(stacked) > 6.0:
        return stacked * 0.0 - 1.0
    return stacked


def test_converted_loops_with_lists_break_and_return_export_as_loop_scan_outputs_and_if(tmp_path):
    spec = InputSpec([None, 3], "float32", "x")
    path = tmp_path / "collect.onnx"
    model = tfl.onnx.export(collect_until, path, input_spec=[spec])
    onnx.checker.check_model(model)
    loops = [n for n in model.graph.node if n.op_type == "Loop"]
    assert loops and any(len(n.output) > len(n.input) - 2 for n in loops)  # a scan output
    assert "If" in {n.op_type for n in model.graph.node}
    f = tfl.jit.to_static(collect_until, input_spec=[spec])
    rng = np.random.default_rng(7)
    cases = [rng.standard_normal((n, 3)).astype(np.float32) * s for n, s in ((1, 1.0), (5, 0.2), (8, 1.0), (3, 9.0))]
    name = model.graph.input[0].name
    for x in cases:  # one row, all rows, a break part way, the early return
        (want,) = onnxruntime_run(model, {name: x})
        np.testing.assert_allclose(want, np.asarray(f(x)), rtol=1e-5, atol=1e-6)
        with tfl.Graph().as_default():
            np.testing.assert_allclose(tfl.onnx.run(model, {name: x})["output"], want, rtol=1e-5, atol=1e-6)


def test_a_loop_iteration_count_exports_as_a_carried_value(tmp_path):
    x = tfl.Placeholder((), "float32", name="x")
    final = tfl.while_loop(lambda v: v < 100.0, lambda v: v * 2.0 + 1.0, [x])[0]
    loop = final.inputs[0]
    count = loop.output(loop.iterations_index, name="count")
    model = tfl.onnx.export_graph([x], [final, count])
    for start in (200.0, 1.0, -0.5):
        feeds = {"x": np.array(start, np.float32)}
        want = onnxruntime_run(model, feeds)
        with tfl.Session() as sess:
            got = sess.run([final, count], {x: start})
        np.testing.assert_allclose(got[0], want[0])
        assert int(got[1]) == int(want[1])
