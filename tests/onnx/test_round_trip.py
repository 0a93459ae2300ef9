"""Export -> import -> run: for every op tinyflow can export, the imported graph gives the same values and the
same gradients as the original (registry-driven: the op cases of tests/op_cases.py, plus the ops without a
gradient below)."""
import numpy as np
import pytest

import tinyflow as tfl
from op_cases import VALUE_CASES, all_cases, case, normal, positive
from tinyflow.control_flow.sequences import Length
from tinyflow.jit.values import UndefinedValue
from tinyflow.onnx.storage_types import RoundToType
from tinyflow.ops.elementwise_ops import GRADIENTS

pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
from tinyflow.onnx.rules import EXPORTS  # noqa: E402

# ops without a gradient: op_cases.py's VALUE_CASES for the elementwise ones, the others here
EXTRA_CASES = {
    **VALUE_CASES,
    "StopGradient": [case(lambda a: tfl.stop_gradient(a) * a, normal(3))],
    "ZerosLike": [case(lambda a: tfl.zeros_like(a) + a, normal(2, 3))],
    "OnesLike": [case(lambda a: tfl.ones_like(a) * a, normal(2, 3))],
    "Shape": [case(lambda a: tfl.shape(a), normal(2, 3)), case(lambda a: tfl.shape(a, 1), normal(2, 3, 4))],
    "Size": [case(lambda a: tfl.size(a), normal(2, 3))],
    "Fill": [case(lambda a: tfl.fill(tfl.shape(a), 2.5), normal(2, 3))],
    "ArgMax": [case(lambda a: tfl.argmax(a, 1), normal(3, 4)), case(lambda a: tfl.argmax(a), normal(3, 4))],
    "ArgMin": [case(lambda a: tfl.argmin(a, 0, keepdims=True), normal(3, 4))],
    "TopKIndices": [case(lambda a: tfl.topk(a, 2)[1], normal(3, 5))],
    "Arange": [case(lambda a, b: tfl.ops.runtime_shapes.arange(a, b, np.float64(0.5)), np.float64(-1.0),
                    np.float64(2.2))],
    "Length": [case(lambda a: Length(a), normal(4, 2))],
    "RoundToType": [case(lambda a: RoundToType(a, 16) * 2.0, normal(3, 4).astype(np.float32))],
    "UndefinedValue": [case(lambda a: UndefinedValue((2, 3), "float64") + a, normal(2, 3))],
}
# ONNX describes inference: it has no stop-gradient, so the import differentiates through what was one
# and gradient ops (SigmoidGrad...) export as the ops of their expression, whose own gradients are not theirs
VALUES_ONLY = {"StopGradient", *GRADIENTS}
CASES = [(name, c) for name, c in all_cases() if name.rsplit("-", 1)[0] in EXPORTS] + \
    [(f"{op}-{i}", c) for op, cases in EXTRA_CASES.items() for i, c in enumerate(cases)]


def test_every_exportable_op_has_a_round_trip_case():
    covered = {name.rsplit("-", 1)[0] for name, _ in CASES}
    assert set(EXPORTS) <= covered, sorted(set(EXPORTS) - covered)


# cases whose op has an export rule that refuses these arguments, with the reason the rule gives
NOT_EXPORTABLE = {"Pad-3": "mode 'wrap' needs opset 19", "AvgPool-3": "opset 17's AveragePool has no dilations",
                  "StackToTensor-0": "the stack comes from TensorToStack (a gradient), and ONNX has no stacks"}


def round_trip(name, placeholders, out):
    """The imported program of the exported graph."""
    if name in NOT_EXPORTABLE:
        with pytest.raises(tfl.onnx.OnnxExportError):
            tfl.onnx.export_graph(placeholders, [out])
        pytest.xfail(f"not exportable: {NOT_EXPORTABLE[name]}")
    model = tfl.onnx.export_graph(placeholders, [out])
    with tfl.Graph().as_default():
        return tfl.onnx.load(model)


@pytest.mark.parametrize("name, op_case", CASES, ids=[n for n, _ in CASES])
def test_export_then_import_gives_the_same_values_and_gradients(name, op_case, backend):
    graph = tfl.get_default_graph()
    placeholders = [tfl.Placeholder(v.shape, v.dtype, name=f"in{i}") for i, v in enumerate(op_case.inputs)]
    out = op_case.build(*placeholders)
    prog = round_trip(name, placeholders, out)
    imported_graph = prog.graph
    feeds = dict(zip(placeholders, op_case.inputs))
    with tfl.Session(graph) as sess:
        expected = sess.run(out, feeds)
    (got,) = prog({p.name: v for p, v in zip(placeholders, op_case.inputs)}).values()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)
    differentiable = [i for i, v in enumerate(op_case.inputs) if v.dtype.kind == "f"]
    if out.dtype.kind != "f" or not differentiable or name.rsplit("-", 1)[0] in VALUES_ONLY:
        return
    weights = positive(*expected.shape)  # a loss whose gradient is not the same everywhere
    loss = tfl.reduce_sum(out * weights)
    grads = [g for g in tfl.gradients(loss, [placeholders[i] for i in differentiable])]
    with tfl.Session(graph) as sess:
        expected_grads = sess.run([g for g in grads if g is not None], feeds)
    with imported_graph.as_default():
        imported_inputs = [prog.inputs[placeholders[i].name] for i in differentiable]
        imported_loss = tfl.reduce_sum(prog.outputs[next(iter(prog.outputs))] * weights)
        imported_grads = tfl.gradients(imported_loss, imported_inputs)
        assert [g is None for g in imported_grads] == [g is None for g in grads]
        with tfl.Session(imported_graph) as sess:
            got_grads = sess.run([g for g in imported_grads if g is not None],
                                 {prog.inputs[p.name]: v for p, v in zip(placeholders, op_case.inputs)})
    for want, have in zip(expected_grads, got_grads):
        np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-12)
