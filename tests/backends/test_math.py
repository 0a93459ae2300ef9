"""Accuracy of tinyflow's vectorisable float math (ckernels/include/tf_math.h) against float64.

The same header serves the C library's kernels and the fused kernels generated at run time,
so each function is measured both ways: compiled as the fusion compiler compiles kernels
(its flags, -march=native included) and through the library kernels that use it. Every
float32 result must be within 2 ulp of the float64 value, and NaN, ±inf, ±0, overflow,
underflow and denormals must come out as numpy gives them.
"""
import math

import numpy as np
import pytest

from tinyflow.backends import native
from tinyflow.backends.c_backend import flat_kernel
from tinyflow.backends import c_codegen as codegen_c, compiler

MAX_ULP = 2.0
_erf = np.frompyfunc(math.erf, 1, 1)
REFERENCES = {  # float64 values numpy (or math) gives
    "exp": np.exp,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sigmoid": lambda x: np.where(x < 0, np.exp(x) / (1 + np.exp(x)), 1 / (1 + np.exp(-x))),
    "erf": lambda x: _erf(x).astype(np.float64),
}
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17549435e-38, -1.17549435e-38, 1e-30,
                  1.0, -1.0, 0.5, 88.72283, 88.72284, 89.0, -87.33654, -87.34, -103.97, -103.98, -104.0,
                  -150.0, 1e30, -1e30, 3.4028235e38, -3.4028235e38, 0.625, -0.625, 0.99999994, 3.9999998, 4.0],
                 np.float32)


def inputs(size=200_000):
    """Random bit patterns (every binade, denormals included), the ranges that matter, and the edges."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, size, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ranges = [rng.uniform(-110, 110, size), rng.uniform(-5, 5, size), rng.uniform(-1, 1, size // 4) ** 7]
    return np.concatenate([bits[np.isfinite(bits)], *(r.astype(np.float32) for r in ranges), EDGES])


def ulp(values):
    """The float32 ulp at each value (the largest float's own, not the overflow past it)."""
    spacing = np.spacing(np.minimum(np.abs(values), np.float32(3.4e38))).astype(np.float64)
    spacing[spacing == 0] = 2.0 ** -149
    return spacing


def ulp_errors(got, x, name):
    """(error in ulps at each finite expected value, those inputs, indices where NaN/inf differ from numpy's)."""
    with np.errstate(all="ignore"):
        exact = REFERENCES[name](x.astype(np.float64))
        rounded = exact.astype(np.float32)
    finite = np.isfinite(rounded) & np.isfinite(exact)
    errors = np.abs(got[finite].astype(np.float64) - exact[finite]) / ulp(rounded[finite])
    special = ~finite & ~((got == rounded) | (np.isnan(got) & np.isnan(rounded)))
    special |= (rounded == 0) & (np.signbit(got) != np.signbit(rounded))  # -0 where numpy gives -0
    return errors, x[finite], np.flatnonzero(special)


def check(got, x, name):
    errors, where, wrong = ulp_errors(got, x, name)
    worst = int(np.argmax(errors))
    assert errors[worst] <= MAX_ULP, f"tf_{name}f is {errors[worst]:.2f} ulp off at x = {where[worst]!r}"
    assert wrong.size == 0, f"tf_{name}f({x[wrong][:5]}) = {got[wrong][:5]}, numpy gives otherwise"


@pytest.fixture(scope="module")
def generated():
    """The header compiled as the fusion compiler compiles generated kernels (same flags, same cache)."""
    names = sorted(REFERENCES) + ["sigmoid_common"]
    source = codegen_c.math_header() + "".join(
        f"void run_{n}(const float *x, float *y, long n) {{ for (long i = 0; i < n; i++) y[i] = tf_{n}f(x[i]); }}\n"
        for n in names).replace("tf_sigmoid_commonf", "tf_sigmoidf_common")
    module = compiler.load(source, "".join(f"void run_{n}(const float *x, float *y, long n);" for n in names))
    if module is None:
        pytest.skip("no C compiler: generated kernels run with numpy (install gcc)")
    return module


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_generated_kernels_math_is_within_2_ulp_and_keeps_numpys_special_values(generated, name):
    x = inputs()
    y = np.empty_like(x)
    getattr(generated.lib, f"run_{name}")(generated.ffi.from_buffer("float[]", x),
                                          generated.ffi.from_buffer("float[]", y), x.size)
    check(y, x, name)


LIBRARY_KERNELS = {name: flat_kernel(name.capitalize()) for name in ("exp", "log", "tanh", "sigmoid")}
# the C library's float32 kernels built on tf_math.h (generated from the elementwise table)


@pytest.mark.skipif(not native.is_built(), reason="the C kernel library is not built (pip install -e .)")
@pytest.mark.parametrize("name", sorted(LIBRARY_KERNELS))
def test_library_kernels_math_is_within_2_ulp(name):
    x = inputs()
    y = np.empty_like(x)
    ptr = native.ffi.from_buffer
    LIBRARY_KERNELS[name](ptr("float[]", x), ptr("float[]", y), x.size)
    check(y, x, name)


def test_the_common_sigmoid_gives_the_full_ones_bits_over_its_whole_range(generated):
    """tf_sigmoidf_common drops the NaN, infinity and denormal cases: where it is used (|x| <= 86) nothing changes."""
    rng = np.random.default_rng(3)
    limit = np.float32(86.0)
    edges = np.array([limit, -limit, np.nextafter(limit, 0), 0.0, -0.0, 1e-45, -1e-45, 1e-38, 1.0, -1.0],
                     np.float32)
    x = np.concatenate([rng.uniform(-86, 86, 1_000_000).astype(np.float32), rng.uniform(-1, 1, 100_000) ** 9,
                        edges]).astype(np.float32)
    common, full = np.empty_like(x), np.empty_like(x)
    for name, y in (("sigmoid_common", common), ("sigmoid", full)):
        getattr(generated.lib, f"run_{name}")(generated.ffi.from_buffer("float[]", x),
                                              generated.ffi.from_buffer("float[]", y), x.size)
    np.testing.assert_array_equal(common.view(np.int32), full.view(np.int32))


def test_the_common_sigmoid_is_within_1_5_ulp_at_every_257th_float_of_its_range(generated):
    """Its error bound (tf_math.h): every float in [-86, 86] was checked once; here one in 257, both signs."""
    positive = np.arange(0, np.float32(86.0).view(np.int32) + 1, 257, dtype=np.int32).view(np.float32)
    x = np.concatenate([positive, -positive])
    y = np.empty_like(x)
    generated.lib.run_sigmoid_common(generated.ffi.from_buffer("float[]", x), generated.ffi.from_buffer("float[]", y),
                                     x.size)
    errors, where, wrong = ulp_errors(y, x, "sigmoid")
    assert wrong.size == 0 and errors.max() <= 1.51, f"{errors.max():.3f} ulp off at x = {where[np.argmax(errors)]!r}"


@pytest.mark.skipif(not native.is_built(), reason="the C kernel library is not built (pip install -e .)")
@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf, 87.0, -100.0])
def test_library_sigmoid_in_place_runs_a_block_with_one_uncommon_value_in_full(generated, special):
    """tf_sigmoid checks a block of x before it writes y, so y may be x; the full form takes the odd block."""
    x = np.random.default_rng(4).uniform(-20, 20, 1000).astype(np.float32)
    x[300] = special  # in the second block of 256
    expected = np.empty_like(x)
    generated.lib.run_sigmoid(generated.ffi.from_buffer("float[]", x), generated.ffi.from_buffer("float[]", expected),
                              x.size)
    flat_kernel("Sigmoid")(native.ffi.from_buffer("float[]", x), native.ffi.from_buffer("float[]", x), x.size)
    np.testing.assert_array_equal(x.view(np.int32), expected.view(np.int32))


