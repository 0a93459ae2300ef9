"""Compiled plans run the same steps as the interpreter; recycled buffers never leak into results."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import compiler
from tinyflow.backends.buffer_pool import BufferPool
from tinyflow.session.plan import COMPILE_LIMIT, MAX_SPECIALISATIONS

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def small_net():
    x = tfl.Placeholder((None, 64), name="x")
    w = tfl.Variable(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32), name="w")
    h = tfl.relu(tfl.matmul(x, w), name="h")
    loss = tfl.reduce_mean(tfl.square(h), name="loss")
    return x, w, h, loss


def test_the_compiled_plan_is_straight_line_python_with_dels():
    x, w, h, loss = small_net()
    with tfl.Session() as sess:
        sess.run(loss, {x: np.ones((2, 64))})  # the first run checks every op's static shape, interpreted
        sess.run(loss, {x: np.ones((2, 64))})
        source = sess.plan([loss], [x]).source
    assert source.startswith("def run(feeds")
    assert "# MatMul" in source and "del v" in source and "return [" in source


def test_compiled_and_interpreted_plans_agree_including_updates():
    x, w, h, loss = small_net()
    train = tfl.optim.Adam(0.01).minimize(loss)
    data = np.random.default_rng(1).standard_normal((300, 64)).astype(np.float32)
    start = w.value.copy()
    with tfl.Session() as sess:
        plan = sess.plan([train, loss, h], [x])
        compiled = [np.asarray(v).copy() for v in sess.run([loss, h], {x: data})]
        sess.run(train, {x: data})
        after_compiled = w.value.copy()
        w.value = start
        for slot_var in tfl.get_default_graph().variables()[1:]:
            slot_var.value = np.zeros_like(slot_var.value)
        interpreted = [sess.backend.to_host(v) for v in plan.interpret({x: data})]
        assert interpreted[0] is None  # the train op
        np.testing.assert_allclose(interpreted[1], compiled[0], rtol=1e-6)
        np.testing.assert_allclose(interpreted[2], compiled[1], rtol=1e-6)
    np.testing.assert_allclose(w.value, after_compiled, rtol=1e-6)


def test_errors_from_compiled_plans_name_the_node():
    a = tfl.Placeholder((None,), name="a")
    b = tfl.Placeholder((None,), name="b")
    bad = tfl.add(tfl.exp(a), b, name="bad_sum")
    with tfl.Session() as sess, pytest.raises(tfl.ExecutionError, match="Add node 'bad_sum'.*broadcast"):
        sess.run(bad, {a: np.ones(3), b: np.ones(4)})


def test_fetched_arrays_never_change_when_later_runs_reuse_buffers():
    x, w, h, loss = small_net()
    flat = tfl.reshape(h * 2.0, (-1,))  # a view of an intermediate is fetched
    data = np.random.default_rng(2).standard_normal((512, 64)).astype(np.float32)
    with tfl.Session() as sess:
        first_h, first_flat = sess.run([h, flat], {x: data})
        keep_h, keep_flat = first_h.copy(), first_flat.copy()
        for _ in range(5):  # later runs with other data, recycling everything they may
            sess.run([h, flat, loss], {x: -data})
    np.testing.assert_array_equal(first_h, keep_h)
    np.testing.assert_array_equal(first_flat, keep_flat)


def test_pool_recycles_only_unreferenced_large_float_arrays():
    pool = BufferPool()
    big = np.empty((1000, 100), np.float32)
    pool.recycle(big, references=3)   # our caller holds `big` as a local: exactly 3 references
    assert pool.empty((1000, 100), np.float32) is big
    held = np.empty((1000, 100), np.float32)
    alias = held  # noqa: F841 - someone else still uses it
    pool.recycle(held, references=3)
    assert pool.empty((1000, 100), np.float32) is not held
    view_base = np.empty((1000, 100), np.float32)
    pool.recycle(view_base[10:], references=3)  # views never: they do not own their memory
    pool.recycle(np.empty(10, np.float32), references=3)  # small ones are numpy's business
    assert pool.allocated == 1 and pool.reused == 1  # the second request could not reuse `held`


def test_fetched_arrays_the_caller_dropped_become_output_buffers_again():
    x = tfl.Placeholder((200_000,), name="x")
    y = tfl.sigmoid(x * 1.5 - 0.5) * 2.0
    data = np.random.default_rng(3).standard_normal(200_000).astype(np.float32)
    expected = 2.0 * (1 / (1 + np.exp(-(1.5 * data - 0.5))))
    with tfl.Session() as sess:
        for _ in range(3):  # warm-up: the fused kernel compiles (in the background) after a few runs
            sess.run(y, {x: data})
        compiler.wait_for_compiles()
        sess.run(y, {x: data})
        _, allocated = sess.backend.buffer_stats()
        for _ in range(5):  # results dropped at once: their buffers go round
            np.testing.assert_allclose(sess.run(y, {x: data}), expected, rtol=1e-5)
        assert sess.backend.buffer_stats()[1] == allocated
        kept = [sess.run(y, {x: data}) for _ in range(4)]  # results held: never written again
        for _ in range(3):
            sess.run(y, {x: -data})
        view = sess.run(y, {x: data})[:10]  # a view keeps its base from being reused
        sess.run(y, {x: -data})
    assert len({k.ctypes.data for k in kept}) == 4
    for k in kept:
        np.testing.assert_allclose(k, expected, rtol=1e-5)
    np.testing.assert_allclose(view, expected[:10], rtol=1e-5)


def test_training_reuses_buffers_across_runs():
    x, w, h, loss = small_net()
    train = tfl.optim.SGD(0.01).minimize(loss)
    data = np.ones((512, 64), np.float32)
    with tfl.Session(backend="c") if "c" in tfl.backends.available() else tfl.Session() as sess:
        sess.run(train, {x: data})
        before, _ = sess.backend.buffer_stats()
        sess.run(train, {x: data})
        profile = sess.memory_profile([train, loss], {x: data})
        after, _ = sess.backend.buffer_stats()
    if sess.backend.name == "c":
        assert after > before
        assert profile.reused_buffers > 0 and "reused" in profile.table()


def test_very_long_plans_are_interpreted():
    x = tfl.Placeholder((), "float64", name="x")
    y = x
    for _ in range(COMPILE_LIMIT + 1):
        y = y + 1.0
    with tfl.Session(optimize=False) as sess:  # optimised, the chain is a few fused kernels: a short plan
        assert sess.run(y, {x: 0.0}) == COMPILE_LIMIT + 1
        assert sess.plan([y], [x]).source is None


def test_plans_specialise_to_the_feed_shapes(backend):
    """Once the batch size is known, ops it makes small go straight to numpy; a large batch still uses kernels."""
    x, w, h, loss = small_net()
    rng = np.random.default_rng(3)
    with tfl.Session(backend=backend, optimize=False) as sess:  # unfused: Relu and MatMul are steps
        plan = sess.plan([loss], [x])
        for rows in (2, 512, 2, 512, *range(3, 13)):
            data = rng.standard_normal((rows, 64)).astype(np.float32)
            got = sess.run(loss, {x: data})
            np.testing.assert_allclose(got, np.mean(np.maximum(data @ w.value, 0) ** 2), rtol=1e-5)
            report = sess.backend.report
            if backend == "c" and rows == 2:  # below the C backend's small size
                assert report.small_ops["Relu"] == report.small_ops["Square"] == 1 and not report.kernel_ops["Relu"]
            if backend == "c" and rows == 512:
                assert report.kernel_ops["Relu"] == report.kernel_ops["Square"] == 1 and not report.small_ops["Relu"]
        assert len(plan._compiled) == MAX_SPECIALISATIONS  # one per feed shape, the oldest dropped beyond
        if backend == "c":  # decided once per feed shape, not at each call
            assert plan.specialise([(2, 64)])[1][("small", "Relu")] == 1
            assert plan.specialise([(512, 64)])[1][("small", "Relu")] == 0


def test_ops_that_return_their_input_at_the_fed_shapes_are_skipped_and_variables_read_inline(backend):
    x = tfl.Placeholder((None, 3), name="x")
    w = tfl.Variable(np.ones(3, np.float32), name="w")
    (gx,) = tfl.gradients(tfl.reduce_sum(tfl.reshape(x, (-1, 3)) * w), [x])  # SumToShapeOf(g, x): same shapes
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3)}
    with tfl.Session(optimize=False) as sess:
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(gx, feed), np.ones((2, 3)))
        source = sess.plan([gx], {x}).source
        w.value = np.full(3, 2.0, np.float32)  # a new array: the inline read sees it
        np.testing.assert_array_equal(sess.run(gx, feed), np.full((2, 3), 2.0))
    skipped = [line for line in source.splitlines() if "SumToShapeOf" in line or "Reshape" in line]
    assert len(skipped) == 4 and all(line.split("#")[0].split("= ")[-1].strip().startswith("v") for line in skipped)
    if backend != "opencl":  # OpenCL keeps Variables on its device: its reads stay calls
        assert ".host_array if " in source
