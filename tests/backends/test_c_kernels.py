"""Every C kernel against the op's numpy reference: both dtypes, awkward shapes, non-contiguous views.

`check` also asserts that the C kernel really ran (the numpy `compute` is
swapped for a failure while the kernel is called), so a silent fallback
cannot make a parity test pass.
"""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyflow as tfl
from tinyflow.backends import c_backend as c_backend_module, native
from tinyflow.backends.c_backend import CBackend, gemm
from tinyflow.backends.fused import plan_layout
from tinyflow.backends.kernel_codes import layout_code
from tinyflow.ops.cross_entropy import SoftmaxCrossEntropy, SoftmaxCrossEntropyGrad
from tinyflow.ops import conv, normalization, pooling, reductions
from tinyflow.ops import elementwise_ops as activations, elementwise_ops as math_ops
from tinyflow.ops.windows import window_output_size
from tinyflow.ops.matmul import MatMul

softmax = __import__("importlib").import_module("tinyflow.ops.softmax")  # the module, not tfl.ops.softmax

pytestmark = pytest.mark.skipif(not CBackend.is_available(), reason="the C kernel library is not built "
                                "(run pip install -e . with a C compiler)")
DTYPES = [np.float32, np.float64]
TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}
SETTINGS = settings(max_examples=40, deadline=None)


@pytest.fixture(scope="module")
def c_backend():
    backend = CBackend()
    backend.small_size = 0  # every input goes to the C kernel the table entry accepts
    return backend


def build(op_class, *arrays, **attrs):
    """An op of `op_class` on placeholders shaped like `arrays`, in a fresh graph."""
    with tfl.Graph().as_default():
        return op_class(*[tfl.Placeholder(a.shape, a.dtype) for a in arrays], **attrs)


def check(c_backend, op, *arrays, uses_c=True, tolerance=None):
    """Compare the C kernel with the numpy compute; with uses_c, fail if the kernel fell back.

    The table entry is called directly: `backend.kernel(op)` would hand small inputs to numpy.
    """
    expected = op.compute(*arrays)
    if uses_c:
        op.compute = lambda *a: pytest.fail(f"{op.op_type} fell back to numpy for {[x.shape for x in arrays]}")
    try:
        got = c_backend.call(c_backend.kernels[op.op_type], op, arrays)
    finally:
        op.__dict__.pop("compute", None)
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, **(tolerance or TOLERANCE[expected.dtype]))
    return got


def c_kernel(c_backend, op):
    """The C table entry for op, bypassing the small-input shortcut to numpy."""
    return lambda *values: c_backend.call(c_backend.kernels[op.op_type], op, values)


def values(dtype, shape, low=-3.0, high=3.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def strided(array):
    """A non-contiguous view with the same values as `array`."""
    doubled = np.repeat(array[..., None], 2, axis=-1).reshape(array.shape[:-1] + (2 * array.shape[-1],)) \
        if array.ndim else array
    view = doubled[..., ::2] if array.ndim else doubled
    assert array.size <= 1 or array.shape[-1] == 1 or not view.flags.c_contiguous
    return view


# ---------------------------------------------------------------- elementwise
@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=5),
       op=st.sampled_from([math_ops.Add, math_ops.Subtract, math_ops.Multiply, math_ops.Divide, math_ops.Maximum,
                           math_ops.Minimum]),
       dtype=st.sampled_from(DTYPES), non_contiguous=st.booleans())
def test_binary_kernels(c_backend, shapes, op, dtype, non_contiguous):
    a, b = (values(dtype, s, seed=i) for i, s in enumerate(shapes.input_shapes))
    b = np.where(np.abs(b) < 0.1, 0.5, b).astype(dtype)  # keep division tame
    if non_contiguous:
        a, b = strided(a), strided(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    uses_c = a.size > 0 and b.size > 0 and layout_code(plan_layout((a.shape, b.shape), shape)[0]) is not None
    check(c_backend, build(op, a, b), a, b, uses_c=uses_c)


def test_broadcast_layouts_cover_the_patterns_ops_produce():
    def layout(a, b):
        kinds, outer, inner = plan_layout((a, b), np.broadcast_shapes(a, b))
        return layout_code(kinds) is not None and (kinds, outer * inner, inner)
    assert layout((4, 5), (4, 5)) == (("full", "full"), 20, 20)
    assert layout((4, 5), ()) == (("full", "scalar"), 20, 20)
    assert layout((1,), (4, 5)) == (("scalar", "full"), 20, 20)
    assert layout((4, 5), (5,)) == (("full", "row"), 20, 5)
    assert layout((2, 3, 5), (1, 3, 5)) == (("full", "row"), 30, 15)
    assert layout((4, 5), (4, 1)) == (("full", "col"), 20, 5)
    assert layout((4, 1, 1), (4, 2, 3)) == (("col", "full"), 24, 6)
    assert layout((4, 1), (1, 5)) == (("col", "row"), 20, 5)  # an outer product: a column against a row
    assert layout((2, 1, 4), (2, 3, 4)) is False  # neither a row nor a column: numpy does it


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, low, high", [(math_ops.Negative, -3, 3), (math_ops.Square, -3, 3),
                                           (math_ops.Sqrt, 0, 9), (math_ops.Exp, -80, 80), (math_ops.Log, 0.01, 9),
                                           (math_ops.Abs, -3, 3)])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), (100_003,)])
