"""Fuzzing the C and OpenCL kernel tables against numpy, NaN and inf semantics included.

Hypothesis draws, for every table kernel: an op case of tests/op_cases.py (so every op type
of every table is reached), a dtype, a size (inputs repeated along their first axis),
a memory layout (contiguous, strided, Fortran-ordered), and special values (NaN, ±inf,
huge, tiny, ±0) written into the float inputs; plus fully random shapes for the
broadcasting binary ops, the unary math and the reductions. The table backend (small-array
threshold 0, so its kernels really run) must agree with the numpy backend: same shape,
NaN where numpy has NaN, the same infinities, and close finite values. Time is bounded by
`max_examples`; scripts/sanitize.sh also runs this file under ASan/UBSan.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyflow as tfl
from kernel_runs import run_kernels
from op_cases import CASES
from tinyflow.backends import CBackend, OpenCLBackend

CLASSES = {"c": CBackend, "opencl": OpenCLBackend}
TABLE_BACKENDS = [name for name, cls in CLASSES.items() if cls.is_available()]
if not TABLE_BACKENDS:
    pytest.skip("neither the C library nor OpenCL is available here", allow_module_level=True)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30, 88.5, -88.5, 1e4, -1e4]
# ops whose numpy reference has no NaN/inf semantics worth comparing: the optimizers turn a NaN
# anywhere into NaN everywhere by design, and finite differences of a gradient op are not the point
FINITE_ONLY = {"ApplySGD", "ApplyAdam", "ApplyRMSProp", "ApplyAdaGrad"}
# ops that add up many values: with both +1e30 and -1e30 among them, what survives of the small
# terms depends on the order of the additions (numpy's pairwise order is no more right than another),
# so their inputs get the other special values only (NaN, inf and overflow still reach them)
ACCUMULATING = {"ReduceSum", "ReduceMean", "MatMul", "Conv", "ConvBackInput", "ConvBackFilter", "ConvTranspose", "AddN",
                "SumToShapeOf", "SoftmaxGrad", "LogSoftmaxGrad", "SoftmaxCrossEntropy", "SoftmaxCrossEntropyGrad",
                "MaxPoolGrad", "LayerNorm", "LayerNormGrad", "Recurrence", "RecurrenceGrad"}


def table_op_types(backend):
    """The op types of the backend's table that op_cases.py can build."""
    return sorted(t for t in CLASSES[backend].kernels if t in CASES)


def run(backend, build, inputs):
    """The value of build(*placeholders) on `backend` with every table kernel used (threshold 0)."""
    return np.asarray(run_kernels(backend, build, inputs))


def assert_same_semantics(got, expected, dtype, inputs=()):
    """Same shape, NaN exactly where numpy has NaN, the same infinities, close finite values.

    A sum of large terms that cancel (1e4 - 1e4 + 0.3) is only as exact as its terms' rounding, and numpy's
    float32 pairwise sum and the kernels' double accumulation round differently: where the output is smaller
    than an input (a reduction), the tolerance scales with the inputs' magnitude too."""
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg="NaN positions differ")
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)],
                                  err_msg="infinities differ")
    if finite.any():
        scale = 1.0 + float(np.max(np.abs(expected[finite])))
        for value in inputs:
            value = np.asarray(value)
            if value.dtype.kind == "f" and value.size > got.size and np.isfinite(value).any():
                scale = max(scale, 1.0 + float(np.max(np.abs(value[np.isfinite(value)]))))
        tolerance = 2e-4 if np.dtype(dtype) == np.float32 else 1e-9
        np.testing.assert_allclose(got[finite], expected[finite], rtol=tolerance, atol=tolerance * scale)


def layout(array, kind):
    """The same values as a contiguous, strided (every other element) or Fortran-ordered array."""
    if array.ndim == 0 or array.dtype.kind != "f" or kind == "contiguous":
        return array
    if kind == "strided":
        return np.repeat(array, 2, axis=-1)[..., ::2]
    return np.asfortranarray(array)


