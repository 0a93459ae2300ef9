"""ONNX LSTM, GRU and RNN imported onto tinyflow's cells: torch's exported models give torch's and onnxruntime's
outputs and torch's gradients, and fine-tune with Adam; hand-built nodes cover what torch does not export (ONNX's
GRU reset, reverse direction, layout 1, given initial states, sequence_lens); unsupported attributes are refused."""
import warnings

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.onnx import OnnxImportError

torch = pytest.importorskip("torch", reason="torch is needed to export the models (pip install torch)")
onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the outputs' reference (pip install onnxruntime)")
from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from onnx_model_builders import make_model  # noqa: E402

nn = torch.nn
RNG = np.random.default_rng(3)
MODELS = {  # name -> (torch layer, input shape)
    "lstm-2x128": (lambda: nn.LSTM(32, 128, num_layers=2, batch_first=True), (2, 10, 32)),
    "lstm-bidirectional": (lambda: nn.LSTM(6, 8, bidirectional=True), (5, 3, 6)),
    "gru-2-layers-bidirectional": (lambda: nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True),
                                   (3, 5, 6)),
    "rnn-relu-2-layers": (lambda: nn.RNN(6, 8, num_layers=2, nonlinearity="relu"), (5, 3, 6)),
    "rnn-tanh-bidirectional": (lambda: nn.RNN(6, 8, bidirectional=True), (5, 3, 6)),
}
ONNX_GATE_ORDER = {nn.LSTM: [0, 3, 1, 2], nn.GRU: [1, 0, 2], nn.RNN: [0]}  # torch's gate blocks in ONNX's order


class Outputs(nn.Module):
    """A torch recurrent layer returning output, h_n (and c_n) as a flat tuple."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        output, final = self.layer(x)
        return (output,) + (final if isinstance(final, tuple) else (final,))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """name -> (torch model, ONNX file, input batch), exported as the issue's user does."""
    folder, out = tmp_path_factory.mktemp("recurrent"), {}
    for name, (build, shape) in MODELS.items():
        torch.manual_seed(0)
        model, x = Outputs(build()).eval(), torch.randn(*shape)
        names = ["y", "h", "c"][:len(model(x))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), str(folder / f"{name}.onnx"), input_names=["x"], output_names=names,
                              dynamo=False, opset_version=17)
        out[name] = (model, folder / f"{name}.onnx", x)
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_exported_models_equal_torch_and_onnxruntime(exported, name, backend):
    model, path, x = exported[name]
    prog = tfl.onnx.load(path)
    assert {"LSTM", "GRU", "RNN"} & set(prog.op_counts)
    got = prog({"x": x.numpy()})
    runtime = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})
    for value, want, theirs in zip(got.values(), model(x), runtime):
        np.testing.assert_allclose(value, want.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(value, theirs, rtol=1e-5, atol=1e-6)


def onnx_layout(layer, arrays):
    """torch's per-layer arrays (parameters or their gradients, by name) as ONNX's W, R, B of each layer."""
    order = ONNX_GATE_ORDER[type(layer)]

    def blocks(array):
        return np.concatenate([np.split(array, len(order))[i] for i in order])

    suffixes = ["", "_reverse"][:2 if layer.bidirectional else 1]
    out = []
    for k in range(layer.num_layers):
        def stacked(*kinds):
            return np.stack([np.concatenate([blocks(arrays[f"{kind}_l{k}{s}"]) for kind in kinds]) for s in suffixes])
        out += [stacked("weight_ih"), stacked("weight_hh"), stacked("bias_ih", "bias_hh")]
    return out


@pytest.mark.parametrize("name", ["lstm-2x128", "gru-2-layers-bidirectional", "rnn-tanh-bidirectional"])
def test_gradients_of_the_imported_weights_equal_torch(exported, name, backend):
    model, path, x = exported[name]
    prog = tfl.onnx.load(path)
    projections = [RNG.standard_normal(node.shape).astype(np.float32) for node in prog.outputs.values()]
    loss = tfl.add_n([tfl.reduce_sum(node * p) for node, p in zip(prog.outputs.values(), projections)])
    grads = tfl.gradients(loss, prog.variables)
    with tfl.Session() as sess:
        got = sess.run(grads, {prog.inputs["x"]: x.numpy()})
    model.zero_grad()
    sum((t * torch.from_numpy(p)).sum() for t, p in zip(model(x), projections)).backward()
    layer = model.layer
    values = onnx_layout(layer, {n: p.detach().numpy() for n, p in layer.named_parameters()})
    expected = onnx_layout(layer, {n: p.grad.numpy() for n, p in layer.named_parameters()})
    assert len(prog.variables) == len(values)
    for variable, grad in zip(prog.variables, got):
        k = next(i for i, v in enumerate(values) if v.shape == variable.shape and np.array_equal(v, variable.value))
        np.testing.assert_allclose(grad, expected[k], rtol=1e-4, atol=1e-5, err_msg=variable.name)


def test_an_adam_step_on_the_imported_lstm_lowers_the_loss(exported):
    _, path, x = exported["lstm-2x128"]
    prog = tfl.onnx.load(path)
    y = prog.outputs["y"]
    target = RNG.standard_normal(y.shape).astype(np.float32)
    loss = tfl.reduce_mean(tfl.square(y - target))
    step = tfl.optim.Adam(lr=0.01).minimize(loss, var_list=prog.variables)
    feed = {prog.inputs["x"]: x.numpy()}
    with tfl.Session() as sess:
        before = sess.run(loss, feed)
        sess.run(step, feed)
        after = sess.run(loss, feed)
    assert after < before


def test_an_lstm_exported_with_a_dynamic_batch_runs_any_batch_size(tmp_path):
    torch.manual_seed(0)
    model = Outputs(nn.LSTM(6, 8, num_layers=2, batch_first=True)).eval()
    batch = {"x": {0: "batch"}, "y": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(3, 5, 6),), str(tmp_path / "lstm.onnx"), input_names=["x"],
                          output_names=["y", "h", "c"], dynamo=False, opset_version=17, dynamic_axes=batch)
    prog = tfl.onnx.load(tmp_path / "lstm.onnx")
    for size in (3, 7):
        x = torch.randn(size, 5, 6)
        for value, want in zip(prog({"x": x.numpy()}).values(), model(x)):
            np.testing.assert_allclose(value, want.detach().numpy(), rtol=1e-5, atol=1e-6)


