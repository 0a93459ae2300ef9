"""Every kernel of every backend's table against numpy, on every op case of tests/op_cases.py.

The op cases are small, and the C backend sends small inputs to numpy; so each case
runs three ways on each table backend (C, OpenCL):
  * as written, with the small-array threshold lowered to 0: the table kernel must run;
  * enlarged (inputs repeated along their first axis where the op allows it) past the
    threshold, with the backend's normal routing: the table kernel must run;
  * fed as non-contiguous views (and transposed where the case is elementwise).
Each run must agree with the numpy backend, and the run report must show the op type
ran as a table kernel whenever its entry accepts the case's inputs; every op type in a
table must run as a kernel on at least one case.
"""
import math

import numpy as np
import pytest

import tinyflow as tfl
from kernel_runs import run_kernels
from op_cases import CASES, all_cases
from tinyflow.backends import CBackend, OpenCLBackend
from tinyflow.backends.c_backend import SMALL
from tinyflow.nodes import OP_TYPES
from tinyflow.ops.elementwise_ops import ElementwiseOp

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

CLASSES = {"c": CBackend, "opencl": OpenCLBackend}
TABLE_BACKENDS = [name for name, cls in CLASSES.items() if cls.is_available()]
TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-4, atol=2e-5), np.dtype(np.float64): dict(rtol=1e-9, atol=1e-11)}
ELEMENTWISE = {t for t, cls in OP_TYPES.items() if issubclass(cls, ElementwiseOp)}  # the table's ops

if not TABLE_BACKENDS:
    pytest.skip("neither the C library nor OpenCL is available here", allow_module_level=True)


def run(backend, case, inputs, small_size=None):
    """(fetched value, the session's run report) of the case's op on `inputs`."""
    with tfl.Graph().as_default():
        placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
        out = case.build(*placeholders)
        with tfl.Session(backend=backend) as sess:
            if small_size is not None:
                sess.backend.small_size = small_size
            value = sess.run(out, dict(zip(placeholders, inputs)))
            return value, sess.backend.report, out


def cast(inputs, dtype):
    return [np.ascontiguousarray(v, dtype=dtype) if v.dtype.kind == "f" else v for v in inputs]


def enlarged(inputs):
    """The inputs repeated along their first axis so that the largest passes SMALL elements (None if none can)."""
    repeatable = [v.size for v in inputs if v.ndim and v.shape[0] > 1]
    largest = max(repeatable, default=0)
    if largest == 0:
        return None
    factor = math.ceil(SMALL / largest) + 1
    return [np.concatenate([v] * factor) if v.ndim and v.shape[0] > 1 else v for v in inputs]


def strided(array):
    """The same values as a non-contiguous view (every other element of a twice-as-long last axis)."""
    if array.ndim == 0 or array.dtype.kind != "f":
        return array
    doubled = np.repeat(array, 2, axis=-1)
    return doubled[..., ::2]


def compare(got, expected, dtype):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, **TOLERANCE[np.dtype(dtype)])


def table_kernel_ran(report, op_type):
    return report.kernel_ops[op_type] > 0


CASE_IDS = [i for i, _ in all_cases()]


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case_id, case", all_cases(), ids=CASE_IDS)
def test_every_op_case_on_every_table_kernel(table_backend, dtype, case_id, case):
    backend = table_backend
    op_type = case_id.rsplit("-", 1)[0]
    inputs = cast(case.inputs, dtype)
    expected, _, _ = run("numpy", case, inputs)
    got, report, out = run(backend, case, inputs, small_size=0)
    compare(got, expected, dtype)
    ran = table_kernel_ran(report, op_type)
    if op_type in CLASSES[backend].kernels:
        _record(backend, dtype, op_type, ran)

    bigger = enlarged(inputs)
    if bigger is not None:
        try:
            expected, _, _ = run("numpy", case, bigger)
        except (tfl.TinyflowError, ValueError):
            bigger = None  # the op's shapes do not allow repeating along the first axis
    if bigger is not None:
        got, report, _ = run(backend, case, bigger)  # the backend's own small-size routing
        compare(got, expected, dtype)
        if ran:  # accepted when small: accepted when large, and really run in the kernel
            assert table_kernel_ran(report, op_type), f"{op_type} did not run its {backend} kernel on {case_id}"

    views = [strided(v) for v in inputs]
    if op_type in ELEMENTWISE and inputs[0].ndim == 2:
        views = [v.T for v in cast([v.T for v in inputs], dtype)]  # transposed (Fortran-ordered) views
    expected, _, _ = run("numpy", case, inputs)
    got, report, _ = run(backend, case, views, small_size=0)
    compare(got, expected, dtype)
    if ran:
        assert table_kernel_ran(report, op_type), f"{op_type} fell back to numpy for non-contiguous inputs"


_RAN = {}


def _record(backend, dtype, op_type, ran):
    key = (backend, np.dtype(dtype).name, op_type)
    _RAN[key] = _RAN.get(key, False) or ran


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
def test_every_table_kernel_ran_on_some_op_case(table_backend):
    """Runs after the parity test above (pytest keeps file order): no kernel of the table was only ever skipped."""
    backend = table_backend
    kernels = CLASSES[backend].kernels
    covered = [t for t in kernels if t in CASES]
    if not any(key[0] == backend for key in _RAN):  # the parity test was deselected: run the first cases here
        for op_type in covered:
            for case in CASES[op_type]:
                _, report, _ = run(backend, case, cast(case.inputs, np.float32), small_size=0)
                _record(backend, np.float32, op_type, table_kernel_ran(report, op_type))
    never = sorted(t for t in covered if not any(_RAN.get((backend, d, t)) for d in ("float32", "float64")))
    assert never == []
    assert len(covered) >= 30, sorted(set(kernels) - set(covered))  # the op cases cover nearly the whole table


@pytest.mark.parametrize("table_backend", TABLE_BACKENDS)
@pytest.mark.parametrize("shape", [(0,), (1,), (0, 3), (1, 1), (5, 0)])
@pytest.mark.parametrize("op", [tfl.exp, tfl.negative, tfl.relu, tfl.sigmoid])
def test_size_0_and_1_inputs(table_backend, shape, op):
    backend = table_backend
    x = np.linspace(-2, 2, int(np.prod(shape))).reshape(shape).astype(np.float32)
    got, expected = (run_kernels(name, lambda p: op(p) + p, [x]) for name in (backend, "numpy"))
    compare(got, expected, np.float32)