def test_unary_kernels(c_backend, op, low, high, dtype, shape):
    x = values(dtype, shape, low, high)
    check(c_backend, build(op, x), x, uses_c=x.size > 0)
    if x.ndim == 2:
        check(c_backend, build(op, x.T), x.T)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, attrs", [(activations.Sigmoid, {}), (activations.Tanh, {}), (activations.Relu, {}),
                                       (activations.LeakyRelu, {"alpha": 0.2}), (activations.Softplus, {})])
@pytest.mark.parametrize("shape", [(1,), (5, 7), (200_001,)])
def test_activation_kernels_forward_and_backward(c_backend, op, attrs, dtype, shape):
    x = values(dtype, shape, -30, 30)
    y = check(c_backend, build(op, x, **attrs), x)
    backward = {activations.Sigmoid: activations.SigmoidGrad, activations.Tanh: activations.TanhGrad,
                activations.Relu: activations.ReluGrad, activations.LeakyRelu: activations.LeakyReluGrad}.get(op)
    if backward is not None:
        g = values(dtype, shape, seed=1)
        first = x if op is activations.LeakyRelu else y
        check(c_backend, build(backward, first, g, **attrs), first, g)
        if first.ndim == 2:
            check(c_backend, build(backward, first.T, g.T, **attrs), first.T, g.T)


def test_small_inputs_go_to_numpy_and_large_ones_to_c():
    from tinyflow.backends.c_backend import SMALL
    c_backend = CBackend()
    small, large = np.ones(SMALL - 1, np.float32), np.ones(SMALL, np.float32)
    with tfl.Graph().as_default():  # a dimension unknown while building: decided at each call
        op = tfl.add(tfl.Placeholder((None,)), tfl.Placeholder((None,)))
    calls = []
    op.compute = lambda *a: calls.append("numpy") or a[0] + a[1]
    c_backend.kernel(op)(small, small)
    c_backend.kernel(op)(large, large)
    assert calls == ["numpy"]
    assert c_backend.report.small_ops["Add"] == 1 and c_backend.report.kernel_ops["Add"] == 1
    with tfl.Graph().as_default():  # known to be small while building: numpy's compute, decided once
        known = tfl.add(tfl.Placeholder((4, 4)), tfl.Placeholder((4, 4)))
    assert c_backend.static_route(known) == "small" and c_backend.kernel(known) == known.compute
    assert c_backend.static_route(op) is None


def test_activations_at_extremes_and_nan(c_backend):
    x = np.array([-1e4, -90.0, -1e-8, 0.0, 1e-8, 90.0, 1e4, np.nan], np.float32)
    for op in (activations.Sigmoid, activations.Tanh, activations.Relu):
        expected = op.compute(build(op, x), x)
        got = c_kernel(c_backend, build(op, x))(x)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-30, equal_nan=True)


# ---------------------------------------------------------------- reductions
@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5), data=st.data(),
       op=st.sampled_from([reductions.ReduceSum, reductions.ReduceMean, reductions.ReduceMax]),
       dtype=st.sampled_from(DTYPES), keepdims=st.booleans(), non_contiguous=st.booleans())
def test_reduction_kernels(c_backend, shape, data, op, dtype, keepdims, non_contiguous):
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    x = values(dtype, shape)
    if non_contiguous:
        x = strided(x)
    axis = None if axes is None else tuple(axes)
    reduced = range(len(shape)) if axis is None else axis
    assume(op is not reductions.ReduceMax or all(shape[a] > 0 for a in reduced))  # numpy refuses max of nothing
    node = build(op, x, axis=axis, keepdims=keepdims)
    runs_in_c = x.size > 0 and sorted(node.axes) == list(range(min(node.axes), max(node.axes) + 1))
    empty_mean = op is reductions.ReduceMean and 0 in [shape[a] for a in reduced]  # NaN, with numpy's warning
    with pytest.warns(RuntimeWarning) if empty_mean else contextlib.nullcontext():
        check(c_backend, node, x, uses_c=runs_in_c,
              tolerance=dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else None)


@pytest.mark.parametrize("shape, axis", [((3_000_000,), None), ((1000, 300), 0), ((300, 1000), 1), ((2, 50_000, 3), 1)])
def test_large_reductions_run_in_parallel_and_stay_accurate(c_backend, shape, axis):
    x = values(np.float32, shape)
    for op in (reductions.ReduceSum, reductions.ReduceMean, reductions.ReduceMax):
        node = build(op, x, axis=axis)
        expected = op.compute(node, x.astype(np.float64)).astype(np.float32)
        np.testing.assert_allclose(c_kernel(c_backend, node)(x), expected, rtol=1e-5, atol=1e-3)


def test_max_propagates_nan_like_numpy(c_backend):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(c_kernel(c_backend, build(reductions.ReduceMax, x, axis=1))(x), [np.nan, 6.0])
    a, b = np.array([np.nan, 1.0, 2.0]), np.array([0.0, np.nan, 1.0])
    np.testing.assert_array_equal(c_kernel(c_backend, build(math_ops.Maximum, a, b))(a, b), [np.nan, np.nan, 2.0])


# ---------------------------------------------------------------- softmax family
@SETTINGS
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6), dtype=st.sampled_from(DTYPES),
       last_axis=st.booleans(), non_contiguous=st.booleans())
