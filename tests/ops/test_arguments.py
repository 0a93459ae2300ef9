"""Every op checks its non-tensor arguments when it is built: a bad one is an ArgumentError naming the op.

The message names the op type, the node name, the argument and its value, and says how to fix it.
"""
import numpy as np
import pytest

import tinyflow as tfl



def x4():
    return tfl.Placeholder((2, 3, 8, 8), name="x")


def x2():
    return tfl.Placeholder((2, 3), name="x")


# (build(name) -> node, op type, argument, the repr of the bad value as it appears in the message)
BAD = [
    (lambda n: tfl.transpose(x2(), (0, 2), name=n), "Transpose", "axes", "(0, 2)"),
    (lambda n: tfl.transpose(x2(), (1, 1), name=n), "Transpose", "axes", "(1, 1)"),
    (lambda n: tfl.transpose(x2(), (0, -2), name=n), "Transpose", "axes", "(0, -2)"),
    (lambda n: tfl.transpose(x2(), (0,), name=n), "Transpose", "axes", "(0,)"),
    (lambda n: tfl.transpose(x2(), (0.0, 1), name=n), "Transpose", "axes", "(0.0, 1)"),
    (lambda n: tfl.transpose(x2(), 1, name=n), "Transpose", "axes", "1"),
    (lambda n: tfl.reduce_sum(x2(), axis=1.0, name=n), "ReduceSum", "axis", "1.0"),
    (lambda n: tfl.reduce_mean(x2(), axis=(0, 0), name=n), "ReduceMean", "axis", "(0, 0)"),
    (lambda n: tfl.reduce_max(x2(), axis=True, name=n), "ReduceMax", "axis", "True"),
    (lambda n: tfl.reduce_sum(x2(), axis=-3, name=n), "ReduceSum", "axis", "-3"),
    (lambda n: tfl.reduce_sum(x2(), keepdims="yes", name=n), "ReduceSum", "keepdims", "'yes'"),
    (lambda n: tfl.reduce_sum(tfl.Placeholder(None), axis=0, name=n), "ReduceSum", "axis", "0"),
    (lambda n: tfl.argmax(x2(), axis=2, name=n), "ArgMax", "axis", "2"),
    (lambda n: tfl.argmax(x2(), axis="0", name=n), "ArgMax", "axis", "'0'"),
    (lambda n: tfl.softmax(x2(), axis=5, name=n), "Softmax", "axis", "5"),
    (lambda n: tfl.log_softmax(x2(), axis=0.5, name=n), "LogSoftmax", "axis", "0.5"),
    (lambda n: tfl.concat([x2(), x2()], axis=2, name=n), "Concat", "axis", "2"),
    (lambda n: tfl.concat([x2(), x2()], axis=None, name=n), "Concat", "axis", "None"),
    (lambda n: tfl.concat([], axis=0, name=n), "Concat", "xs", "[]"),
    (lambda n: tfl.concat(x2(), axis=0, name=n), "Concat", "xs", "<Placeholder"),
    (lambda n: tfl.add_n([], name=n), "AddN", "xs", "[]"),
    (lambda n: tfl.reshape(x2(), (2, 1.5), name=n), "Reshape", "shape", "(2, 1.5)"),
    (lambda n: tfl.reshape(x2(), (-1, -1), name=n), "Reshape", "shape", "(-1, -1)"),
    (lambda n: tfl.reshape(x2(), (-2, 3), name=n), "Reshape", "shape", "(-2, 3)"),
    (lambda n: tfl.reshape(x2(), "6", name=n), "Reshape", "shape", "'6'"),
    (lambda n: tfl.leaky_relu(x2(), alpha="0.1", name=n), "LeakyRelu", "alpha", "'0.1'"),
    (lambda n: tfl.leaky_relu(x2(), alpha=float("nan"), name=n), "LeakyRelu", "alpha", "nan"),
    (lambda n: tfl.cast(x2(), "banana", name=n), "Cast", "dtype", "'banana'"),
    (lambda n: tfl.cast(x2(), "complex64", name=n), "Cast", "dtype", "'complex64'"),
    (lambda n: tfl.cast(x2(), None, name=n), "Cast", "dtype", "None"),
    (lambda n: tfl.cast(x2(), object, name=n), "Cast", "dtype", "<class 'object'>"),
    (lambda n: tfl.max_pool2d(x4(), 2.0, name=n), "MaxPool", "kernel_size", "2.0"),
    (lambda n: tfl.max_pool2d(x4(), 0, name=n), "MaxPool", "kernel_size", "0"),
    (lambda n: tfl.max_pool2d(x4(), -2, name=n), "MaxPool", "kernel_size", "-2"),
    (lambda n: tfl.max_pool2d(x4(), True, name=n), "MaxPool", "kernel_size", "True"),
    (lambda n: tfl.max_pool2d(x4(), (2, 2, 2), name=n), "MaxPool", "kernel_size", "(2, 2, 2)"),
    (lambda n: tfl.max_pool2d(x4(), 2, stride=0, name=n), "MaxPool", "stride", "0"),
    (lambda n: tfl.avg_pool2d(x4(), 2, stride=1.5, name=n), "AvgPool", "stride", "1.5"),
    (lambda n: tfl.avg_pool2d(x4(), 2, padding=-1, name=n), "AvgPool", "padding", "-1"),
    (lambda n: tfl.avg_pool2d(x4(), 2, padding=2, name=n), "AvgPool", "padding", "2"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), stride=0, name=n), "Conv", "stride", "0"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), stride=(1, 1.0), name=n), "Conv", "stride",
     "(1, 1.0)"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), padding=False, name=n), "Conv", "padding", "False"),
    (lambda n: tfl.max_pool2d(x4(), 2, dilation=0, name=n), "MaxPool", "dilation", "0"),
    (lambda n: tfl.max_pool2d(x4(), 2, ceil_mode=1, name=n), "MaxPool", "ceil_mode", "1"),
    (lambda n: tfl.max_pool2d(x4(), 2, padding="full", name=n), "MaxPool", "padding", "'full'"),
    (lambda n: tfl.max_pool2d(x4(), 2, padding="same", ceil_mode=True, name=n), "MaxPool", "ceil_mode", "True"),
    (lambda n: tfl.avg_pool2d(x4(), 2, count_include_pad="yes", name=n), "AvgPool", "count_include_pad", "'yes'"),
    (lambda n: tfl.avg_pool2d(x4(), 2, padding=((1, 2), (0, 0)), name=n), "AvgPool", "padding", "((1, 2), (0, 0))"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), padding=((1, -1), 0), name=n), "Conv", "padding",
     "((1, -1), 0)"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), padding=(1, 2, 3), name=n), "Conv", "padding", "(1, 2, 3)"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), dilation=(1, 0), name=n), "Conv", "dilation", "(1, 0)"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), groups=0, name=n), "Conv", "groups", "0"),
    (lambda n: tfl.conv2d(x4(), np.zeros((4, 3, 3)), name=n), "Conv", "w", "'a filter of rank 3'"),
    (lambda n: tfl.conv_transpose2d(x4(), np.zeros((3, 4, 3, 3)), stride=2, output_padding=2, name=n),
     "ConvTranspose", "output_padding", "2"),
    (lambda n: tfl.conv_transpose2d(x4(), np.zeros((3, 4, 3, 3)), padding="same", name=n), "ConvTranspose",
     "padding", "'same'"),
    (lambda n: tfl.dropout(x2(), rate=1.0, name=n), "DropoutMask", "rate", "1.0"),
    (lambda n: tfl.dropout(x2(), rate=-0.1, name=n), "DropoutMask", "rate", "-0.1"),
    (lambda n: tfl.dropout(x2(), rate=0.5, training="no", name=n), "DropoutMask", "training", "'no'"),
    (lambda n: tfl.dropout(x2(), rate=0.5, seed=1.5, name=n), "DropoutMask", "seed", "1.5"),
    (lambda n: tfl.assign(x2(), 1.0, name=n), "Assign", "var", "<Placeholder"),
    (lambda n: x2()[1.5], "GetItem", "key", "(1.5,)"),
    (lambda n: x2()[0:2:0], "GetItem", "key", "(slice(0, 2, 0),)"),
    (lambda n: x2()[np.array([0.5])], "GetItem", "key", "(array([0.5]),)"),
    (lambda n: tfl.ops.get_item(x2(), x2(), name=n), "GetItem", "key", "<Placeholder"),
    # the ops added for ONNX import
    (lambda n: tfl.elu(x2(), alpha="1", name=n), "Elu", "alpha", "'1'"),
    (lambda n: tfl.gelu(x2(), approximate="fast", name=n), "Gelu", "approximate", "'fast'"),
    (lambda n: tfl.ops.elementwise_ops.LeakyRelu(x2(), alpha="1", name=n), "LeakyRelu", "alpha", "1"),
    (lambda n: tfl.argmin(x2(), axis=2, name=n), "ArgMin", "axis", "2"),
    (lambda n: tfl.argmax(x2(), keepdims=1, name=n), "ArgMax", "keepdims", "1"),
    (lambda n: tfl.reduce_min(x2(), axis=(1, 1), name=n), "ReduceMin", "axis", "(1, 1)"),
    (lambda n: tfl.reduce_prod(x2(), axis=2, name=n), "ReduceProd", "axis", "2"),
    (lambda n: tfl.gather(x2(), [0], axis=2, name=n), "Gather", "axis", "2"),
    (lambda n: tfl.topk(x2(), 4, name=n), "TopKIndices", "k", "4"),
    (lambda n: tfl.topk(x2(), -1, name=n), "TopKIndices", "k", "-1"),
    (lambda n: tfl.topk(x2(), 2, largest="no", name=n), "TopKIndices", "largest", "'no'"),
    (lambda n: tfl.pad(x2(), ((1, 1),), name=n), "Pad", "pad_width", "((1, 1),)"),
    (lambda n: tfl.pad(x2(), 1, mode="mirror", name=n), "Pad", "mode", "'mirror'"),
    (lambda n: tfl.pad(x2(), ((-1, -2), (0, 0)), name=n), "Pad", "pad_width", "((-1, -2), (0, 0))"),
    (lambda n: tfl.pad(x2(), 1, value="zero", name=n), "Pad", "value", "'zero'"),
    (lambda n: tfl.split(x2(), 2, axis=1, name=n), "Split", "sizes_or_n", "2"),
    (lambda n: tfl.split(x2(), [1, 1], axis=1, name=n), "Split", "sizes_or_n", "[1, 1]"),
    (lambda n: tfl.split(x2(), 0, name=n), "Split", "sizes_or_n", "0"),
    (lambda n: tfl.stack([], name=n), "Stack", "xs", "[]"),
    (lambda n: tfl.squeeze(x2(), 1, name=n), "Squeeze", "axis", "1"),
    (lambda n: tfl.unsqueeze(x2(), 3, name=n), "Unsqueeze", "axis", "3"),
    (lambda n: tfl.flatten(x2(), 1, 0, name=n), "Flatten", "end_axis", "0"),
    (lambda n: tfl.broadcast_to(x2(), (1, 3), name=n), "BroadcastTo", "shape", "(1, 3)"),
    (lambda n: tfl.expand(x2(), (2, 1.5), name=n), "BroadcastTo", "shape", "(2, 1.5)"),
    (lambda n: tfl.tile(x2(), (2, -1), name=n), "Tile", "reps", "(2, -1)"),
    (lambda n: tfl.einsum("ij,jk->ik", x2(), name=n), "Einsum", "equation", "'ij,jk->ik'"),
    (lambda n: tfl.einsum("ijk->i", x2(), name=n), "Einsum", "equation", "'ijk->i'"),
    (lambda n: tfl.einsum("ij->ik", x2(), name=n), "Einsum", "equation", "'ij->ik'"),
    (lambda n: tfl.einsum("i1->i", x2(), name=n), "Einsum", "equation", "'i1->i'"),
    (lambda n: tfl.tril(x2(), k=0.5, name=n), "Triangle", "k", "0.5"),
    (lambda n: tfl.triu(tfl.Placeholder((3,)), name=n), "Triangle", "x", "(3,)"),
    # values that become Constants, and the dtypes of source nodes
    (lambda n: tfl.add(x2(), "abc", name=n), "Constant", "value", "'abc'"),
    (lambda n: x2() * None, "Constant", "value", "None"),
    (lambda n: tfl.add(x2(), [[1.0, 2.0], [3.0]]), "Constant", "value", "[[1.0, 2.0], [3.0]]"),
    (lambda n: tfl.add(x2(), 1j), "Constant", "value", "1j"),
    (lambda n: tfl.Constant(1.0, dtype="datetime64", name=n), "Constant 'my_node'", "dtype", "'datetime64'"),
    (lambda n: tfl.Placeholder((2,), "banana", name=n), "Placeholder 'my_node'", "dtype", "'banana'"),
    (lambda n: tfl.Placeholder((2,), str, name=n), "Placeholder 'my_node'", "dtype", "<class 'str'>"),
]


