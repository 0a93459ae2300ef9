"""Assignment 5: a C kernel through cffi, checked for parity with numpy on every kind of input."""
import numpy as np
import pytest

import tinyflow as tfl

pytest.importorskip("cffi", reason="cffi is not installed (pip install cffi)")
pytestmark = pytest.mark.assignment5


@pytest.fixture(scope="module")
def compiled(student_module, tmp_path_factory):
    """The student's C file, compiled once for this module (a second or two)."""
    a5 = student_module("assignment5_c_kernel")
    return a5, a5.build(str(tmp_path_factory.mktemp("assignment5")))


def ops(alpha=0.1):
    x = tfl.Placeholder((None,), "float32")
    g = tfl.Placeholder((None,), "float32")
    return tfl.leaky_relu(x, alpha=alpha), tfl.ops.elementwise_ops.LeakyReluGrad(x, g, alpha)


@pytest.mark.parametrize("size", [0, 1, 7, 1000, 100_003])
def test_forward_parity_with_numpy(compiled, size):
    a5, kernels = compiled
    forward, _ = ops()
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    got = a5.leaky_relu_kernel(kernels, forward, x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_array_equal(got, forward.compute(x))


def test_backward_parity_with_numpy(compiled):
    a5, kernels = compiled
    _, backward = ops(alpha=0.25)
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((33, 17)).astype(np.float32), rng.standard_normal((33, 17)).astype(np.float32)
    np.testing.assert_array_equal(a5.leaky_relu_back_kernel(kernels, backward, x, g), backward.compute(x, g))


def test_non_contiguous_views_are_handled(compiled):
    a5, kernels = compiled
    forward, backward = ops()
    x = np.random.default_rng(2).standard_normal((40, 30)).astype(np.float32)
    view = x.T[::2]  # neither C- nor F-contiguous
    np.testing.assert_array_equal(a5.leaky_relu_kernel(kernels, forward, view), forward.compute(view))
    np.testing.assert_array_equal(a5.leaky_relu_back_kernel(kernels, backward, view, view[::-1]),
                                  backward.compute(view, view[::-1]))


def test_other_dtypes_never_reach_c(compiled):
    a5, kernels = compiled
    forward, backward = ops()
    for dtype in (np.float64, np.int32):
        x = np.arange(-5, 5).astype(dtype)
        got = a5.leaky_relu_kernel(kernels, forward, x)
        np.testing.assert_array_equal(got, forward.compute(x))
        assert got.dtype == forward.compute(x).dtype
    x64 = np.linspace(-1, 1, 9)
    np.testing.assert_array_equal(a5.leaky_relu_back_kernel(kernels, backward, x64.astype(np.float32), x64),
                                  backward.compute(x64.astype(np.float32), x64))


def test_a_session_trains_through_the_c_kernels(compiled):
    a5, kernels = compiled
    name = a5.backend_with(kernels)
    rng = np.random.default_rng(3)
    inputs = tfl.Placeholder((None, 4), "float32")
    w = tfl.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    loss = tfl.reduce_mean(tfl.square(tfl.leaky_relu(inputs @ w, alpha=0.2)))
    grad = tfl.gradients(loss, [w])[0]
    feed = {inputs: rng.standard_normal((16, 4)).astype(np.float32)}
    with tfl.Session(backend=name) as mine, tfl.Session(backend="numpy") as reference:
        for got, expected in zip(mine.run([loss, grad], feed), reference.run([loss, grad], feed)):
            np.testing.assert_allclose(got, expected, rtol=1e-6)
