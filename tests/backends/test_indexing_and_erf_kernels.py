"""The C kernels added with the ONNX ops: erf (C and OpenCL unary tables) and the scatter-add of gather's
gradient (C), against numpy on the sizes the op cases do not reach: the threaded path, repeated and
negative indices, special values, and indices out of range."""
import math

import numpy as np
import pytest

import tinyflow as tfl
from kernel_runs import run_kernels
from tinyflow.backends import CBackend, OpenCLBackend
from tinyflow.ops.indexing import GatherGrad

HAVE = {"c": CBackend.is_available(), "opencl": OpenCLBackend.is_available()}


def needs(backend):
    return pytest.mark.skipif(not HAVE[backend], reason=f"the {backend} backend is not available here")


@pytest.mark.parametrize("table_backend", [pytest.param("c", marks=needs("c")), pytest.param("opencl", marks=needs("opencl"))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_matches_math_erf_with_special_values(table_backend, dtype):
    x = np.concatenate([np.linspace(-6, 6, 997), [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30]])
    x = x.astype(dtype)
    got = run_kernels(table_backend, tfl.erf, [x], kernel="Erf")
    expected = np.array([math.erf(v) for v in x.astype(np.float64)], dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-7)


@needs("c")
@pytest.mark.parametrize("axis, x_shape, index_shape", [(0, (3000, 96), (2500,)), (1, (7, 300, 130), (40, 2)),
                                                         (2, (2, 3, 1), (5,)), (0, (1, 1), (3,))])
def test_scatter_add_matches_numpy_on_the_threaded_path_and_awkward_shapes(axis, x_shape, index_shape):
    rng = np.random.default_rng(axis)
    dim = x_shape[axis]
    index = rng.integers(-dim, dim, index_shape)  # repeats, and negative indices
    grad_shape = x_shape[:axis] + index_shape + x_shape[axis + 1:]
    grad = rng.standard_normal(grad_shape)
    grad = np.repeat(grad, 2, axis=-1)[..., ::2]  # a non-contiguous view

    def build(g, x, i):
        return GatherGrad(g, x, i, axis)
    inputs = [grad, np.zeros(x_shape), index]
    got = run_kernels("c", build, inputs, kernel="GatherGrad")
    np.testing.assert_allclose(got, run_kernels("numpy", build, inputs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("table_backend", ["numpy", pytest.param("c", marks=needs("c"))])
def test_an_index_out_of_range_is_an_execution_error_not_a_crash(table_backend):
    g, x = tfl.Placeholder((3, 4), "float64"), tfl.Placeholder((5, 4), "float64")
    i = tfl.Placeholder((3,), "int64")
    y = GatherGrad(g, x, i, 0, name="scatter")
    with tfl.Session(backend=table_backend) as sess:
        sess.backend.small_size = 0
        for bad in ([0, 5, 1], [-6, 0, 0]):
            with pytest.raises(tfl.ExecutionError, match="scatter"):
                sess.run(y, {g: np.ones((3, 4)), x: np.zeros((5, 4)), i: bad})
