"""Numerical semantics of the C and OpenCL kernels at the edges: overflow, NaN, large logits, long sums.

Each test runs its graph on every table backend with the small-array threshold at 0
(so the kernel really runs) and checks, through the run report, that it did.
"""
import numpy as np
import pytest

import tinyflow as tfl
from kernel_runs import run_kernels
from tinyflow.backends import CBackend, OpenCLBackend

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

TABLE_BACKENDS = [name for name, cls in (("c", CBackend), ("opencl", OpenCLBackend)) if cls.is_available()]
if not TABLE_BACKENDS:
    pytest.skip("neither the C library nor OpenCL is available here", allow_module_level=True)
pytestmark = pytest.mark.parametrize("table_backend", TABLE_BACKENDS)


def run(backend, build, *inputs, kernel=None):
    """Run build(*placeholders) on `backend` (threshold 0) and on numpy; returns (got, expected)."""
    return [run_kernels(name, build, inputs, kernel) for name in (backend, "numpy")]


EXP_EDGES = np.array([0, 1, -1, 10, 80, 87.9, 88.0, 88.3, 88.7, 88.72, 88.7228, 88.73, 89, 95, 1e4, np.inf,
                      -80, -87.3, -87.5, -95, -100, -103.9, -104.5, -1e4, -np.inf, np.nan], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_is_accurate_up_to_the_overflow_and_ieee_beyond(table_backend, dtype):
    x = EXP_EDGES.astype(dtype)
    got, expected = run(table_backend, tfl.exp, x, kernel="Exp")
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == np.float32 else 1e-14, atol=0)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


def test_a_hand_written_softmax_overflows_like_numpy(table_backend):
    x = np.array([[89.0, 89.0], [1.0, 2.0]], np.float32)
    got, expected = run(table_backend, lambda p: tfl.exp(p) / tfl.reduce_sum(tfl.exp(p), axis=1, keepdims=True), x)
    assert np.isnan(got[0]).all() and np.isnan(expected[0]).all()  # inf / inf, not [0.5, 0.5]
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)


@pytest.mark.parametrize("op, kernel", [(tfl.sigmoid, "Sigmoid"), (tfl.tanh, "Tanh"), (tfl.softplus, "Softplus")])
def test_activations_through_the_exp_range(table_backend, op, kernel):
    x = np.concatenate([EXP_EDGES, -EXP_EDGES, np.linspace(-120, 120, 97, dtype=np.float32)])
    got, expected = run(table_backend, op, x, kernel=kernel)
    np.testing.assert_allclose(got, expected, rtol=5e-6, atol=1e-7)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


def _pool_input():
    x = np.arange(2 * 2 * 6 * 6, dtype=np.float32).reshape(2, 2, 6, 6) % 7
    x[0, 0, 1, 1] = np.nan  # in the first window of the first plane
    x[1, 1, 4, 5] = np.nan
    x[1, 0, 0, 0] = -np.inf
    return x


def test_max_pool_propagates_nan_forward(table_backend):
    got, expected = run(table_backend, lambda p: tfl.max_pool2d(p, 2), _pool_input(), kernel="MaxPool")
    assert np.isnan(expected[0, 0, 0, 0]) and np.isnan(expected[1, 1, 2, 2])
    np.testing.assert_array_equal(got, expected)


def test_max_pool_gradient_goes_to_the_nan_like_numpy(table_backend):
    x = _pool_input()

    def gradient(p):
        return tfl.gradients(tfl.reduce_sum(tfl.max_pool2d(p, 2, stride=1) * 3.0), [p])[0]
    got, expected = run(table_backend, gradient, x, kernel="MaxPoolGrad")
    np.testing.assert_array_equal(got, expected)
    assert got[0, 0, 1, 1] > 0  # the NaN position got the gradient of every window it wins


# odd sizes: a last row and column no window covers; 1 to 17 windows a row (up to 15 have loops of their own)
@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (2, 2, 5, 7), (2, 2, 4, 2), (1, 2, 6, 14), (1, 2, 4, 30),
                                   (1, 2, 2, 32), (1, 1, 4, 34), (3, 2, 8, 8)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_2x2_pooling_picks_each_windows_first_maximum_like_numpy(table_backend, shape, dtype):
    """The usual 2x2, stride-2 pooling has its own C loops: ties, NaN and -inf as the general ones (and numpy)."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, shape).astype(dtype)  # many ties inside windows
    x[x == 0] = rng.choice(np.array([0.0, -0.0], dtype), int((x == 0).sum()))  # +0 and -0 tie: the first wins the gradient
    x.flat[rng.choice(x.size, 6, replace=False)] = np.nan
    x.flat[rng.choice(x.size, 6, replace=False)] = -np.inf
    pooled = (shape[0], shape[1], shape[2] // 2, shape[3] // 2)
    g, r = rng.standard_normal(pooled).astype(dtype), rng.standard_normal(shape).astype(dtype)

    def gather(p, q, s):  # d(sum(dL/dp * s))/dq picks s at each window's maximum: MaxPoolGather
        (gp,) = tfl.gradients(tfl.max_pool2d(p, 2), [p], grad_ys=q)
        return tfl.gradients(tfl.reduce_sum(gp * s), [q])[0]
    for build, inputs, kernel in [(lambda p: tfl.max_pool2d(p, 2), (x,), "MaxPool"),
                                  (lambda p, q: tfl.gradients(tfl.max_pool2d(p, 2), [p], grad_ys=q)[0], (x, g),
                                   "MaxPoolGrad"),
                                  (gather, (x, g, r), "MaxPoolGather")]:
        got, expected = run(table_backend, build, *inputs, kernel=kernel)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_keeps_precision_for_large_logits(table_backend, dtype):
    x = np.array([[1e8, 1e8], [1e8, 1e8 - 1e3], [-1e8, -1e8]], dtype)
    got, expected = run(table_backend, lambda p: tfl.log_softmax(p), x, kernel="LogSoftmax")
    np.testing.assert_allclose(got[0], [-np.log(2)] * 2, rtol=1e-6)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_softmax_cross_entropy_keeps_precision_for_large_logits(table_backend):
    logits = np.array([[1e8, 1e8], [3e7, 3e7]], np.float32)
    labels = np.array([0, 1], np.int64)
    got, expected = run(table_backend, tfl.nn.softmax_cross_entropy, logits, labels, kernel="SoftmaxCrossEntropy")
    np.testing.assert_allclose(got, np.log(2), rtol=1e-6)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.slow
def test_long_float32_sums_stay_accurate(table_backend):
    x = np.full(10_000_000, 0.1, np.float32)
    got, _ = run(table_backend, tfl.reduce_sum, x, kernel="ReduceSum")
    assert got == pytest.approx(1e6, rel=1e-5)  # a sequential float32 sum is off by 9 %
    column, _ = run(table_backend, lambda p: tfl.reduce_mean(p, axis=1), x.reshape(10, 1_000_000))
    np.testing.assert_allclose(column, 0.1, rtol=1e-5)