def test_softmax_kernels(c_backend, shape, dtype, last_axis, non_contiguous):
    x, g = values(dtype, shape, -20, 20), values(dtype, shape, seed=1)
    if non_contiguous:
        x, g = strided(x), strided(g)
    axis = -1 if last_axis else 0
    uses_c = last_axis or len(shape) == 1
    y = check(c_backend, build(softmax.Softmax, x, axis=axis), x, uses_c=uses_c)
    ly = check(c_backend, build(softmax.LogSoftmax, x, axis=axis), x, uses_c=uses_c)
    check(c_backend, build(softmax.SoftmaxGrad, y, g, axis=axis), y, g, uses_c=uses_c)
    check(c_backend, build(softmax.LogSoftmaxGrad, ly, g, axis=axis), ly, g, uses_c=uses_c)


@SETTINGS
@given(rows=st.integers(1, 40), cols=st.integers(1, 12), dtype=st.sampled_from(DTYPES), scale=st.sampled_from([1.0, 1e4]),
       seed=st.integers(0, 100))
def test_fused_softmax_cross_entropy_kernels(c_backend, rows, cols, dtype, scale, seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, cols)) * scale).astype(dtype)
    labels = rng.integers(0, cols, rows)
    loss = check(c_backend, build(SoftmaxCrossEntropy, logits, labels), logits, labels,
                 tolerance=dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else None)
    assert np.isfinite(loss)
    g = np.asarray(0.7, dtype)
    check(c_backend, build(SoftmaxCrossEntropyGrad, logits, labels, g), logits, labels, g)


def test_cross_entropy_kernel_rejects_bad_labels_without_crashing(c_backend):
    logits, labels = np.zeros((3, 4), np.float32), np.array([0, 4, 1])
    for op in (build(SoftmaxCrossEntropy, logits, labels),):
        with pytest.raises(ValueError, match=r"label 4 is outside \[0, 4\)"):
            c_kernel(c_backend, op)(logits, labels)
    op = build(SoftmaxCrossEntropyGrad, logits, labels, np.asarray(1.0, np.float32))
    with pytest.raises(ValueError, match="label -1"):
        c_kernel(c_backend, op)(logits, np.array([0, -1, 1]), np.asarray(1.0, np.float32))


# ---------------------------------------------------------------- convolution and pooling
geometry = st.fixed_dictionaries(dict(n=st.integers(1, 3), c=st.integers(1, 3), o=st.integers(1, 4),
                                      h=st.integers(1, 7), w=st.integers(1, 7), kh=st.integers(1, 3),
                                      kw=st.integers(1, 3), stride=st.integers(1, 3), pad=st.integers(0, 2),
                                      extra_pad=st.integers(0, 2), dilation=st.integers(1, 2),
                                      groups=st.sampled_from([1, 2]), one_d=st.booleans()))


def window_of(g, ceil_mode=False, pool=False):
    """(x spatial, kernel, stride, padding, dilation, output spatial) of a drawn geometry; 1-D when one_d.
    The leading and trailing pads differ; pools pad by less than their window spans."""
    spatial, kernel = ((g["w"],), (g["kw"],)) if g["one_d"] else ((g["h"], g["w"]), (g["kh"], g["kw"]))
    stride, dilation = (g["stride"],) * len(kernel), (g["dilation"],) * len(kernel)
    pads = []
    for k in kernel:
        before, after = g["pad"], g["pad"] + g["extra_pad"]
        if pool:
            before, after = min(before, g["dilation"] * (k - 1)), min(after, g["dilation"] * (k - 1))
        pads.append((before, after))
    out = tuple(window_output_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in
                zip(spatial, kernel, stride, pads, dilation))
    return spatial, kernel, stride, tuple(pads), dilation, out


@SETTINGS
@given(g=geometry, dtype=st.sampled_from(DTYPES), non_contiguous=st.booleans())
def test_convolution_kernels(c_backend, g, dtype, non_contiguous):
    spatial, kernel, stride, pads, dilation, out = window_of(g)
    assume(min(out) >= 1)
    groups = g["groups"]
    x = values(dtype, (g["n"], g["c"] * groups) + spatial)
    w = values(dtype, (g["o"] * groups, g["c"]) + kernel, seed=1)
    grad = values(dtype, (g["n"], g["o"] * groups) + out, seed=2)
    if non_contiguous:
        x, grad = strided(x), strided(grad)
    window = dict(stride=stride, padding=pads, dilation=dilation, groups=groups)
    tolerance = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else None
    check(c_backend, build(conv.Conv, x, w, **window), x, w, tolerance=tolerance)
    check(c_backend, build(conv.ConvBackInput, grad, w, x, **window), grad, w, x, tolerance=tolerance)
    check(c_backend, build(conv.ConvBackFilter, x, grad, w, **window), x, grad, w, tolerance=tolerance)
    # the transposed convolution of grad by w (where its output is not cropped away)
    if all(s * (o - 1) + d * (k - 1) + 1 > sum(p) for s, o, d, k, p in zip(stride, out, dilation, kernel, pads)):
        check(c_backend, build(conv.ConvTranspose, grad, w, **window), grad, w, tolerance=tolerance)