@st.composite
def case_inputs(draw, op_type):
    """(case, inputs, dtype) for one op type: a case of it, with sizes, dtypes, layouts and special values."""
    case = draw(st.sampled_from(CASES[op_type]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    repeat = draw(st.integers(1, 6))
    kind = draw(st.sampled_from(["contiguous", "strided", "fortran"]))
    inputs = []
    for value in case.inputs:
        if value.ndim and value.shape[0] > 1 and repeat > 1:
            value = np.concatenate([value] * repeat)
        if value.dtype.kind == "f":
            value = value.astype(dtype)
            if op_type not in FINITE_ONLY and value.size and draw(st.booleans()):
                flat = value.reshape(-1).copy()
                positions = draw(st.lists(st.integers(0, flat.size - 1), min_size=1, max_size=4))
                specials = [v for v in SPECIALS if abs(v) < 1e29] if op_type in ACCUMULATING else SPECIALS
                for position in positions:
                    flat[position] = draw(st.sampled_from(specials))
                value = flat.reshape(value.shape)
            value = layout(value, kind)
        inputs.append(value)
    return case, inputs, dtype


TABLE_OP_TYPES = [(backend, op_type) for backend in TABLE_BACKENDS for op_type in table_op_types(backend)]


@pytest.mark.parametrize("table_backend, op_type", TABLE_OP_TYPES, ids=[f"{b}-{t}" for b, t in TABLE_OP_TYPES])
@settings(FUZZ, max_examples=12)  # per kernel: every kernel of every table is fuzzed in every run
@given(data=st.data())
def test_every_table_kernel_agrees_with_numpy_on_fuzzed_inputs(table_backend, op_type, data):
    case, inputs, dtype = data.draw(case_inputs(op_type))
    try:
        expected = run("numpy", case.build, inputs)
    except tfl.TinyflowError:
        return  # repeating made shapes the op refuses (numpy refuses them too); nothing to compare
    got = run(table_backend, case.build, inputs)
    assert_same_semantics(got, expected, dtype, inputs)


values_with_specials = st.floats(allow_nan=True, allow_infinity=True, width=32)


@st.composite
def arrays(draw, shape, dtype):
    array = draw(hnp.arrays(dtype, shape, elements=values_with_specials))
    return layout(array, draw(st.sampled_from(["contiguous", "strided", "fortran"])))


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
@FUZZ
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=6),
       op=st.sampled_from([tfl.add, tfl.subtract, tfl.multiply, tfl.divide, tfl.maximum, tfl.minimum]),
       dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_binary_kernels_on_random_broadcasts_and_special_values(table_backend, shapes, op, dtype, data):
    a, b = (data.draw(arrays(s, dtype)) for s in shapes.input_shapes)
    assert_same_semantics(run(table_backend, op, [a, b]), run("numpy", op, [a, b]), dtype)


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
@FUZZ
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=7),
       op=st.sampled_from([tfl.negative, tfl.square, tfl.sqrt, tfl.exp, tfl.log, tfl.abs, tfl.sigmoid, tfl.tanh,
                           tfl.relu, tfl.softplus]),
       dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_unary_kernels_on_random_shapes_and_special_values(table_backend, shape, op, dtype, data):
    x = data.draw(arrays(shape, dtype))
    assert_same_semantics(run(table_backend, op, [x]), run("numpy", op, [x]), dtype)


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
@FUZZ
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=7),
       op=st.sampled_from([tfl.reduce_sum, tfl.reduce_mean, tfl.reduce_max]), keepdims=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_reductions_on_random_axes_and_special_values(table_backend, shape, op, keepdims, dtype, data):
    x = data.draw(arrays(shape, dtype))
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))

    def build(p):
        return op(p, axis=None if axes is None else tuple(sorted(axes)), keepdims=keepdims)
    assert_same_semantics(run(table_backend, build, [x]), run("numpy", build, [x]), dtype, [x])
