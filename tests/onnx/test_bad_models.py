"""Bad ONNX models: each is a clear OnnxImportError, never a raw protobuf or numpy error, and nothing is read
outside the model's folder."""
import os

import numpy as np
import pytest

import tinyflow as tfl

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OnnxImportError = tfl.onnx.OnnxImportError


def small_model(opset=17, nodes=None, inputs=None, outputs=None, initializers=None):
    """y = x @ W + b: a model to break in various ways."""
    nodes = nodes if nodes is not None else [helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
                                             helper.make_node("Add", ["h", "b"], ["y"], name="add")]
    inputs = inputs if inputs is not None else [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])]
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])]
    if initializers is None:
        initializers = [numpy_helper.from_array(np.ones((3, 2), np.float32), "W"),
                        numpy_helper.from_array(np.zeros(2, np.float32), "b")]
    graph = helper.make_graph(nodes, "small", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def load_fails(source, pattern):
    graph = tfl.Graph()
    with pytest.raises(OnnxImportError, match=pattern) as err:
        tfl.onnx.load(source, graph=graph)
    assert not graph.nodes  # refused before anything was built
    return err.value


def test_the_small_model_itself_loads():
    prog = tfl.onnx.load(small_model())
    assert prog({"x": np.ones((2, 3), np.float32)})["y"].tolist() == [[3, 3], [3, 3]]


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.99])
def test_truncated_files(tmp_path, cut):
    data = small_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:int(len(data) * cut)])
    load_fails(path, r"truncated|corrupted|produces|no graph|reads")


def test_corrupted_empty_and_unrelated_files(tmp_path):
    rng = np.random.default_rng(0)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())
    load_fails(garbage, "is not an ONNX model")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    load_fails(empty, "holds no graph")
    text = tmp_path / "notes.onnx"
    text.write_text("these are my notes, not a model\n" * 20)
    load_fails(text, "is not an ONNX model")
    flipped = bytearray(small_model().SerializeToString())
    flipped[10:40] = b"\xff" * 30
    load_fails(bytes(flipped), "not an ONNX model|truncated|corrupted|reads|produces|not valid")
    load_fails(tmp_path / "missing.onnx", "no such ONNX model file")
    load_fails(tmp_path, "is not a file")
    load_fails(42, "takes a file path, the file's bytes or an onnx.ModelProto, got int")


def test_unknown_opsets_and_domains():
    err = load_fails(small_model(opset=99), r"opset 99, which this onnx package .* does not know")
    assert err.unsupported
    model = small_model()
    del model.opset_import[:]
    load_fails(model, "imports no opset of the default ONNX domain")
    custom = small_model(nodes=[helper.make_node("FusedMatMul", ["x", "W"], ["y"], name="fused",
                                                 domain="com.microsoft")])
    custom.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    load_fails(custom, "FusedMatMul node 'fused' belongs to the operator domain 'com.microsoft'")