@pytest.mark.parametrize("build, op_type, argument, shown", BAD, ids=[f"{b[1]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_a_bad_argument_is_an_argument_error_naming_the_op(build, op_type, argument, shown):
    with pytest.raises(tfl.ArgumentError) as err:
        build("my_node")
    message = str(err.value)
    assert message.startswith(op_type), message
    assert f"{argument}=" in message and shown in message, message
    assert ";" in message.split(f"{argument}=", 1)[1], "the message must end with how to fix it: " + message


def test_the_node_name_and_the_inputs_are_in_the_message():
    with pytest.raises(tfl.ArgumentError, match=r"^Transpose 'flip' on 'x' \(shape \(2, 3\)\): axes=\(0, 2\)"):
        tfl.transpose(x2(), (0, 2), name="flip")


def test_argument_errors_are_shape_errors_and_python_value_and_type_errors():
    """Code that caught ShapeError, ValueError or TypeError around op construction keeps working."""
    assert issubclass(tfl.ArgumentError, tfl.ShapeError)
    assert issubclass(tfl.ArgumentError, ValueError) and issubclass(tfl.ArgumentError, TypeError)


def test_transpose_no_longer_wraps_out_of_range_axes():
    with pytest.raises(tfl.ArgumentError, match="not a permutation"):
        tfl.transpose(tfl.Placeholder((2, 3)), (0, 3))  # used to wrap 3 to axis 1


@pytest.mark.parametrize("build, expected_shape", [
    (lambda: tfl.transpose(x2(), (-1, 0)), (3, 2)),
    (lambda: tfl.transpose(x2(), [1, 0]), (3, 2)),
    (lambda: tfl.transpose(x2(), (np.int64(1), np.int32(0))), (3, 2)),
    (lambda: tfl.reduce_sum(x2(), axis=np.int64(-1)), (2,)),
    (lambda: tfl.reduce_sum(x2(), axis=[0, 1], keepdims=np.bool_(True)), (1, 1)),
    (lambda: tfl.concat((x2(), x2()), axis=-1), (2, 6)),
    (lambda: tfl.add_n(t for t in (x2(), x2())), (2, 3)),
    (lambda: tfl.reshape(x2(), 6), (6,)),
    (lambda: tfl.reshape(x2(), np.array([3, -1])), (3, 2)),
    (lambda: tfl.max_pool2d(x4(), np.int64(2), stride=(2, 1), padding=(1, 0)), (2, 3, 5, 7)),
    (lambda: tfl.conv2d(x4(), np.zeros((4, 3, 3, 3)), stride=[2, 2], padding=1), (2, 4, 4, 4)),
    (lambda: tfl.conv2d(x4(), np.zeros((6, 1, 3, 3)), padding="SAME", dilation=np.int64(2), groups=3), (2, 6, 8, 8)),
    (lambda: tfl.conv2d(x4(), np.zeros((4, 3, 3, 2)), padding=[(1, 0), [0, 1]]), (2, 4, 7, 8)),
    (lambda: tfl.max_pool2d(x4(), 3, stride=2, ceil_mode=np.bool_(True)), (2, 3, 4, 4)),
    (lambda: tfl.cast(x2(), np.int64), (2, 3)),
    (lambda: tfl.leaky_relu(x2(), np.float32(0.2)), (2, 3)),
])
def test_good_arguments_in_every_usual_spelling_still_work(build, expected_shape):
    assert build().shape == expected_shape


def test_shape_inference_has_no_side_effects():
    """Attributes are set when the op is built; running infer_shape again changes nothing."""
    t = tfl.transpose(tfl.Placeholder((2, 3, 4)), (-1, 0, 1))
    c = tfl.concat([x2(), x2()], axis=-1)
    r = tfl.reduce_sum(x2(), axis=-1)
    s = tfl.softmax(x2())
    before = (t.axes, c.axis, r.axes, s.axis)
    assert before == ((2, 0, 1), 1, (1,), 1)
    for node in (t, c, r, s):
        state = dict(vars(node))
        assert node.infer_shape(*[i.shape for i in node.inputs]) == node.shape
        assert vars(node) == state


@pytest.mark.parametrize("shape", [2.5, "ab", (2, -1), True, (True, 2), (2.0,), np.array([[1]]), {"a": 1}])
def test_a_bad_placeholder_shape_is_a_shape_error(shape):
    with pytest.raises(tfl.ShapeError, match="invalid (shape|dimension)"):
        tfl.Placeholder(shape)


@pytest.mark.parametrize("shape, expected", [(3, (3,)), (np.int64(3), (3,)), (np.array([2, 3]), (2, 3)),
                                             ([2, None], (2, None)), (None, None), ((), ())])
def test_placeholder_shapes_in_every_usual_spelling(shape, expected):
    assert tfl.Placeholder(shape).shape == expected


@pytest.mark.parametrize("signature, expression, gradients, dtype, says", [
    ("bad_word(x)", "bar(x)", None, "same", "unknown function bar"),
    ("bad_syntax(x", "x", None, "same", "was never closed"),
    ("bad_name(x)", "x * z", None, "same", "reads ['z']"),
    ("bad_gradient(x)", "x", ["g * q"], "same", "reads ['q']"),
    ("bad_dtype(x)", "x", None, "int", "dtype='int'")])
def test_a_bad_elementwise_op_row_is_an_argument_error_naming_the_op(signature, expression, gradients, dtype, says):
    with pytest.raises(tfl.ArgumentError, match="elementwise_op 'BadRow'") as err:
        tfl.elementwise_op("BadRow", signature, expression, gradients, dtype=dtype)
    assert says in str(err.value)


def test_a_reshape_to_a_known_run_time_shape_of_another_size_fails_when_built():
    x = tfl.Placeholder((2, 3), name="x")
    with pytest.raises(tfl.ShapeError, match=r"ReshapeTo: cannot reshape \(2, 3\) \(size 6\) into \(4, 2\)"):
        tfl.reshape(x, tfl.Constant(np.array([4, 2])))
    assert tfl.reshape(x, tfl.Constant(np.array([3, -1]))).shape == (3, 2)