# im2col copies a "same" window (stride 1, output as wide as the input) as the whole plane shifted, then pads
# the columns a tap took from the neighbouring row: taller outputs than inputs, pads wider than the image,
# one-pixel images and dilated taps, against the row-by-row path (stride 2) and numpy
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", [
    ((2, 3, 5, 6), (4, 3, 3, 3), 1, 1, 1),                   # the usual 3x3 "same"
    ((2, 3, 5, 6), (4, 3, 2, 3), 1, ((2, 1), (1, 1)), 1),    # as wide as the input, two rows taller
    ((1, 2, 1, 1), (3, 2, 3, 3), 1, 1, 1),                   # one pixel: every tap but the centre is padding
    ((2, 1, 4, 3), (2, 1, 3, 5), 1, ((3, 3), (2, 2)), 1),    # pads beyond the image: whole rows of padding
    ((2, 2, 6, 7), (3, 2, 3, 3), 1, 2, 2),                   # dilated "same"
    ((2, 2, 6, 7), (3, 2, 3, 3), 2, 1, 1),                   # stride 2: row by row
    ((3, 8, 40, 40), (4, 8, 3, 3), 1, 1, 1),                 # on the thread pool: chunks start inside a tap's blocks
    ((3, 8, 40, 40), (4, 8, 3, 3), 2, 1, 1),
])
def test_convolution_of_shifted_planes(c_backend, x_shape, w_shape, stride, padding, dilation):
    x, w = values(np.float64, x_shape), values(np.float64, w_shape, seed=1)
    window = dict(stride=stride, padding=padding, dilation=dilation)
    op = build(conv.Conv, x, w, **window)
    grad = values(np.float64, op.shape, seed=2)
    check(c_backend, op, x, w)
    check(c_backend, build(conv.ConvBackFilter, x, grad, w, **window), x, grad, w)
    check(c_backend, build(conv.ConvBackInput, grad, w, x, **window), grad, w, x)


