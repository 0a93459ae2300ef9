"""Sessions under hostile use: threads, aliasing fetches, varying batch shapes, odd feeds and names, wrong ops.

Every test runs once per backend (tests/conftest.py).
"""
import sys
import threading

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import CBackend
from tinyflow.backends.buffer_pool import BufferPool
from tinyflow.nodes import Operation


# ---------------------------------------------------------------- threads
@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every microsecond, so unsafe interleavings happen within a short test."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def test_train_steps_from_two_threads_never_lose_an_update():
    c = np.linspace(1, 2, 300).astype(np.float32)
    w = tfl.Variable(np.zeros(300, np.float32), name="w")
    train = tfl.optim.SGD(0.001).minimize(tfl.reduce_sum(w * c))  # the gradient is c at every step
    steps, errors = 60, []
    with tfl.Session() as sess:
        def worker():
            try:
                for _ in range(steps):
                    sess.run(train)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=worker) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    np.testing.assert_allclose(w.value, -0.001 * c * 2 * steps, rtol=1e-4)


def test_one_session_from_several_threads_returns_each_thread_its_own_numbers():
    x = tfl.Placeholder((None, 64), name="x")
    w = tfl.Variable(np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32), name="w")
    y = tfl.relu(tfl.matmul(x, w)) * 2.0
    batches = [np.random.default_rng(i).standard_normal((128, 64)).astype(np.float32) for i in range(4)]
    expected = [np.maximum(b @ w.value, 0) * 2 for b in batches]
    wrong, errors = [], []
    with tfl.Session() as sess:
        def worker(index):
            try:
                for _ in range(15):
                    got = sess.run(y, {x: batches[index]})
                    if not np.allclose(got, expected[index], rtol=1e-4, atol=1e-4):
                        wrong.append(index)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [] and wrong == []


# ---------------------------------------------------------------- fetches are the caller's own arrays
def test_a_fetched_identity_of_a_variable_does_not_change_with_later_training():
    w = tfl.Variable(np.ones((70, 70), np.float32), name="w")
    seen = tfl.identity(w)
    train = tfl.optim.SGD(0.1).minimize(tfl.reduce_sum(w * w))
    with tfl.Session() as sess:
        before = sess.run(seen)
        sess.run(train)
        np.testing.assert_array_equal(before, 1.0)
        before[:] = 42.0  # writing into a fetched array
        np.testing.assert_allclose(w.value, 0.8)
        assert not np.shares_memory(sess.run(seen), w.value)


def test_fetched_arrays_share_memory_with_no_constant_and_no_other_fetch():
    c = tfl.Constant(np.arange(5000, dtype=np.float32), name="c")
    view = tfl.reshape(c, (50, 100))
    with tfl.Session() as sess:
        a, b, d = sess.run([tfl.identity(c), tfl.identity(c), view])
        a[:] = -1
        assert b[0] == 0 and d[0, 0] == 0
        np.testing.assert_array_equal(sess.run(c)[:3], [0, 1, 2])


# ---------------------------------------------------------------- the buffer pool stays bounded
def test_the_pool_keeps_at_most_its_byte_bound_dropping_the_oldest_shapes():
    pool = BufferPool(max_bytes=1 << 20)
    for rows in range(10, 200, 7):  # batch shapes that vary, as with a last smaller batch or bucketing
        array = np.empty((rows, 1000), np.float32)
        pool.recycle(array, references=3)
        del array
        assert pool.bytes <= 1 << 20
    assert pool.bytes > 0
    assert pool.empty((192, 1000), np.float32).shape == (192, 1000)  # the newest shapes stay


# ---------------------------------------------------------------- feeds, names, wrong ops
def test_float64_feeds_beyond_float32_are_refused():
    x = tfl.Placeholder((3,), "float32", name="x")
    with tfl.Session() as sess, pytest.raises(tfl.FeedError, match=r"'x'.*outside the range of float32"):
        sess.run(x * 2.0, {x: np.array([1.0, 1e39, 2.0])})
    with tfl.Session() as sess:  # inf and NaN themselves are values the user chose: kept
        out = sess.run(x * 1.0, {x: np.array([np.inf, np.nan, 3e38])})
    assert np.isinf(out[0]) and np.isnan(out[1]) and out[2] == np.float32(3e38)


def test_a_node_name_with_nul_and_newlines_compiles():
    x = tfl.Placeholder((2,), name="x")
    y = tfl.add(x, 1.0, name="evil\x00name\nwith\rbreaks")
    with tfl.Session() as sess:
        for _ in range(3):  # interpreted first, then compiled
            np.testing.assert_array_equal(sess.run(y, {x: np.zeros(2, np.float32)}), [1, 1])


class WrongShape(Operation):
    """An op whose infer_shape is wrong: it claims x's shape, but compute drops the last element."""

    abstract = True  # a test-only op: not part of the op registry

    def __init__(self, x, name=None):
        super().__init__(x, name=name)

    def compute(self, x):
        return x[:-1]

    def infer_shape(self, x_shape):
        return x_shape


def test_a_wrong_infer_shape_is_blamed_on_its_own_op():
    x = tfl.Placeholder((4,), name="x")
    bad = WrongShape(x, name="bad_op")
    after = tfl.add(bad, tfl.Constant(np.ones(4, np.float32)), name="innocent")
    with tfl.Session() as sess, pytest.raises(tfl.ExecutionError) as info:
        sess.run(after, {x: np.ones(4, np.float32)})
    message = str(info.value)
    assert "'bad_op'" in message and "WrongShape" in message and "innocent" not in message
    assert "(4,)" in message and "(3,)" in message and "test_hardening.py" in message


def test_a_kernel_registered_at_run_time_is_used_and_counted():
    if not CBackend.is_available():
        pytest.skip("the C library is not built")

    class Backend(CBackend):  # a subclass, so the real C table stays as it is
        name = "c-with-extra"

    def doubled_exp(backend, op, x):
        return np.exp(x) * 2.0

    Backend.register_kernel("Exp", doubled_exp, small=False)
    backend = Backend()
    with tfl.Graph().as_default():
        x = tfl.Placeholder((3,), "float64")
        op = tfl.exp(x)
    np.testing.assert_allclose(backend.kernel(op)(np.zeros(3)), [2.0, 2.0, 2.0])
    assert backend.report.kernel_ops["Exp"] == 1
    assert CBackend.kernels["Exp"].run is not doubled_exp
    assert backend.kernel(op)(np.zeros(3, np.int64)).tolist() == [1, 1, 1]  # ints: the numpy fallback
    assert backend.report.host_ops["Exp"] == 1


def test_a_shape_whose_buffers_were_all_taken_out_does_not_break_eviction():
    """Found by an imported LSTM's training step: the oldest shape's stack was empty when the pool had to evict."""
    pool = BufferPool(max_bytes=1 << 20)
    pool.recycle(np.empty((100, 1000), np.float32), references=2)
    pool.empty((100, 1000), np.float32)  # taken back out: its shape keeps an empty stack, the oldest one
    for rows in (200, 250):
        pool.recycle(np.empty((rows, 1000), np.float32), references=2)
    assert pool.bytes <= 1 << 20
