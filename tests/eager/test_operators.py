"""Operator overloading is one definition for graph nodes and Tensors; numpy ufuncs on nodes explain themselves."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.ops import operators

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def test_comparison_operators_build_boolean_nodes():
    x = tfl.Placeholder((3,), "float32", name="x")
    ops = {"lt": x < 1.0, "le": x <= 1.0, "gt": x > 1.0, "ge": x >= 1.0}
    assert all(op.dtype == np.bool_ for op in ops.values())
    with tfl.Session() as sess:
        out = sess.run(ops, {x: np.array([0.0, 1.0, 2.0])})
    assert out["lt"].tolist() == [True, False, False] and out["le"].tolist() == [True, True, False]
    assert out["gt"].tolist() == [False, False, True] and out["ge"].tolist() == [False, True, True]


def test_equality_stays_identity_so_nodes_work_in_lists_and_dicts():
    a, b = tfl.Placeholder((2,)), tfl.Placeholder((2,))
    assert a == a and a != b and [a, b].index(b) == 1 and {a: 1, b: 2}[b] == 2


def test_array_on_the_left_builds_the_op():
    x = tfl.Placeholder((3,), "float64")
    y = np.arange(3.0) - x
    z = np.arange(3.0) < x
    with tfl.Session() as sess:
        assert sess.run(y, {x: np.ones(3)}).tolist() == [-1.0, 0.0, 1.0]
        assert sess.run(z, {x: np.ones(3)}).tolist() == [True, False, False]


@pytest.mark.parametrize("ufunc, hint", [(np.exp, "tfl.exp"), (np.tanh, "tfl.tanh"), (np.absolute, "tfl.abs")])
def test_numpy_ufunc_on_a_node_names_the_tinyflow_function(ufunc, hint):
    x = tfl.Placeholder((3,), name="x")
    with pytest.raises(tfl.TinyflowError, match=hint.replace(".", r"\.")):
        ufunc(x)


def test_numpy_ufunc_without_a_tinyflow_twin_says_so():
    with pytest.raises(tfl.TinyflowError, match="no op for np.arctan"):
        np.arctan(tfl.Placeholder((3,)))


def test_method_forms_match_the_functions():
    x = tfl.Placeholder((2, 3), "float64")
    value = np.arange(6.0).reshape(2, 3)
    with tfl.Session() as sess:
        got = sess.run([x.sum(), x.mean(1), x.reshape(3, 2), x.T, x.exp()], {x: value})
    np.testing.assert_allclose(got[0], value.sum())
    np.testing.assert_allclose(got[1], value.mean(1))
    assert got[2].shape == (3, 2) and got[3].shape == (3, 2)
    np.testing.assert_allclose(got[4], np.exp(value))


def test_placeholder_default_is_checked_like_a_feed():
    with pytest.raises(tfl.FeedError):
        tfl.Placeholder((2,), "float32", default=np.ones(3))
def test_node_and_tensor_share_one_definition():
    assert tfl.Tensor.__add__ is tfl.Node.__add__ is operators.OPERATORS["__add__"]
    assert tfl.Tensor.__lt__ is tfl.Node.__lt__