# depthwise filters (one group per input channel) and pointwise ones (1x1, stride 1, no padding) skip im2col:
# direct kernels (a depthwise filter gradient too) and a product per image, checked against numpy where im2col
# would have been used
@pytest.mark.parametrize("x_shape, w_shape, groups, stride, padding, dilation", [
    ((2, 3, 7, 6), (3, 1, 3, 3), 3, 1, 1, 1),                   # MobileNet's 3x3 "same"
    ((1, 4, 9, 8), (4, 1, 3, 3), 4, 2, 1, 1),                   # stride 2
    ((2, 2, 5, 5), (6, 1, 3, 2), 2, 1, ((2, 0), (1, 3)), 2),    # multiplier 3, uneven pads, dilation
    ((3, 5, 1, 1), (5, 1, 3, 3), 5, 1, 1, 1),                   # one pixel: only the centre tap
    ((2, 3, 11), (3, 1, 5), 3, 2, 2, 1),                        # 1-D
    ((2, 64, 17, 19), (64, 1, 3, 3), 64, 1, 1, 1),              # on the thread pool
    # rows of 16 inner values or more: read straight from the input rows (16, then 8, then one at a time; the edges)
    ((2, 3, 6, 45), (3, 1, 3, 3), 3, 1, 1, 1),
    ((2, 3, 7, 60), (6, 1, 3, 3), 3, 2, ((1, 0), (2, 1)), 1),   # stride 2, multiplier 2, uneven pads
    ((1, 2, 5, 70), (2, 1, 3, 5), 2, (1, 3), 2, (1, 2)),        # stride 3 along the rows, dilation, wide pads
    ((2, 3, 5, 6), (4, 3, 1, 1), 1, 1, 0, 1),                   # pointwise
    ((1, 7, 3, 5), (2, 7, 1, 1), 1, 1, 0, 1),
    ((2, 5, 9), (3, 5, 1), 1, 1, 0, 1),                         # pointwise 1-D
    # pointwise on 128 values a plane or more: the gradients too, image by image (no copies of x or g)
    ((3, 5, 12, 11), (4, 5, 1, 1), 1, 1, 0, 1),
    ((2, 3, 130), (4, 3, 1), 1, 1, 0, 1),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_depthwise_and_pointwise_convolutions_skip_im2col(c_backend, monkeypatch, x_shape, w_shape, groups, stride,
                                                          padding, dilation, dtype):
    x, w = values(dtype, x_shape), values(dtype, w_shape, seed=1)
    op = build(conv.Conv, x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    monkeypatch.setattr(c_backend_module, "_im2col", lambda *a: pytest.fail("im2col used"))
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else None
    check(c_backend, op, x, w, tolerance=tolerance)
    window = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    grad, wide = values(dtype, op.shape, seed=2), np.prod(op.shape[2:]) >= 128
    if groups == x_shape[1] or wide:  # a depthwise filter gradient has its direct kernel too
        check(c_backend, build(conv.ConvBackFilter, x, grad, w, **window), x, grad, w,
              tolerance=dict(rtol=1e-4, atol=1e-4) if tolerance else None)
    if wide:
        monkeypatch.setattr(c_backend_module, "_planes", lambda *a: pytest.fail("a copy of g's planes was made"))
        check(c_backend, build(conv.ConvBackInput, grad, w, x, **window), grad, w, x, tolerance=tolerance)


# the input gradient of a depthwise convolution has its own kernel, the convolution's exact adjoint, for any stride,
# padding, dilation and channel multiplier: no per-channel products, no col2im
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", [
    ((2, 3, 7, 6), (3, 1, 3, 3), 1, 1, 1),                     # MobileNet's 3x3 "same"
    ((2, 3, 6, 5), (3, 1, 3, 2), 1, ((2, 0), (1, 1)), 2),      # uneven pads, dilation
    ((2, 3, 11), (3, 1, 5), 1, 0, 1),                          # 1-D, no padding
    ((2, 64, 17, 19), (64, 1, 3, 3), 1, 1, 1),                 # on the thread pool
    ((2, 3, 4, 4), (3, 1, 1, 1), 1, 1, 1),                     # pads wider than the window reaches
    ((1, 4, 9, 8), (4, 1, 3, 3), 2, 1, 1),                     # stride 2
    ((2, 3, 10, 7), (3, 1, 3, 3), (2, 3), ((1, 0), (2, 1)), (1, 2)),  # strides, pads, dilations differ
    ((2, 3, 11), (3, 1, 5), 3, 2, 1),                          # 1-D stride 3
    ((2, 2, 5, 5), (6, 1, 3, 2), 1, 1, 1),                     # multiplier 3
    ((2, 3, 6, 45), (3, 1, 3, 3), 1, 1, 1),                    # rows of 16 inner values or more
    ((2, 3, 7, 60), (6, 1, 3, 3), 2, ((1, 0), (2, 1)), 1),     # ... at stride 2, multiplier 2
    ((1, 2, 5, 70), (2, 1, 3, 5), (1, 3), 2, (1, 2)),          # ... at stride 3, dilated, wide pads
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_depthwise_input_gradient_has_its_own_kernel_for_any_stride_padding_and_multiplier(
        c_backend, monkeypatch, x_shape, w_shape, stride, padding, dilation, dtype):
    x, w = values(dtype, x_shape), values(dtype, w_shape, seed=1)
    window = dict(stride=stride, padding=padding, dilation=dilation, groups=x_shape[1])
    grad = values(dtype, build(conv.Conv, x, w, **window).shape, seed=2)
    monkeypatch.setattr(c_backend_module, "_planes", lambda *a: pytest.fail("the product and col2im were used"))
    check(c_backend, build(conv.ConvBackInput, grad, w, x, **window), grad, w, x,
          tolerance=dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else None)


def test_table_ops_work_out_their_broadcast_layout_once_per_input_shapes(c_backend, monkeypatch):
    """The broadcast and its layout cost more than a small op's kernel: calls with shapes seen before reuse them."""
    a, b = values(np.float32, (7, 13)), values(np.float32, (13,), seed=1)
    op = build(math_ops.Add, a, b)
    c_kernel(c_backend, op)(a, b)
    monkeypatch.setattr(np, "broadcast_shapes", lambda *shapes: pytest.fail("the layout was worked out again"))
    check(c_backend, op, a, b)


@SETTINGS
@given(g=geometry, dtype=st.sampled_from(DTYPES), non_contiguous=st.booleans(), ceil_mode=st.booleans())
def test_pooling_kernels(c_backend, g, dtype, non_contiguous, ceil_mode):
    spatial, kernel, stride, pads, dilation, out = window_of(g, ceil_mode, pool=True)
    assume(min(out) >= 1)
    rng = np.random.default_rng(0)
    shape = (g["n"], g["c"]) + spatial
    x = rng.integers(0, 4, shape).astype(dtype)  # few distinct values: plenty of ties to break like numpy
    grad, h = values(dtype, shape[:2] + out, seed=1), values(dtype, shape, seed=2)
    if non_contiguous:
        x, grad, h = strided(x), strided(grad), strided(h)
    window = dict(kernel_size=kernel, stride=stride, padding=pads, dilation=dilation, ceil_mode=ceil_mode)
    check(c_backend, build(pooling.MaxPool, x, **window), x)
    check(c_backend, build(pooling.MaxPoolGrad, x, grad, **window), x, grad)
    check(c_backend, build(pooling.MaxPoolGather, x, h, **window), x, h)


def test_window_geometry_is_remembered_per_op_and_shapes_without_becoming_an_attribute(c_backend):
    import gc
    import weakref
    from tinyflow.backends import kernel_codes
    from tinyflow.passes.ir import attribute_key
    with tfl.Graph().as_default():
        x_in, w_in = tfl.Placeholder((None, 2, 7, 7)), tfl.Placeholder((3, 2, 3, 3))
        op = conv.Conv(x_in, w_in, stride=2, padding=1)
        pool = pooling.MaxPool(x_in, kernel_size=2, stride=2)
    attributes, key = dict(vars(op)), attribute_key(op)
    w = values(np.float32, (3, 2, 3, 3), seed=1)
    for batch in (5, 3, 5):  # the last batch of an epoch is smaller; each shape gets its own geometry
        x = values(np.float32, (batch, 2, 7, 7), seed=batch)
        check(c_backend, op, x, w, tolerance=dict(rtol=1e-4, atol=1e-4))
        check(c_backend, pool, x)
    assert sorted(k[1] for k in kernel_codes._GEOMETRIES[op]) == [(3, 2, 7, 7), (5, 2, 7, 7)]  # once per shape
    assert vars(op) == attributes and attribute_key(op) == key  # CSE, jit.save and eager see no new attribute
    gc.collect()  # ops of earlier tests that are garbage already leave the memo now, not below
    remembered, gone = len(kernel_codes._GEOMETRIES), weakref.ref(op)
    del op, pool, x_in, w_in, attributes  # and with them the graph that holds them
    gc.collect()
    assert gone() is None and len(kernel_codes._GEOMETRIES) == remembered - 2  # forgotten with their ops


def test_a_window_of_padding_only_reads_no_memory_outside_the_input(c_backend):
    """A dilated window may skip over a small input entirely: max -inf, no gradient, gather 0, like numpy."""
    x = np.array([[[5.0]]], np.float32)
    window = dict(kernel_size=2, stride=1, padding=2, dilation=3)
    assert build(pooling.MaxPool, x, **window).shape == (1, 1, 2)
    assert np.isneginf(check(c_backend, build(pooling.MaxPool, x, **window), x)).all()
    check(c_backend, build(pooling.MaxPoolGrad, x, np.ones((1, 1, 2), np.float32), **window), x,
          np.ones((1, 1, 2), np.float32))
    check(c_backend, build(pooling.MaxPoolGather, x, x, **window), x, x)


def test_3d_and_mismatched_shapes_fall_back_to_numpy(c_backend):
    x, w = np.zeros((1, 2, 3, 3, 3), np.float32), np.zeros((2, 2, 2, 2, 2), np.float32)
    check(c_backend, build(conv.Conv, x, w), x, w, uses_c=False)
    x, w = np.zeros((1, 3, 4, 4), np.float32), np.zeros((2, 2, 3, 3), np.float32)  # 3 channels vs 2
    with pytest.raises(ValueError):
        c_kernel(c_backend, build(conv.Conv, np.zeros((1, 2, 4, 4), np.float32), w))(x, w)


# ---------------------------------------------------------------- layer normalization
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((1, 1), -1), ((5, 1), -1), ((1, 7), -1), ((3, 4, 5), 1), ((2, 3, 4), 0),
                                         ((4, 1, 3), 2), ((6, 1000), -1)])
@pytest.mark.parametrize("non_contiguous", [False, True])
def test_layer_norm_kernels(c_backend, dtype, shape, axis, non_contiguous):
    x, g = values(dtype, shape), values(dtype, shape, seed=1)
    x[(0,) * x.ndim] = 1e4  # one large value: the two-pass variance keeps the others' precision
    if non_contiguous:
        x, g = strided(x), strided(g)
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else None
    check(c_backend, build(normalization.LayerNorm, x, axis=axis, eps=1e-3), x, tolerance=tolerance)
    check(c_backend, build(normalization.LayerNormGrad, x, g, axis=axis, eps=1e-3), x, g, tolerance=tolerance)


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (0,)])
def test_layer_norm_of_nothing_stays_in_numpy(c_backend, shape):
    x = np.zeros(shape, np.float32)
    check(c_backend, build(normalization.LayerNorm, x), x, uses_c=False)
    check(c_backend, build(normalization.LayerNormGrad, x, x), x, x, uses_c=False)


