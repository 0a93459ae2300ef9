"""Forward values of the trickier ops against straightforward references."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def run(node, feed=None):
    with tfl.Session() as sess:
        return sess.run(node, feed or {})


def naive_conv2d(x, w, stride, padding):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    ho, wo = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for b in range(n):
        for f in range(o):
            for i in range(ho):
                for j in range(wo):
                    out[b, f, i, j] = np.sum(x[b, :, i * stride:i * stride + kh, j * stride:j * stride + kw] * w[f])
    return out


@pytest.mark.parametrize("stride, padding", [(1, 0), (2, 1), (1, 2), (3, 0)])
def test_conv2d_matches_the_textbook_loops(stride, padding):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    out = run(tfl.conv2d(tfl.Constant(x), tfl.Constant(w), stride, padding))
    np.testing.assert_allclose(out, naive_conv2d(x, w, stride, padding), rtol=1e-12, atol=1e-12)


def test_max_pool_gradient_goes_to_the_first_maximum_of_each_window():
    x = tfl.Placeholder((1, 1, 2, 4), "float64")
    y = tfl.max_pool2d(x, 2)
    (g,) = tfl.gradients(tfl.reduce_sum(y), [x])
    value = np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0]]]])  # ties in both windows
    out, grad = run([y, g], {x: value})
    np.testing.assert_array_equal(out, [[[[1.0, 2.0]]]])
    np.testing.assert_array_equal(grad, [[[[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]])


def test_softmax_cross_entropy_is_stable_for_huge_logits():
    logits = tfl.Placeholder((2, 3), "float32")
    labels = tfl.Placeholder((2,), "int64")
    loss = tfl.nn.softmax_cross_entropy(logits, labels)
    (g,) = tfl.gradients(loss, [logits])
    value = np.array([[1e4, 0.0, -1e4], [0.0, 1e4, 0.0]], np.float32)
    out, grad = run([loss, g], {logits: value, labels: [2, 1]})
    assert np.isfinite(out) and out == pytest.approx(2e4 / 2, rel=1e-6)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, [[0.5, 0, -0.5], [0, 0, 0]], atol=1e-6)


def test_softmax_cross_entropy_equals_the_unfused_chain():
    rng = np.random.default_rng(1)
    z, y = rng.standard_normal((5, 4)), np.array([0, 3, 1, 1, 2])
    expected = -np.mean(np.log(np.exp(z) / np.exp(z).sum(1, keepdims=True))[np.arange(5), y])
    assert run(tfl.nn.softmax_cross_entropy(tfl.Constant(z), tfl.Constant(y))) == pytest.approx(expected, rel=1e-12)


def test_softmax_cross_entropy_rejects_bad_labels():
    logits = tfl.Placeholder((None, 3))
    with pytest.raises(tfl.ShapeError, match="integer class ids"):
        tfl.nn.softmax_cross_entropy(logits, tfl.Placeholder((None,), "float32"))
    labels = tfl.Placeholder((None,), "int64")
    loss = tfl.nn.softmax_cross_entropy(logits, labels)
    with pytest.raises(tfl.ExecutionError, match=r"label 3 is outside \[0, 3\)"):
        run(loss, {logits: np.zeros((2, 3)), labels: [0, 3]})


def test_sigmoid_cross_entropy_matches_the_definition_and_is_stable():
    rng = np.random.default_rng(2)
    z, t = rng.standard_normal((4, 3)) * 3, rng.random((4, 3))
    p = 1 / (1 + np.exp(-z))
    expected = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p))
    assert run(tfl.nn.sigmoid_cross_entropy(tfl.Constant(z), tfl.Constant(t))) == pytest.approx(expected, rel=1e-10)
    huge = run(tfl.nn.sigmoid_cross_entropy(tfl.Constant(np.array([1e4, -1e4])), tfl.Constant(np.array([0.0, 1.0]))))
    assert huge == pytest.approx(1e4)


def test_mse_loss_refuses_silent_broadcasting():
    pred = tfl.Placeholder((None, 1), name="pred")
    with pytest.raises(tfl.ShapeError, match=r"'pred' has shape \(None, 1\).*target.*\(None,\)"):
        tfl.nn.mse_loss(pred, tfl.Placeholder((None,), name="target"))
    loss = tfl.nn.mse_loss(pred, tfl.Placeholder((None, 1), name="t"))
    assert run(loss, {"pred": [[1.0], [2.0]], "t": [[0.0], [0.0]]}) == pytest.approx(2.5)


@pytest.mark.parametrize("target, expected", [((3, -1), (3, 4)), ((-1,), (12,)), ((2, 2, 3), (2, 2, 3))])
def test_reshape_accepts_one_minus_one(target, expected):
    assert tfl.reshape(tfl.Placeholder((3, 4)), target).shape == expected


def test_reshape_errors_and_unknown_dims():
    with pytest.raises(tfl.ShapeError, match="one -1"):
        tfl.reshape(tfl.Placeholder((3, 4)), (-1, -1))
    with pytest.raises(tfl.ShapeError, match="size 12.*size 10"):
        tfl.reshape(tfl.Placeholder((3, 4)), (2, 5))
    assert tfl.reshape(tfl.Placeholder((None, 4)), (-1, 2, 2)).shape == (None, 2, 2)


def test_reductions_axis_keepdims_and_max_ties():
    x = tfl.Placeholder((2, 3), "float64")
    value = np.array([[1.0, 5.0, 5.0], [2.0, 0.0, -1.0]])
    assert tfl.reduce_sum(x, axis=1, keepdims=True).shape == (2, 1)
    assert tfl.reduce_mean(x, axis=(0, 1)).shape == ()
    m = tfl.reduce_max(x, axis=1)
    (g,) = tfl.gradients(tfl.reduce_sum(m), [x])
    out, grad = run([m, g], {x: value})
    np.testing.assert_array_equal(out, [5.0, 2.0])
    np.testing.assert_array_equal(grad, [[0, 0.5, 0.5], [1, 0, 0]])  # ties share, as TF
    with pytest.raises(tfl.ShapeError, match="axis 2 is out of range"):
        tfl.reduce_sum(x, axis=2)


def test_concat_slicing_and_transpose_shapes():
    a, b = tfl.Placeholder((None, 3)), tfl.Placeholder((None, 2))
    assert tfl.concat([a, b], axis=1).shape == (None, 5)
    with pytest.raises(tfl.ShapeError, match="only the concat axis"):
        tfl.concat([a, tfl.Placeholder((4, 2))], axis=0)
    assert a[:, 1:].shape == (None, 2) and a[0].shape == (3,) and a[..., None].shape == (None, 3, 1)
    assert tfl.transpose(tfl.Placeholder((2, 3, 4)), (2, 0, 1)).shape == (4, 2, 3)
    with pytest.raises(tfl.ShapeError, match="out of bounds"):
        tfl.Placeholder((2, 3))[5]


def test_conv_and_pool_shape_errors():
    x = tfl.Placeholder((None, 3, 8, 8))
    with pytest.raises(tfl.ShapeError, match="3 channels.*needs 3 at axis 1, got filter shape \\(4, 2, 3, 3\\)"):
        tfl.conv2d(x, tfl.Variable(np.zeros((4, 2, 3, 3))))
    with pytest.raises(tfl.ShapeError, match="input of rank 4 \\(N, C and 2 spatial axes\\)"):
        tfl.max_pool2d(tfl.Placeholder((3, 8, 8)), 2)
    assert tfl.conv2d(x, tfl.Variable(np.zeros((4, 3, 3, 3))), stride=2, padding=1).shape == (None, 4, 4, 4)
    assert tfl.max_pool2d(x, 2).shape == (None, 3, 4, 4)


def test_leaky_relu_softplus_and_sigmoid_values():
    v = np.array([-2.0, 0.5, 800.0, -800.0])
    x = tfl.Constant(v)
    np.testing.assert_allclose(run(tfl.leaky_relu(x, 0.1)), [-0.2, 0.5, 800.0, -80.0])
    np.testing.assert_allclose(run(tfl.softplus(x)), [np.log1p(np.exp(-2.0)), np.log1p(np.exp(0.5)), 800.0, 0.0])
    np.testing.assert_allclose(run(tfl.sigmoid(x)), [1 / (1 + np.exp(2.0)), 1 / (1 + np.exp(-0.5)), 1.0, 0.0])


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "int64", "float32"])
def test_reduce_sum_static_dtype_is_the_dtype_it_computes(dtype):
    """Found by the graph fuzzer: numpy sums bools and small ints as the platform int."""
    x = tfl.Placeholder((5000,), dtype)
    y = tfl.reduce_sum(x, axis=0)
    value = np.asarray(run(y, {x: np.ones(5000, dtype)}))
    assert value.dtype == y.dtype and value == 5000


ELEMENTWISE = [tfl.negative, tfl.abs, tfl.square, tfl.sqrt, tfl.exp, tfl.log, tfl.sign, tfl.relu, tfl.sigmoid,
               tfl.tanh, tfl.softplus, tfl.leaky_relu, lambda a: a + a, lambda a: a * a, lambda a: a / a,
               lambda a: a ** a, lambda a: tfl.maximum(a, a), lambda a: tfl.greater(a, a)]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "float32"])
def test_elementwise_static_dtype_is_the_dtype_numpy_computes(dtype):
    """Found by the graph fuzzer: relu of bools computed int64 while the node said bool (sqrt of int8: float16).

    The static dtype now comes from the op's own numpy kernel; a dtype the kernel refuses
    (negative of bool) is a ShapeError naming the op while building, not a failure at run time.
    """
    x = tfl.Placeholder((3,), dtype, name="x")
    for build in ELEMENTWISE:
        try:
            y = build(x)
        except tfl.ShapeError as err:
            assert dtype == "bool" and "does not take inputs of dtype bool" in str(err) and "'x'" in str(err)
            continue
        value = np.asarray(run(y, {x: np.ones(3, dtype)}))
        assert value.dtype == y.dtype, (y, value.dtype)