def test_dangling_inputs_duplicates_and_missing_outputs():
    dangling = small_model(nodes=[helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
                                  helper.make_node("Add", ["h", "bias"], ["y"], name="add")])
    load_fails(dangling, "Add node 'add' reads 'bias', which is not a graph input, an initializer or the output")
    twice = small_model(nodes=[helper.make_node("MatMul", ["x", "W"], ["y"], name="one"),
                               helper.make_node("Relu", ["x"], ["y"], name="two")])
    load_fails(twice, "the value 'y' is produced twice")
    no_output = small_model(outputs=[helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    load_fails(no_output, "declares the output 'z', but nothing produces it")


def test_cycles_are_named_and_unsorted_graphs_load():
    cycle = small_model(nodes=[helper.make_node("Add", ["x", "c"], ["a"], name="first"),
                               helper.make_node("Relu", ["a"], ["c"], name="second"),
                               helper.make_node("Identity", ["a"], ["y"], name="out")],
                        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], initializers=[])
    load_fails(cycle, r"has a cycle: Add node 'first', Relu node 'second'")
    model = small_model()
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(reversed(nodes))  # valid once sorted: the import sorts it
    np.testing.assert_array_equal(tfl.onnx.load(model)({"x": np.ones((1, 3), np.float32)})["y"], [[3, 3]])


def test_shapes_that_contradict_the_inputs():
    wrong_weight = small_model(initializers=[numpy_helper.from_array(np.ones((4, 2), np.float32), "W"),
                                             numpy_helper.from_array(np.zeros(2, np.float32), "b")])
    load_fails(wrong_weight, r"MatMul node 'matmul' \(opset 17\): tinyflow cannot build it: .*inner dimensions")
    wrong_output = small_model(outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])])
    load_fails(wrong_output, r"declares its output 'y' with shape \(None, 5\), but its inputs give shape \(None, 2\)")
    wrong_type = small_model(outputs=[helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["n", 2])])
    load_fails(wrong_type, "declares its output 'y' as float64, but tinyflow computes float32")
    bad_reshape = small_model(nodes=[helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
                              inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializers=[numpy_helper.from_array(np.array([4, 2], np.int64), "shape")])
    load_fails(bad_reshape, r"Reshape node 'reshape'.*cannot reshape \(2, 3\)")
    prog = tfl.onnx.load(small_model())
    with pytest.raises(tfl.FeedError):
        prog({"x": np.ones((2, 4), np.float32)})
    with pytest.raises(tfl.FeedError, match="'z' is not an input of the model"):
        prog({"z": np.ones((2, 3), np.float32)})
    with pytest.raises(tfl.FeedError, match="no value for the model input"):
        prog({})


def test_malformed_tensors_and_nodes():
    short = numpy_helper.from_array(np.ones((3, 2), np.float32), "W")
    short.raw_data = short.raw_data[:8]
    load_fails(small_model(initializers=[short, numpy_helper.from_array(np.zeros(2, np.float32), "b")]),
               "the initializer 'W' is malformed")
    one_input = small_model(nodes=[helper.make_node("Add", ["x"], ["y"], name="lonely")])
    err = load_fails(one_input, "Add node 'lonely' is not valid ONNX .*input size 1")
    assert not err.unsupported
    strings = small_model(inputs=[helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                          nodes=[helper.make_node("Identity", ["x"], ["y"], name="same")])
    assert load_fails(strings, "element type STRING").unsupported


# ---------------------------------------------------------------- external data
def save_external(tmp_path, location=None):
    """The small model with W in an external file; `location` rewritten afterwards if given."""
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    model = small_model()
    onnx.save_model(model, str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    if location is not None:
        model = onnx.load(str(folder / "m.onnx"), load_external_data=False)
        for tensor in model.graph.initializer:
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = location
        onnx.save_model(model, str(folder / "m.onnx"))
    return folder / "m.onnx"


def test_external_data_inside_the_folder_loads(tmp_path):
    path = save_external(tmp_path)
    prog = tfl.onnx.load(path)
    np.testing.assert_array_equal(prog({"x": np.ones((1, 3), np.float32)})["y"], [[3, 3]])
    load_fails(path.read_bytes(), "stored in the external file 'weights.bin'; load the model from its path")


def test_external_data_that_escapes_the_folder_is_refused(tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.ones(6, np.float32).tobytes() + np.zeros(2, np.float32).tobytes())
    load_fails(save_external(tmp_path, str(secret)), "is absolute")
    load_fails(save_external(tmp_path, "../secret.bin"), r"leaves the model's folder \('\.\.'\)")
    load_fails(save_external(tmp_path, "sub/../../secret.bin"), r"leaves the model's folder")
    path = save_external(tmp_path, "link.bin")
    os.symlink(secret, path.parent / "link.bin")
    load_fails(path, "outside the model's folder .*symbolic link")
    load_fails(save_external(tmp_path, "nowhere.bin"), "is missing")


def test_external_data_of_the_wrong_size(tmp_path):
    path = save_external(tmp_path)
    weights = path.parent / "weights.bin"
    weights.write_bytes(weights.read_bytes()[:10])
    load_fails(path, "does not hold .* bytes at offset")