T, N, I, H = 4, 2, 3, 5


def recurrent_model(op, directions=1, layout=0, bias=True, states=(), sequence_lens=None, peepholes=False, steps=T,
                    **attrs):
    """A model of one ONNX recurrent node named 'rnn_node'; states: the initial-state inputs it is given."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    state_shape = (N, directions, H) if layout else (directions, N, H)
    initializers = [("W", RNG.standard_normal((directions, gates * H, I)).astype(np.float32)),
                    ("R", RNG.standard_normal((directions, gates * H, H)).astype(np.float32) / 2)]
    if bias:
        initializers.append(("B", RNG.standard_normal((directions, 2 * gates * H)).astype(np.float32)))
    graph_inputs = [("x", TensorProto.FLOAT, (N, steps, I) if layout else (steps, N, I))]
    graph_inputs += [(s, TensorProto.FLOAT, state_shape) for s in states]
    if isinstance(sequence_lens, str):
        graph_inputs.append((sequence_lens, TensorProto.INT32, (N,)))
    elif sequence_lens is not None:
        initializers.append(("lens", np.asarray(sequence_lens, np.int32)))
        sequence_lens = "lens"
    if peepholes:
        initializers.append(("P", RNG.standard_normal((directions, 3 * H)).astype(np.float32)))
    names = ["x", "W", "R", "B" if bias else "", sequence_lens or "", *states, *([""] * (2 - len(states))),
             "P" if peepholes else ""]
    while not names[-1]:
        names.pop()
    outputs = ["y", "y_h", "y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, names, outputs, name="rnn_node", hidden_size=H, layout=layout,
                            direction={1: "forward", 2: "bidirectional"}[directions] if "direction" not in attrs
                            else attrs.pop("direction"), **attrs)
    return make_model([node], graph_inputs, [(o, TensorProto.FLOAT, None) for o in outputs], initializers)


HAND_BUILT = [
    pytest.param(dict(op="GRU", linear_before_reset=0, direction="reverse", states=("h0",)),
                 id="gru-onnx-reset-reverse"),
    pytest.param(dict(op="GRU", linear_before_reset=1, directions=2, bias=False), id="gru-bidirectional-no-bias"),
    pytest.param(dict(op="LSTM", directions=2, states=("h0", "c0"), sequence_lens=[T] * N), id="lstm-full-lengths"),
    pytest.param(dict(op="LSTM", layout=1, states=("h0", "c0")), id="lstm-layout-1"),
    pytest.param(dict(op="RNN", layout=1, directions=2, activations=["Tanh", "Tanh"]), id="rnn-layout-1"),
    pytest.param(dict(op="RNN", direction="reverse", activations=["Relu"], states=("h0",)), id="rnn-relu-reverse"),
]


@pytest.mark.parametrize("spec", HAND_BUILT)
def test_hand_built_nodes_equal_the_onnx_references(spec, backend):
    model = recurrent_model(**spec)
    feeds = {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    # onnxruntime runs layout 0 only; onnx's reference evaluator covers layout 1
    reference = ReferenceEvaluator(model) if spec.get("layout") else ort.InferenceSession(model.SerializeToString())
    expected = reference.run(None, feeds)
    got = tfl.onnx.load(model)(feeds)
    for value, want in zip(got.values(), expected):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5)


def test_onnx_gru_with_linear_before_reset_0_is_one_loop_op_per_direction_and_fine_tunes():
    """ONNX's default GRU (r before W_hn's product) runs as one Recurrence op per direction, as torch's GRU does,
    equal to onnxruntime; its gradients reach W, R and B (an Adam step lowers the loss)."""
    model = recurrent_model(op="GRU", linear_before_reset=0, directions=2, states=("h0",))
    feeds = {i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    with tfl.Graph().as_default() as graph:
        prog = tfl.onnx.load(model)
        loops = [n for n in graph.nodes if n.op_type == "Recurrence"]
        assert [n.cell for n in loops] == ["GRU_RESET_FIRST"] * 2
        assert not [n for n in graph.nodes if n.op_type in ("Sigmoid", "Tanh")]  # no step written with ops
        expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
        for value, want in zip(prog(feeds).values(), expected):
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5)
        loss = tfl.reduce_mean(prog.outputs["y"] * prog.outputs["y"])
        train = tfl.optim.Adam(0.01).minimize(loss, var_list=prog.variables)
        with tfl.Session(graph) as sess:
            feed = {prog.inputs[name]: value for name, value in feeds.items()}
            before = sess.run(loss, feed)
            for _ in range(5):
                sess.run(train, feed)
            assert sess.run(loss, feed) < before


REFUSED = [
    pytest.param(dict(op="LSTM", activations=["Sigmoid", "Tanh", "Relu"]), "activations", id="lstm-activations"),
    pytest.param(dict(op="RNN", activations=["Sigmoid"]), "activations", id="rnn-sigmoid"),
    pytest.param(dict(op="GRU", clip=5.0), "clip", id="clip"),
    pytest.param(dict(op="LSTM", input_forget=1), "input_forget", id="input-forget"),
    pytest.param(dict(op="RNN", activations=["Tanh"], activation_alpha=[0.5]), "activation_alpha", id="alpha"),
    pytest.param(dict(op="LSTM", peepholes=True), "peephole", id="peepholes"),
    pytest.param(dict(op="GRU", sequence_lens=[T, T - 1]), r"sequence_lens \[4, 3\]", id="shorter-sequences"),
    pytest.param(dict(op="GRU", sequence_lens="lengths"), "sequence_lens computed at run time", id="runtime-lengths"),
    pytest.param(dict(op="LSTM", layout=1, steps=None), r"\(2, None, 3\) has no fixed sequence length",
                 id="dynamic-time"),
]


@pytest.mark.parametrize("spec, what", REFUSED)
def test_unsupported_recurrent_attributes_are_refused_naming_node_and_attribute(spec, what):
    with pytest.raises(OnnxImportError, match=f"rnn_node.*{what}"):
        tfl.onnx.load(recurrent_model(**spec))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_exported_recurrent_layer_runs_in_onnxruntime_as_in_tinyflow(kind, tmp_path):
    """The fused cell ops export as the ONNX nodes of their formulas."""
    layer = getattr(tfl.nn, kind)(4, 3, num_layers=2, batch_first=True, bidirectional=True)
    x = tfl.Placeholder((2, 5, 4))
    output = layer(x)[0]
    tfl.onnx.export_graph(x, output, str(tmp_path / "layer.onnx"))
    value = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    with tfl.Session() as sess:
        expected = sess.run(output, {x: value})
    got = ort.InferenceSession(str(tmp_path / "layer.onnx")).run(None, {x.name: value})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