@pytest.mark.skipif(not native.is_built(), reason="the C kernel library is not built (pip install -e .)")
def test_library_softplus_is_log1p_of_exp_within_2_ulp_of_float64():
    x = inputs()
    y = np.empty_like(x)
    flat_kernel("Softplus")(native.ffi.from_buffer("float[]", x), native.ffi.from_buffer("float[]", y), x.size)
    with np.errstate(all="ignore"):
        exact = np.logaddexp(0, x.astype(np.float64))
        rounded = exact.astype(np.float32)
    finite = np.isfinite(rounded)
    # two functions and an add: each within an ulp, so the sum within three
    assert (np.abs(y[finite] - exact[finite]) / ulp(rounded[finite])).max() <= 3.0
    assert np.array_equal(y[~finite], rounded[~finite], equal_nan=True)


@pytest.mark.skipif(not native.is_built(), reason="the C kernel library is not built (pip install -e .)")
@pytest.mark.parametrize("name", sorted(LIBRARY_KERNELS))
def test_library_and_generated_kernels_give_the_same_bits(generated, name):
    """Both compile tf_math.h without FMA contraction: a fused kernel never changes what the library computed."""
    x = inputs()
    library, fused = np.empty_like(x), np.empty_like(x)
    LIBRARY_KERNELS[name](native.ffi.from_buffer("float[]", x), native.ffi.from_buffer("float[]", library), x.size)
    getattr(generated.lib, f"run_{name}")(generated.ffi.from_buffer("float[]", x),
                                          generated.ffi.from_buffer("float[]", fused), x.size)
    np.testing.assert_array_equal(library.view(np.int32), fused.view(np.int32))
