"""What the neural-network ops promise beyond matching torch: ONNX's window and dropout conventions, shape
inference with unknown sizes, and readable errors."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.ops.pooling import MaxPoolIndices
from tinyflow.ops.random_ops import DropoutMask
from tinyflow.ops.resize import Resize

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def run(fetch, feed=None):
    with tfl.Session() as sess:
        return sess.run(fetch, feed or {})


def test_same_padding_puts_the_odd_pad_after_or_before():
    x = np.arange(5, dtype=np.float64).reshape(1, 1, 5)
    w = np.ones((1, 1, 2))
    upper = run(tfl.conv1d(tfl.Constant(x), tfl.Constant(w), padding="same_upper"))
    lower = run(tfl.conv1d(tfl.Constant(x), tfl.Constant(w), padding="same_lower"))
    np.testing.assert_array_equal(upper[0, 0], [1, 3, 5, 7, 4])   # pad (0, 1)
    np.testing.assert_array_equal(lower[0, 0], [0, 1, 3, 5, 7])   # pad (1, 0)
    strided = tfl.conv1d(tfl.Placeholder((None, 1, None)), tfl.Constant(w), stride=2, padding="same")
    assert strided.shape == (None, 1, None)
    assert run(strided, {strided.inputs[0]: np.ones((2, 1, 7), np.float32)}).shape == (2, 1, 4)  # ⌈7 / 2⌉


def test_ceil_mode_drops_a_last_window_that_would_start_in_the_padding():
    x = tfl.Placeholder((1, 1, 4, 4))
    assert tfl.max_pool2d(x, 2, stride=2, padding=1, ceil_mode=True).shape == (1, 1, 3, 3)
    assert tfl.max_pool2d(x, 3, stride=2, ceil_mode=True).shape == (1, 1, 2, 2)


def test_a_dilated_window_of_padding_only_gives_minus_infinity_and_no_gradient():
    x = tfl.Placeholder((1, 1, 1), "float64")
    y = tfl.max_pool1d(x, 2, stride=1, padding=2, dilation=3)
    (grad,) = tfl.gradients(tfl.reduce_sum(tfl.where(tfl.equal(y, -np.inf), tfl.zeros_like(y), y)), [x])
    value, g = run([y, grad], {x: np.array([[[5.0]]])})
    assert np.isneginf(value).all() and g.tolist() == [[[0.0]]]


def test_max_pool_indices_as_torch_and_as_onnx():
    x = np.array([[[[1, 9, 2], [8, 3, 7]], [[5, 4, 6], [0, 1, 2]]]], np.float32)  # (1, 2, 2, 3)
    y, plane = tfl.max_pool2d(tfl.Constant(x), (2, 2), stride=1, return_indices=True)
    whole = MaxPoolIndices(tfl.Constant(x), (2, 2), stride=1, whole_tensor=True)
    column_major = MaxPoolIndices(tfl.Constant(x), (2, 2), stride=1, whole_tensor=True, storage_order=1)
    values, plane, whole, column_major = run([y, plane, whole, column_major])
    np.testing.assert_array_equal(values[..., 0, :], [[[9, 9], [5, 6]]])
    np.testing.assert_array_equal(plane[..., 0, :], [[[1, 1], [0, 2]]])        # row-major within each plane
    np.testing.assert_array_equal(whole[..., 0, :], [[[1, 1], [6, 8]]])        # + 6 for the second plane
    np.testing.assert_array_equal(column_major[..., 0, :], [[[2, 2], [6, 10]]])  # (row 0, col c) is 2·c


def test_average_pool_counts_padding_only_when_asked():
    x = tfl.Constant(np.ones((1, 1, 3, 3)))
    np.testing.assert_allclose(run(tfl.avg_pool2d(x, 2, stride=2, padding=1))[0, 0], [[0.25, 0.5], [0.5, 1]])
    np.testing.assert_allclose(run(tfl.avg_pool2d(x, 2, stride=2, padding=1, count_include_pad=False)), 1.0)


def test_conv_transpose_is_the_input_gradient_of_conv():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    xs = tfl.Placeholder(x.shape, "float64")
    y = tfl.conv2d(xs, tfl.Constant(w), stride=2, padding=((1, 0), (0, 1)), dilation=(1, 2))
    g = rng.standard_normal(y.shape)
    (dx,) = tfl.gradients(y, [xs], grad_ys=tfl.Constant(g))
    transposed = tfl.conv_transpose2d(tfl.Constant(g), tfl.Constant(w), stride=2, padding=((1, 0), (0, 1)),
                                      dilation=(1, 2), output_padding=(1, 0))
    expected, got = run([dx, transposed], {xs: x})
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_dropout_with_a_seed_draws_numpys_legacy_stream_and_a_rate_fed_at_run_time():
    x = np.ones((3, 4, 5), np.float32)
    rate = tfl.Placeholder((), "float32")
    mask = DropoutMask(tfl.Constant(x), rate, seed=3)
    value = run(mask, {rate: 0.25})
    expected = (np.random.RandomState(3).uniform(0, 1, x.shape) >= 0.25) / np.float32(0.75)
    np.testing.assert_array_equal(value, expected.astype(np.float32))
    with pytest.raises(tfl.ExecutionError, match="dropout rate fed is 1.5"):
        run(mask, {rate: 1.5})
    assert run(tfl.dropout(tfl.Constant(x), 0.5, training=False)).tolist() == x.tolist()


def test_matmul_takes_vectors_like_numpy():
    a, b = np.arange(3.0), np.arange(12.0).reshape(2, 3, 2)
    assert run(tfl.matmul(tfl.Constant(a), tfl.Constant(b))).tolist() == (a @ b).tolist()
    assert tfl.matmul(tfl.Placeholder((None, 4, 3)), tfl.Placeholder((3,))).shape == (None, 4)
    assert run(tfl.matmul(tfl.Constant(a), tfl.Constant(a))) == 5.0


def test_resize_sizes_scales_and_kept_axes():
    x = tfl.Placeholder((None, 3, 4, 6))
    assert Resize(x, sizes=(None, None, 8, 3)).shape == (None, 3, 8, 3)
    assert Resize(x, scales=(1, 1, 1.5, 0.5), mode="linear").shape == (None, 3, 6, 3)
    assert Resize(x, sizes=(None, None, 8, 8), keep_aspect_ratio_policy="not_larger").shape == (None, 3, None, None)
    value = run(Resize(x, sizes=(None, None, 8, 8), keep_aspect_ratio_policy="not_larger"),
                {x: np.zeros((1, 3, 4, 6), np.float32)})
    assert value.shape == (1, 3, 5, 8)  # one scale for both axes: 8/6, the smaller


@pytest.mark.parametrize("build, message", [
    (lambda: tfl.conv2d(tfl.Placeholder((1, 4, 5, 5)), tfl.Placeholder((6, 3, 3, 3)), groups=2),
     "4 channels, so with groups=2 the filter .* needs 2 at axis 1"),
    (lambda: tfl.conv2d(tfl.Placeholder((1, 4, 5, 5)), tfl.Placeholder((5, 2, 3, 3)), groups=2),
     "5 output channels .* do not split into groups=2"),
    (lambda: tfl.conv2d(tfl.Placeholder((1, 1, 2, 2)), tfl.Placeholder((1, 1, 2, 2)), dilation=2),
     "does not fit the input"),
    (lambda: tfl.conv_transpose2d(tfl.Placeholder((1, 3, 4, 4)), tfl.Placeholder((2, 2, 3, 3))),
     "the input has 3 channels but the filter"),
    (lambda: tfl.max_pool2d(tfl.Placeholder((1, 1, 4, 4)), 2, padding=2), "padding=2 is as large as the window"),
    (lambda: tfl.layer_norm(tfl.Placeholder((2, 3)), 4), "normalized_shape \\(4,\\) is not the trailing shape"),
    (lambda: tfl.interpolate(tfl.Placeholder((1, 2, 3, 3)), scale_factor=2, mode="trilinear"),
     "does not fit an input with 2 spatial axes"),
    (lambda: Resize(tfl.Placeholder((1, 2, 3)), sizes=(1, 2)), "has no entry for each of the 3 axes"),
    (lambda: Resize(tfl.Placeholder((1, 2, 3)), scales=(1, 1, 2), mode="area"), "mode='area' is not one of"),
])
def test_bad_windows_and_sizes_are_errors_that_say_what_to_fix(build, message):
    with pytest.raises(tfl.ShapeError, match=message):
        build()


def test_resize_names_an_unknown_option_instead_of_a_type_error():
    with pytest.raises(tfl.ArgumentError, match="bogus=1 is not an option of Resize"):
        Resize(tfl.Placeholder((1, 2, 3)), sizes=(1, 2, 3), bogus=1)


def test_interpolate_names_a_scale_factor_that_is_not_a_number():
    with pytest.raises(tfl.ArgumentError, match="scales='a' is not a number"):
        tfl.interpolate(tfl.Placeholder((1, 2, 3, 3)), scale_factor="a")


def test_layer_norm_names_a_normalized_shape_that_is_not_a_size():
    with pytest.raises(tfl.ArgumentError, match="normalized_shape=2.5 is not a size"):
        tfl.layer_norm(tfl.Placeholder((2, 3)), 2.5)


def test_interpolate_names_a_mode_that_is_not_a_string():
    with pytest.raises(tfl.ArgumentError, match=r"mode=\[1.5\] is not an interpolation mode"):
        tfl.interpolate(tfl.Placeholder((1, 2, 3, 3)), size=4, mode=[1.5])


def test_resize_names_a_mode_that_is_an_array():
    with pytest.raises(tfl.ArgumentError, match="mode=array.* is not one of the choices"):
        Resize(tfl.Placeholder((1, 2, 3)), sizes=(1, 2, 3), mode=np.array([1, 2]))