# ---------------------------------------------------------------- matmul
@pytest.fixture(params=["blas", "tinyflow"])
def gemm_kind(request):
    """Each tile by numpy's OpenBLAS (one thread of it on each of tinyflow's), then by the hand-written kernel."""
    chosen = native.choose_gemm(request.param)["name"]
    assert ("OpenBLAS" in chosen) == (request.param == "blas"), chosen  # numpy's wheels ship OpenBLAS
    yield request.param
    native.choose_gemm()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, m, n, k", [(1, 1, 1, 1), (1, 3, 5, 7), (1, 4, 64, 256), (1, 65, 17, 257),
                                            (1, 130, 2050, 300), (1, 7, 3, 0), (3, 8, 4099, 72), (2, 1, 1000, 300),
                                            (3, 1000, 1, 64), (2, 1, 1, 50), (4, 100, 33, 20)])
@pytest.mark.parametrize("transposed", ["", "a", "b", "ab"])
def test_gemm_matches_numpy(gemm_kind, batch, m, n, k, dtype, transposed):
    """tf_gemm on batches (one shared matrix, or the batch summed into one output), operands transposed or not, with
    NaN in the output buffer beforehand (it is overwritten, not scaled), and adding to it; rows or columns of one
    (BLAS's matrix-vector product), none to sum over (k = 0), tiles split across threads."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, k, m) if "a" in transposed else (batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, n, k) if "b" in transposed else (batch, k, n)).astype(dtype)
    a, b = (a.transpose(0, 2, 1) if "a" in transposed else a), (b.transpose(0, 2, 1) if "b" in transposed else b)
    tolerance = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    out = gemm(a, b, np.full((batch, m, n), np.nan, dtype))
    np.testing.assert_allclose(out, a @ b, **tolerance)
    np.testing.assert_allclose(gemm(a[:1], b, np.full((batch, m, n), np.nan, dtype)), a[:1] @ b, **tolerance)
    np.testing.assert_allclose(gemm(a, b, np.full((1, m, n), np.nan, dtype))[0], (a @ b).sum(0), **tolerance)
    np.testing.assert_allclose(gemm(a, b[:1], out, accumulate=True), a @ b + a @ b[:1], **tolerance)


def test_gemm_switch_and_blas_threads_put_back(monkeypatch):
    """TINYFLOW_GEMM=tinyflow makes a backend use the hand-written kernel; numpy's OpenBLAS keeps its thread count
    after tinyflow's products (it is held at one only while they run)."""
    from threadpoolctl import threadpool_info
    before = [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()]
    monkeypatch.setenv("TINYFLOW_GEMM", "tinyflow")
    native.GEMM.clear()
    try:
        backend = CBackend()
        assert "hand-written" in backend.gemm and "hand-written" in native.thread_report()["tinyflow"]["gemm"]
        a, b = np.ones((300, 400), np.float32), np.ones((400, 200), np.float32)
        op = build(MatMul, a, b)
        op.compute = lambda *v: pytest.fail("numpy used for a product on the pool's work")
        np.testing.assert_array_equal(backend.call(backend.kernels["MatMul"], op, (a, b)), np.full((300, 200), 400))
    finally:
        native.choose_gemm("blas")
    assert "OpenBLAS" in CBackend().gemm
    CBackend().call(CBackend().kernels["MatMul"], build(MatMul, a, b), (a, b))
    assert [(lib["filepath"], lib["num_threads"]) for lib in threadpool_info()] == before


