"""The OpenCL backend against numpy: every op case, awkward shapes, residency, fallback, training."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyflow as tfl
from kernel_runs import run_kernels
from op_cases import all_cases
from tinyflow.ops.normalization import LayerNorm, LayerNormGrad
from tinyflow.backends import OpenCLBackend, opencl_runtime
from tinyflow.testing import gradcheck

pytestmark = pytest.mark.skipif(not OpenCLBackend.is_available(),
                                reason=f"OpenCL unavailable: {opencl_runtime.why_unavailable() or 'n/a'}")
TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-5, atol=1e-5), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}


def run_on(backend, build, inputs):
    """Build on fresh placeholders in a new graph, run once; returns (value, backend used)."""
    with tfl.Graph().as_default():
        placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in inputs]
        out = build(*placeholders)
        with tfl.Session(backend=backend) as sess:
            return sess.run(out, dict(zip(placeholders, inputs))), sess.backend


# every op case against numpy, with the kernel really running: tests/backends/test_kernel_parity.py


@pytest.mark.parametrize("case", [c for _, c in all_cases()], ids=[i for i, _ in all_cases()])
def test_gradients_on_opencl_match_finite_differences(case):
    gradcheck(case.build, case.inputs, backend="opencl", **case.options)


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4),
       op=st.sampled_from([tfl.add, tfl.subtract, tfl.multiply, tfl.maximum]), strided=st.booleans())
def test_broadcasting_and_awkward_shapes(shapes, op, strided):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes.input_shapes)
    if strided and a.ndim:
        a = np.repeat(a, 2, axis=-1)[..., ::2]  # a non-contiguous view
    expected, _ = run_on("numpy", op, [a, b])
    got, _ = run_on("opencl", op, [a, b])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5), data=st.data())
def test_reductions_over_any_axes(shape, data):
    axes = tuple(data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True)))
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for fn in (tfl.reduce_sum, tfl.reduce_mean, tfl.reduce_max):
        expected, _ = run_on("numpy", lambda v: fn(v, axes), [x])
        got, _ = run_on("opencl", lambda v: fn(v, axes), [x])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, axis", [((1, 1), -1), ((5, 1), -1), ((1, 7), -1), ((3, 4, 5), 1), ((2, 3, 4), 0),
                                         ((4, 1, 3), 2), ((6, 1000), -1)])
@pytest.mark.parametrize("non_contiguous", [False, True])
def test_layer_norm_kernels_on_awkward_shapes(shape, axis, non_contiguous):
    rng = np.random.default_rng(2)
    x, g = (rng.uniform(-3, 3, shape).astype(np.float32) for _ in range(2))
    x[(0,) * x.ndim] = 1e4  # one large value: the two-pass variance keeps the others' precision
    if non_contiguous:
        x, g = (np.repeat(v, 2, axis=-1)[..., ::2] for v in (x, g))
    builds = {"LayerNorm": lambda v, _: LayerNorm(v, axis=axis, eps=1e-3),
              "LayerNormGrad": lambda v, w: LayerNormGrad(v, w, axis=axis, eps=1e-3)}
    for op_type, build in builds.items():
        expected, _ = run_on("numpy", build, [x, g])
        got, backend = run_on("opencl", build, [x, g])
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        assert backend.report.kernel_ops[op_type] == 1 and backend.report.host_ops == {}, str(backend.report)


def test_variables_stay_on_the_device_between_runs():
    x = tfl.Placeholder((None, 64), name="x")
    w = tfl.Variable(np.full((64, 64), 0.01, np.float32), name="w")
    loss = tfl.reduce_mean(tfl.square(tfl.matmul(x, w)))
    train = tfl.optim.Adam(0.01).minimize(loss)
    batch = np.ones((8, 64), np.float32)
    with tfl.Session(backend="opencl") as sess:
        sess.run(train, {x: batch})
        sess.run(train, {x: batch})
        report = sess.backend.report
        assert report.host_ops == {}
        assert report.to_device == batch.nbytes  # only the feed crossed; w and Adam's slots stayed
        assert report.to_host == 0
        on_device = w.device_mirror.array.get()
    np.testing.assert_array_equal(w.value, on_device)  # reading .value synchronises
    w.value = np.zeros((64, 64), np.float32)  # and writing it refreshes the device copy next run
    with tfl.Session(backend="opencl") as sess:
        assert sess.run(tfl.reduce_sum(tfl.identity(w))) == 0.0


def test_ops_without_a_kernel_run_on_the_host_and_are_reported():
    a = tfl.Placeholder((2, 3), name="a")
    joined = tfl.concat([tfl.exp(a), a], axis=1)  # no OpenCL concat: the host does it
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tfl.Session(backend="opencl") as sess:
        out = sess.run(tfl.reduce_sum(joined * 2.0), {a: value})
        report = sess.backend.report
    assert out == pytest.approx(2 * (np.exp(value).sum() + value.sum()), rel=1e-6)
    assert report.host_ops["Concat"] == 1 and report.kernel_ops["Exp"] == 1
    assert "Concat x1" in str(report)


def test_device_selection_and_errors(monkeypatch):
    assert "opencl" in tfl.backends.available()
    default = tfl.backends.get_backend("opencl").runtime.index
    assert tfl.backends.get_backend(f"opencl:{default}").runtime.index == default
    with pytest.raises(tfl.BackendError, match=r"no OpenCL device '7'.*0: "):
        tfl.backends.get_backend("opencl:7")
    monkeypatch.setenv("TINYFLOW_OPENCL_DEVICE", "9")
    with pytest.raises(tfl.BackendError, match="no OpenCL device '9'"):
        tfl.backends.get_backend("opencl")
    monkeypatch.delenv("TINYFLOW_OPENCL_DEVICE")
    assert tfl.Session().backend.name != "opencl"  # never chosen by default
    monkeypatch.setattr(opencl_runtime, "devices", lambda: [])
    assert "opencl" not in tfl.backends.available()
    with pytest.raises(tfl.BackendError, match=r"pip install -e \".\[opencl\]\""):
        tfl.backends.get_backend("opencl")


def test_a_device_whose_compiler_fails_is_skipped_by_default_and_an_error_when_named(monkeypatch, capsys):
    real = opencl_runtime.choose_device("opencl")
    assert opencl_runtime.build_error(real[3]) == ""  # the probe kernel compiles on a working device
    import types
    broken = types.SimpleNamespace(extensions="", max_compute_units=2)  # the pocl wheel's device on a CPU its LLVM
    # does not know
    reason = "cannot compile a kernel: error: unknown target CPU 'generic'"
    monkeypatch.setattr(opencl_runtime, "devices", lambda: [(0, "Old pocl", "cpu", broken), (1, *real[1:])])
    monkeypatch.setattr(opencl_runtime, "build_error", lambda device: reason if device is broken else "")
    monkeypatch.delenv("TINYFLOW_OPENCL_DEVICE", raising=False)
    assert opencl_runtime.choose_device("opencl")[0] == 1
    assert opencl_runtime.why_unavailable() == ""
    with pytest.raises(tfl.BackendError, match=r"0: Old pocl / cpu: cannot compile a kernel: error: unknown target"):
        opencl_runtime.choose_device("opencl:0")
    monkeypatch.setenv("TINYFLOW_OPENCL_DEVICE", "0")
    with pytest.raises(tfl.BackendError, match="Choose another device"):
        opencl_runtime.choose_device("opencl")
    monkeypatch.setattr(opencl_runtime, "devices", lambda: [(0, "Old pocl", "cpu", broken)])
    assert "no OpenCL device here can run a kernel (0: Old pocl / cpu: cannot compile a kernel: error: unknown " \
        "target CPU 'generic')" in opencl_runtime.why_unavailable()
    assert "apt-get install pocl-opencl-icd" in opencl_runtime.why_unavailable()
    assert "opencl" not in tfl.backends.available()
    with pytest.raises(tfl.BackendError, match="can run a kernel"):
        tfl.backends.get_backend("opencl")
    from tinyflow.cli import info
    info()
    listing = capsys.readouterr().out
    assert "0: Old pocl / cpu (unusable, cannot compile a kernel: error: unknown target CPU 'generic')" in listing
    assert "OpenCL backend not available: no OpenCL device here can run a kernel" in listing


def test_a_device_whose_context_cannot_be_made_is_reported_as_such(monkeypatch):
    """build_error tells a device that cannot make a context from a compiler that fails."""
    class NoContext:
        int_ptr = -12345

    def refuse(devices):
        raise opencl_runtime.pyopencl().RuntimeError("clCreateContext failed: DEVICE_NOT_AVAILABLE")
    monkeypatch.setattr(opencl_runtime.pyopencl(), "Context", refuse)
    monkeypatch.setattr(opencl_runtime, "_build_errors", {})
    assert opencl_runtime.build_error(NoContext()).startswith("cannot create a context: clCreateContext failed")


def test_float64_on_a_device_without_it_is_a_clear_error(monkeypatch):
    runtime = tfl.backends.get_backend("opencl").runtime
    monkeypatch.setattr(runtime, "has_fp64", False)
    monkeypatch.setattr(runtime, "_programs", {})
    with pytest.raises(tfl.BackendError, match="no float64 support"):
        runtime.program(np.float64)


def boston_losses(backend, steps):
    tfl.set_seed(0)
    X, y = tfl.data.load_boston()
    X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    with tfl.Graph().as_default():
        net = tfl.nn.Sequential(tfl.nn.Linear(13, 64, act="relu"), tfl.nn.Linear(64, 64, act="relu"),
                                tfl.nn.Linear(64, 1))
        model = tfl.Model(net, "mse", tfl.optim.Adam(1e-2), backend=backend)
        return np.array(model.fit(X, y.astype(np.float32), epochs=steps, batch_size=len(X), verbose=0)["loss"])


def test_boston_mlp_100_adam_steps_follow_numpys_loss_curve():
    reference, on_device = boston_losses("numpy", 100), boston_losses("opencl", 100)
    np.testing.assert_allclose(on_device, reference, rtol=1e-4)


def test_convnet_training_steps_match_numpy():
    X, y = tfl.data.load_digits()
    X = (X[:128] / 16).astype(np.float32).reshape(-1, 1, 8, 8)
    losses = {}
    for backend in ("numpy", "opencl"):
        tfl.set_seed(3)
        with tfl.Graph().as_default():
            net = tfl.nn.Sequential(tfl.nn.Conv2D(1, 4, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2),
                                    tfl.nn.Flatten(), tfl.nn.Linear(64, 10))
            model = tfl.Model(net, "softmax_cross_entropy", tfl.optim.Adam(1e-2), backend=backend)
            losses[backend] = model.fit(X, y[:128], epochs=5, batch_size=32, shuffle=False, verbose=0)["loss"]
    np.testing.assert_allclose(losses["opencl"], losses["numpy"], rtol=1e-4)


def test_tanh_on_the_device_reaches_one_at_large_arguments_and_infinity():
    """Issue 35: the device's own tanh gave 0.99999994 for large arguments and ±inf; the kernels' tf_tanh gives ±1."""
    x = np.array([-np.inf, -50.0, -9.5, 0.0, 9.5, 20.5, 50.0, np.inf], np.float32)
    got = run_kernels("opencl", tfl.tanh, [x], kernel="Tanh")
    np.testing.assert_array_equal(got, np.tanh(x))
