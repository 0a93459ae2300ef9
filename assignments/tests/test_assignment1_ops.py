"""Assignment 1: forward ops and static shapes."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.assignment1


@pytest.fixture
def a1(student_module):
    return student_module("assignment1_ops")


@pytest.mark.parametrize("a, b, expected", [
    ((3, 4), (4,), (3, 4)), ((2, 1, 3), (4, 1), (2, 4, 3)), ((), (5,), (5,)), ((1,), (1,), (1,)),
    ((None, 3), (3,), (None, 3)), ((None, 1), (1, 7), (None, 7)), ((None,), (None,), (None,)),
    ((None, 1), (5, 1), (5, 1))])
def test_broadcast_shape(a1, a, b, expected):
    assert a1.broadcast_shape(a, b) == expected
    assert a1.broadcast_shape(b, a) == expected


def test_broadcast_shape_refuses_incompatible_shapes(a1):
    with pytest.raises(tfl.ShapeError, match=r"\(3, 4\)"):
        a1.broadcast_shape((3, 4), (3,))


@pytest.mark.parametrize("shape, axis, keepdims, expected", [
    ((2, 3, 4), None, False, ()), ((2, 3, 4), None, True, (1, 1, 1)), ((2, 3, 4), 1, False, (2, 4)),
    ((2, 3, 4), -1, True, (2, 3, 1)), ((None, 3, 4), (0, 2), False, (3,)), ((None, 5), 1, False, (None,))])
def test_reduced_shape_matches_numpy(a1, shape, axis, keepdims, expected):
    assert a1.reduced_shape(shape, axis, keepdims) == expected
    concrete = tuple(7 if d is None else d for d in shape)
    got = np.sum(np.ones(concrete), axis=axis, keepdims=keepdims).shape
    assert tuple(7 if d is None else d for d in expected) == got


def test_reduced_shape_refuses_an_axis_out_of_range(a1):
    with pytest.raises(tfl.ShapeError, match="axis 2"):
        a1.reduced_shape((3, 4), 2)


def test_hardtanh_value_and_shape(a1):
    x = tfl.Placeholder((None, 3), "float64")
    y = a1.Hardtanh(x)
    assert y.shape == (None, 3) and y.dtype == np.float64
    values = np.array([[-3.0, -0.5, 0.0], [0.25, 1.0, 7.0]])
    with tfl.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: values}), [[-1, -0.5, 0], [0.25, 1, 1]])


def test_outer_value_and_shape(a1):
    a, b = tfl.Placeholder((None,), "float64"), tfl.Placeholder((3,), "float64")
    out = a1.Outer(a, b)
    assert out.shape == (None, 3)
    with tfl.Session() as sess:
        got = sess.run(out, {a: [1.0, 2.0], b: [3.0, 4.0, 5.0]})
    np.testing.assert_array_equal(got, np.outer([1.0, 2.0], [3.0, 4.0, 5.0]))


def test_outer_refuses_matrices_while_building(a1):
    with pytest.raises(tfl.ShapeError, match="second input has shape"):
        a1.Outer(tfl.Placeholder((3,)), tfl.Placeholder((3, 2)))


def test_normalize_rows(a1):
    x = tfl.Placeholder((None, 3), "float64")
    y = a1.normalize_rows(x)
    assert y.shape == (None, 3)
    values = np.array([[1.0, 1.0, 2.0], [3.0, 0.0, 1.0]])
    with tfl.Session() as sess:
        np.testing.assert_allclose(sess.run(y, {x: values}), values / values.sum(1, keepdims=True))
