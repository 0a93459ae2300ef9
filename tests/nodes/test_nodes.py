"""Nodes: attributes, dtypes, operator overloading (including reflected ops), static shapes."""
import numpy as np
import pytest

import tinyflow as tfl


def run(node, feed=None):
    with tfl.Session() as sess:
        return sess.run(node, feed or {})


def test_every_node_has_the_contract_attributes():
    x = tfl.Placeholder(shape=(None, 13), dtype="float32", name="x")
    w = tfl.Variable(np.zeros((13, 1)), trainable=True, name="w")
    c = tfl.Constant(2.0)
    y = x @ w * c
    for node in (x, w, c, y):
        for attr in ("name", "inputs", "consumers", "shape", "dtype", "op_type", "graph"):
            assert hasattr(node, attr)
    assert (x.op_type, w.op_type, c.op_type, y.op_type) == ("Placeholder", "Variable", "Constant", "Multiply")
    assert y.shape == (None, 1) and y.dtype == np.float64  # float32 @ float64 promotes, as numpy does
    assert isinstance(w.value, np.ndarray) and c.dtype == np.float32


def test_variable_keeps_its_own_copy_and_shape():
    init = np.ones(3, np.float32)
    v = tfl.Variable(init)
    init[0] = 5
    assert v.value[0] == 1
    with pytest.raises(tfl.ShapeError, match="keeps its shape"):
        v.value = np.zeros(4)


@pytest.mark.parametrize("expr, expected", [
    (lambda x: x + 1, [2, 3, 4]), (lambda x: 1 + x, [2, 3, 4]),
    (lambda x: x - 1, [0, 1, 2]), (lambda x: 10 - x, [9, 8, 7]),
    (lambda x: x * 2, [2, 4, 6]), (lambda x: 2 * x, [2, 4, 6]),
    (lambda x: x / 2, [0.5, 1, 1.5]), (lambda x: 6 / x, [6, 3, 2]),
    (lambda x: x ** 2, [1, 4, 9]), (lambda x: 2 ** x, [2, 4, 8]),
    (lambda x: -x, [-1, -2, -3]), (lambda x: abs(-x), [1, 2, 3]), (lambda x: +x, [1, 2, 3]),
    (lambda x: np.array([1.0, 1.0, 1.0], np.float32) + x, [2, 3, 4]),
    (lambda x: np.array([3.0, 2.0, 1.0], np.float32) - x, [2, 0, -2]),
    (lambda x: x * np.float32(3), [3, 6, 9]),
    (lambda x: x[1:], [2, 3]), (lambda x: x[::-1], [3, 2, 1]),
])
def test_operator_overloading_with_python_and_numpy_operands(expr, expected):
    x = tfl.Constant(np.array([1.0, 2.0, 3.0], np.float32))
    node = expr(x)
    assert isinstance(node, tfl.Node)
    np.testing.assert_allclose(run(node), expected)
    assert node.dtype == np.float32  # Python numbers adopt the node's dtype


def test_matmul_and_transpose_operators_with_numpy_on_the_left():
    a = tfl.Constant(np.arange(6.0).reshape(2, 3))
    m = np.ones((4, 2))
    np.testing.assert_allclose(run(m @ a), m @ np.arange(6.0).reshape(2, 3))
    np.testing.assert_allclose(run(a.T), np.arange(6.0).reshape(2, 3).T)
    assert a.T.shape == (3, 2)


def test_nodes_are_not_iterable_or_truthy():
    x = tfl.Placeholder((3,))
    with pytest.raises(TypeError, match="cannot be iterated"):
        list(x)
    with pytest.raises(TypeError, match="no truth value"):
        bool(x)


def test_shape_error_names_both_operands_and_shapes():
    x = tfl.Placeholder((None, 13), name="x")
    w = tfl.Variable(np.zeros((12, 1)), name="w")
    with pytest.raises(tfl.ShapeError) as err:
        x @ w
    message = str(err.value)
    for fragment in ("MatMul", "'x'", "(None, 13)", "'w'", "(12, 1)", "inner dimensions"):
        assert fragment in message
    b = tfl.Variable(np.zeros(3), name="b")
    with pytest.raises(tfl.ShapeError, match=r"'x'.*\(None, 13\).*'b'.*\(3,\)"):
        x + b


def test_user_defined_op_as_in_the_contract():
    class Cube(tfl.Operation):
        def __init__(self, x, name=None):
            super().__init__(x, name=name)

        def compute(self, x):
            return x ** 3

        def infer_shape(self, x_shape):
            return x_shape

    @tfl.register_gradient(Cube)
    def _cube_grad(op, grad):
        return [grad * 3 * op.inputs[0] ** 2]

    x = tfl.Placeholder((2,), dtype="float64")
    y = Cube(x)
    (g,) = tfl.gradients(y, [x])
    with tfl.Session() as sess:
        value, grad = sess.run([y, g], {x: [1.0, 2.0]})
    np.testing.assert_allclose(value, [1, 8])
    np.testing.assert_allclose(grad, [3, 12])
    assert y.op_type == "Cube"


def test_an_op_declaring_shape_of_and_dtype_of_takes_that_inputs_shape_and_dtype(fresh_graph):
    """`shape_of` / `dtype_of` stand for infer_shape / infer_dtype (inherited too); a method written out still wins."""
    class Pick(tfl.Operation):
        op_type = "PickForShapeOfTest"
        shape_of, dtype_of = 1, 0

        def compute(self, a, b):
            return a[:1]

    class Indices(Pick):
        op_type = "IndicesForShapeOfTest"
        dtype_of = np.dtype(np.int64)

        def infer_shape(self, a_shape, b_shape):
            return (7,)

    a, b = tfl.Placeholder((2, 3), dtype="float32"), tfl.Placeholder((1, 3), dtype="int64")
    assert (Pick(a, b).shape, Pick(a, b).dtype) == ((1, 3), np.float32)  # broadcasting would say (2, 3), float64
    assert (Indices(a, b).shape, Indices(a, b).dtype) == ((7,), np.int64)
    assert tfl.Operation.infer_shape(Pick(a, b), (2,), (3, 1)) == (3, 2)  # the default still broadcasts