ONE_OWNER = """
import os, numpy as np
from tinyflow.backends.c_backend import CBackend
backend = CBackend()
main, pool = os.getpid(), set()
def cpu_seconds(task):
    fields = open(f"/proc/self/task/{task}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def others():  # CPU time of the threads that are neither the caller nor tinyflow's workers: OpenBLAS's
    tasks = [t for t in os.listdir("/proc/self/task") if int(t) != main]
    return sum(cpu_seconds(t) for t in tasks if open(f"/proc/self/task/{t}/comm").read().strip() != "tinyflow-pool")
a, b = np.ones((512, 1024), np.float32), np.ones((1024, 1024), np.float32)
kernel = backend.kernels["MatMul"].run
start = others()
for _ in range(40):
    kernel(backend, None, a, b)
tinyflow = others() - start
start = others()
for _ in range(40):
    a @ b
print(tinyflow, others() - start)
"""


def test_tinyflow_products_leave_numpys_blas_threads_idle():
    """One owner of the cores: 40 (512, 1024) @ (1024, 1024) products through the C backend give OpenBLAS's own
    threads no work (tinyflow's pool runs every tile), where numpy's @ keeps them busy."""
    from threadpoolctl import threadpool_info
    if not any(lib["internal_api"] == "openblas" and lib["num_threads"] > 1 for lib in threadpool_info()):
        pytest.skip("needs numpy's OpenBLAS with threads of its own (OPENBLAS_NUM_THREADS > 1, 2+ cores)")
    result = subprocess.run([sys.executable, "-c", ONE_OWNER], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TINYFLOW_NUM_THREADS="2"))
    assert result.returncode == 0, result.stderr[-3000:]
    tinyflow, numpy = map(float, result.stdout.split())
    assert tinyflow <= 0.02 < numpy, (tinyflow, numpy)


def test_a_batch_of_matrices_times_a_matrix_is_one_product_of_all_their_rows(monkeypatch):
    """(8, 5, 4) @ (4, 3): one (40, 4) @ (4, 3) product (numpy's @ makes eight (5, 4) ones), also for a transposed
    batch; the values equal numpy's. Two batches of one shape are one C call too."""
    backend = CBackend()
    backend.small_size = 0
    products = []
    monkeypatch.setattr(c_backend_module, "gemm", lambda a, b, out, **kw: products.append(a.shape) or gemm(a, b, out))
    a, b = values(np.float64, (8, 50, 40)), values(np.float64, (40, 300), seed=1)
    for left, right in ((a, b), (a.transpose(1, 0, 2), b), (a, values(np.float64, (8, 40, 300), seed=2))):
        op = build(MatMul, left, right)
        op.compute = lambda *v: pytest.fail("numpy's batched @ used")
        np.testing.assert_allclose(backend.call(backend.kernels["MatMul"], op, (left, right)), left @ right,
                                   rtol=1e-12, atol=1e-12)
    assert products == [(400, 40), (400, 40), (8, 50, 40)]


