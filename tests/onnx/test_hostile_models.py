"""Hostile ONNX files: tiny models that ask for huge tensors, damaged names, crafted sizes and external data.

Each is refused with an OnnxImportError naming the place (or, for a big but possible tensor, imported
without computing it), never a raw Python error and never an import that allocates without bound.
"""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.onnx import importer

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from test_bad_models import load_fails, save_external, small_model  # noqa: E402

BACKEND_INDEPENDENT = True  # nothing here runs a kernel except the small folding checks on numpy
OnnxImportError = tfl.onnx.OnnxImportError


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def one_node(op_type, inputs, initializers, opset=17, **attrs):
    """A model whose only node `op_type` reads initializers (values known at import) and gives 'y'."""
    node = helper.make_node(op_type, inputs, ["y"], name="greedy", **attrs)
    graph = helper.make_graph([node], "hostile", [], [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
                              initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# each asks for 100000 x 100000 int64 values (80 GB) from a model of about 150 bytes
HUGE = {
    "ConstantOfShape": one_node("ConstantOfShape", ["shape"], [ints("shape", [100000, 100000])],
                                value=numpy_helper.from_array(np.array([7], np.int64), "value")),
    "Tile": one_node("Tile", ["x", "repeats"], [ints("x", [[1]]), ints("repeats", [100000, 100000])]),
    "Expand": one_node("Expand", ["x", "shape"], [ints("x", [1]), ints("shape", [100000, 100000])]),
    "Range": one_node("Range", ["start", "limit", "delta"], [ints("start", 0), ints("limit", 10 ** 10),
                                                               ints("delta", 1)]),
}


@pytest.mark.parametrize("op_type", sorted(HUGE))
def test_a_huge_constant_is_left_to_run_time_instead_of_folded_at_import(op_type):
    graph = tfl.Graph()
    prog = tfl.onnx.load(HUGE[op_type], graph=graph)  # without the cap: tens of GiB, or a MemoryError
    y = prog.outputs["y"]
    assert not isinstance(y, tfl.Constant) and y.op_type != "Constant"
    assert y.shape in ((100000, 100000), (10 ** 10,))


def test_folding_stops_at_its_budget_and_the_rest_computes_the_same_at_run_time(monkeypatch):
    model = one_node("ConstantOfShape", ["shape"], [ints("shape", [4, 8])],
                     value=numpy_helper.from_array(np.array([7], np.int64), "value"))
    folded = tfl.onnx.load(model, graph=tfl.Graph())
    assert isinstance(folded.outputs["y"], tfl.Constant)
    monkeypatch.setattr(importer, "FOLD_BYTES", 4 * 8 * 8 - 1)  # one byte short of the 4 x 8 int64 values
    deferred = tfl.onnx.load(model, graph=tfl.Graph())
    assert deferred.outputs["y"].op_type == "Fill"
    np.testing.assert_array_equal(deferred({})["y"], np.full((4, 8), 7, np.int64))
    np.testing.assert_array_equal(folded({})["y"], deferred({})["y"])


@pytest.mark.parametrize("op_type, inputs, initializers", [
    ("ConstantOfShape", ["shape"], [ints("shape", [2 ** 40, 2 ** 40])]),
    ("Tile", ["x", "repeats"], [ints("x", [[1]]), ints("repeats", [2 ** 31, 2 ** 31])]),
    ("Expand", ["x", "shape"], [ints("x", [1]), ints("shape", [2 ** 62, 4])]),
    ("Range", ["start", "limit", "delta"], [ints("start", 0), ints("limit", 2 ** 62), ints("delta", 1)]),
])
def test_an_absurd_size_is_refused_naming_the_node(op_type, inputs, initializers):
    load_fails(one_node(op_type, inputs, initializers), rf"{op_type} node 'greedy' .*more than the .* tinyflow "
                                                        "accepts for one tensor")


def test_a_graph_input_declared_absurdly_big_or_negative_is_refused():
    huge = small_model(inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [2 ** 50, 3])])
    load_fails(huge, r"the graph input 'x' has the shape \(1125899906842624, 3\).*more than")
    negative = small_model(inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", -3])])
    load_fails(negative, r"the graph input 'x' has the shape \(None, -3\), with a negative dimension")


def test_a_vector_of_more_sizes_than_any_rank_is_an_error_not_a_huge_list():
    model = helper.make_model(helper.make_graph(
        [helper.make_node("ConstantOfShape", ["dims"], ["y"], name="fill")], "long",
        [helper.make_tensor_value_info("dims", TensorProto.INT64, [10 ** 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), opset_imports=[helper.make_opsetid("", 17)])
    load_fails(model, r"ConstantOfShape node 'fill'.*holds 1000000000 sizes; no array has more than 64 dimensions")


def test_split_with_a_num_outputs_other_than_its_outputs_is_refused():
    node = helper.make_node("Split", ["x"], ["a", "b"], name="halves", axis=0, num_outputs=2 ** 40)
    model = helper.make_model(helper.make_graph(
        [node], "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "ab"]),
        opset_imports=[helper.make_opsetid("", 18)])
    load_fails(model, r"Split node 'halves' .*num_outputs is 1099511627776, but it has 2 outputs")


# ---------------------------------------------------------------- damaged names and tensors
def _strings_of(model):
    names = {model.graph.name}
    for node in model.graph.node:
        names |= {node.name, node.op_type, *node.input, *node.output}
    names |= {v.name for v in list(model.graph.input) + list(model.graph.output) + list(model.graph.initializer)}
    return sorted(n for n in names if n)


@pytest.mark.parametrize("as_proto", [False, True])
def test_a_name_that_is_not_utf8_is_refused_naming_the_field(as_proto):
    data = small_model().SerializeToString()
    for name in _strings_of(small_model()):
        damaged = bytearray(data)
        damaged[data.index(name.encode())] = 0xFF  # the first byte of the name's first occurrence
        source = bytes(damaged)
        if as_proto:  # onnx.load keeps the damage: the importer sees it as a ModelProto
            source = onnx.ModelProto()
            source.ParseFromString(bytes(damaged))
        load_fails(source, r"is damaged: its text field model\.\S+ holds b'\\xff.*which is not UTF-8")


def test_initializers_with_negative_dims_are_refused():
    for dims in ([-1, 3], [-2], [3, -1]):
        tensor = numpy_helper.from_array(np.ones((3, 2), np.float32), "W")
        del tensor.dims[:]
        tensor.dims.extend(dims)
        bias = numpy_helper.from_array(np.zeros(2, np.float32), "b")
        load_fails(small_model(initializers=[tensor, bias]),
                   rf"the initializer 'W' has the shape \({', '.join(map(str, dims))},?\), with a negative dimension")


def test_duplicate_or_unnamed_graph_inputs_and_initializers_are_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    load_fails(small_model(inputs=[x, x]), "has two inputs named 'x'")
    w = numpy_helper.from_array(np.ones((3, 2), np.float32), "W")
    b = numpy_helper.from_array(np.zeros(2, np.float32), "b")
    load_fails(small_model(initializers=[w, b, w]), "has two initializers named 'W'")
    load_fails(small_model(inputs=[x, helper.make_tensor_value_info("", TensorProto.FLOAT, [1])]),
               "has an input without a name")
    w_as_input = helper.make_tensor_value_info("W", TensorProto.FLOAT, [3, 2])
    tfl.onnx.load(small_model(inputs=[x, w_as_input]), graph=tfl.Graph())  # an initializer listed as input: fine


def _external(tmp_path, dims=None, location=None):
    """The small model with W stored externally, its dims or location then rewritten in the model file."""
    path = save_external(tmp_path, location)
    model = onnx.load(str(path), load_external_data=False)
    if dims is not None:
        del model.graph.initializer[0].dims[:]
        model.graph.initializer[0].dims.extend(dims)
    onnx.save_model(model, str(path))
    return path


def test_external_data_with_crafted_dims_or_location_is_refused(tmp_path):
    load_fails(_external(tmp_path, dims=[-3, -2]), r"the initializer 'W' has the shape \(-3, -2\), with a negative")
    load_fails(_external(tmp_path, dims=[-1, 6]), "with a negative dimension")
    # 2**32 * 2**32 elements: int64 arithmetic wraps to 0 bytes, which an empty file would hold
    load_fails(_external(tmp_path, dims=[2 ** 32, 2 ** 32]), r"has the shape \(4294967296, 4294967296\).*more than")
    load_fails(_external(tmp_path, location="weights.bin\0.txt"), "holds a NUL character")


def test_an_ir_version_beyond_the_checkers_range_is_not_a_raw_error():
    for version in (2 ** 62, -5):
        model = small_model()
        model.ir_version = version
        tfl.onnx.load(model, graph=tfl.Graph())