@pytest.mark.parametrize("groups", [1, 2])
def test_convolutions_on_the_hand_written_gemm(gemm_kind, monkeypatch, groups):
    """The convolutions' products (filters times tap-major columns, and their transposes, a product per group) run
    on tf_gemm, with either kernel for its tiles, and match numpy."""
    backend = CBackend()
    backend.small_size = 0
    products = []
    monkeypatch.setattr(c_backend_module, "gemm", lambda a, b, out, **kw: products.append(a.shape) or gemm(a, b, out))
    x, w = values(np.float64, (2, 4, 6, 5)), values(np.float64, (6, 4 // groups, 3, 3), seed=1)
    window = dict(stride=1, padding=1, groups=groups)
    grad = values(np.float64, (2, 6, 6, 5), seed=2)
    check(backend, build(conv.Conv, x, w, **window), x, w)
    check(backend, build(conv.ConvBackInput, grad, w, x, **window), grad, w, x)
    check(backend, build(conv.ConvBackFilter, x, grad, w, **window), x, grad, w)
    assert [shape[0] for shape in products] == [groups] * 3


# ---------------------------------------------------------------- fused optimizer updates
OPTIMIZERS = [
    (tfl.optim.SGD, dict(lr=0.1)), (tfl.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    (tfl.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    (tfl.optim.Adam, dict(lr=0.01)), (tfl.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (tfl.optim.AdamW, dict(lr=0.01)), (tfl.optim.RMSProp, dict(lr=0.01)),
    (tfl.optim.RMSProp, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    (tfl.optim.RMSProp, dict(lr=0.01, centered=True)), (tfl.optim.RMSProp, dict(lr=0.01, momentum=0.5)),
    (tfl.optim.AdaGrad, dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 37, 100_003, "streaming"])
@pytest.mark.parametrize("optimizer, hyper", OPTIMIZERS, ids=[f"{o.__name__}-{i}" for i, (o, _) in enumerate(OPTIMIZERS)])
def test_fused_optimizer_kernels_match_the_numpy_formula(optimizer, hyper, dtype, size):
    if size == "streaming":  # just past the size from which the updates run their build for arrays in memory
        size = native.lib.TF_STREAMING_BYTES // np.dtype(dtype).itemsize + 3
    start = values(dtype, (size,))
    target = values(dtype, (size,), seed=5)
    results = {}
    for backend in ("numpy", "c"):
        with tfl.Graph().as_default():
            w = tfl.Variable(start, name="w")
            train = optimizer(**hyper).minimize(tfl.reduce_sum(tfl.square(w - target)))
            with tfl.Session(backend=backend) as sess:
                for _ in range(3):
                    sess.run(train)
            results[backend] = w.value
    assert results["c"].dtype == dtype
    np.testing.assert_allclose(results["c"], results["numpy"], **TOLERANCE[np.dtype(dtype)])


@pytest.mark.parametrize("optimizer, hyper", OPTIMIZERS, ids=[f"{o.__name__}-{i}" for i, (o, _) in enumerate(OPTIMIZERS)])
def test_the_streaming_and_the_cached_builds_of_the_updates_give_the_same_bits(optimizer, hyper):
    """Arrays past TF_STREAMING_BYTES run another build of the update loops (256-bit on AVX-512 machines): the
    values it gives must be the other build's, bit for bit; the inputs of the small run are the large one's start."""
    small, large = 1003, native.lib.TF_STREAMING_BYTES // 4 + 3
    results = []
    for size in (small, large):
        with tfl.Graph().as_default():
            w = tfl.Variable(values(np.float32, (size,)), name="w")
            train = optimizer(**hyper).minimize(tfl.reduce_sum(tfl.square(w - values(np.float32, (size,), seed=5))))
            with tfl.Session(backend="c") as sess:
                for _ in range(3):
                    sess.run(train)
            results.append(w.value)
    np.testing.assert_array_equal(results[1][:small], results[0])


SPECIAL_GRADIENTS = np.array([0.0, -0.0, 1e-30, 1e-20, -3e-22, 1e-19, 1e20, -2e19, 3e38, np.inf, -np.inf, np.nan,
                              1.0, -0.5, 1e-3], np.float32)  # square zero, denormal, overflowing, and none of these


@pytest.mark.parametrize("optimizer, hyper", [o for o in OPTIMIZERS if o[0] is not tfl.optim.SGD],
                         ids=[f"{o.__name__}-{i}" for i, (o, _) in enumerate(OPTIMIZERS) if o is not tfl.optim.SGD])
def test_optimizer_kernels_keep_numpys_zeros_denormals_infinities_and_nans(optimizer, hyper):
    """Whatever the gradient's square is (0, denormal, overflowing to inf, NaN), each step of the C kernels gives
    what numpy's formula gives, in every case of their loops (momentum, AMSGrad, centered)."""
    # each special value at every position of a 16-float vector (and in the scalar tail): the kernels' vector
    # loops run them, not only their remainder loops
    gradients = np.concatenate([np.roll(SPECIAL_GRADIENTS, shift) for shift in range(16)] + [SPECIAL_GRADIENTS[:7]])
    start = np.linspace(-1, 1, gradients.size).astype(np.float32)
    results = {}
    for backend in ("numpy", "c"):
        with tfl.Graph().as_default():
            w = tfl.Variable(start, name="w")
            grad = tfl.Placeholder(start.shape, name="grad")
            train = optimizer(**hyper).apply_gradients([(grad, w)])
            with tfl.Session(backend=backend) as sess:
                steps = []
                for scale in (1.0, 1e-3, 1.0):  # the moments then hold a mix of the special values
                    with np.errstate(all="ignore"):
                        sess.run(train, {grad: gradients * np.float32(scale)})
                    steps.append(w.value.copy())
            results[backend] = steps
    for c_step, numpy_step in zip(results["c"], results["numpy"]):
        np.testing.assert_array_equal(np.isnan(c_step), np.isnan(numpy_step))
        np.testing.assert_array_equal(np.isinf(c_step), np.isinf(numpy_step))
        np.testing.assert_allclose(c_step, numpy_step, **TOLERANCE[np.dtype(np.float32)])  # as the formula test


def test_optimizer_kernels_use_the_c_path_for_float_parameters(c_backend):
    with tfl.Graph().as_default():
        w = tfl.Variable(np.ones(4, np.float32), name="w")
        train = tfl.optim.Adam(0.1).minimize(tfl.reduce_sum(w * w))
        update = train.inputs[0]
        update.update = lambda *a, **k: pytest.fail("numpy update used")
        with tfl.Session(backend="c") as sess:
            sess.run(train)
    assert np.all(w.value < 1.0)


# ---------------------------------------------------------------- the buffer pool
def test_training_with_varying_batches_keeps_the_pool_bounded_and_close_releases_it(monkeypatch):
    monkeypatch.setenv("TINYFLOW_POOL_MB", "2")
    x = tfl.Placeholder((None, 256), name="x")
    w = tfl.Variable(np.full((256, 256), 0.01, np.float32), name="w")
    loss = tfl.reduce_mean(tfl.square(tfl.relu(tfl.matmul(x, w))))
    train = tfl.optim.Adam(0.01).minimize(loss)
    sess = tfl.Session(backend="c")
    for batch in range(20, 400, 13):
        sess.run(train, {x: np.ones((batch, 256), np.float32)})
        assert sess.backend.pool.bytes <= 2 << 20
    assert sess.backend.pool.bytes > 0
    sess.close()
    assert sess.backend.pool.bytes == 0
