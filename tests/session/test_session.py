"""Session.run: pruning, fetch structures, feeds, plan cache, freeing intermediates, errors."""
import collections
import warnings

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.session import GraphGrowthWarning

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


@pytest.fixture
def small_graph():
    x = tfl.Placeholder((None, 2), name="x")
    unused = tfl.Placeholder((None, 2), name="unused")
    w = tfl.Variable(np.array([[1.0], [2.0]], np.float32), name="w")
    y = tfl.matmul(x, w, name="y")
    z = tfl.reduce_sum(y, name="z")
    return x, unused, w, y, z, unused * 2.0


def test_only_the_fetched_subgraph_runs_and_needs_feeds(small_graph):
    x, unused, w, y, z, _ = small_graph
    with tfl.Session() as sess:
        assert sess.run(z, {x: [[1, 1]]}) == 3.0  # `unused` is not needed, so not required
        plan = sess.plan([z], [x])
        assert {s.node.name for s in plan.steps} == {"w", "y", "z"}


def test_nested_fetch_structures_come_back_in_the_same_shape(small_graph):
    x, _, w, y, z, _ = small_graph
    Pair = collections.namedtuple("Pair", "a b")
    with tfl.Session() as sess:
        out = sess.run({"loss": z, "preds": [y, ("z", w)], "pair": Pair(z, "y")}, feed_dict={"x": [[1, 0]]})
    assert out["loss"] == 1.0
    assert isinstance(out["preds"], list) and isinstance(out["preds"][1], tuple)
    np.testing.assert_allclose(out["preds"][0], [[1.0]])
    assert out["preds"][1][0] == 1.0 and out["preds"][1][1].shape == (2, 1)
    assert isinstance(out["pair"], Pair) and out["pair"].a == 1.0


def test_any_node_may_be_fed(small_graph):
    x, _, w, y, z, _ = small_graph
    with tfl.Session() as sess:
        assert sess.run(z, {y: [[5.0], [6.0]]}) == 11.0  # x is not needed once y is fed
        assert sess.run(z, {x: [[1, 1]], w: [[10.0], [10.0]]}) == 20.0
        assert w.value[1, 0] == 2.0  # feeding a Variable does not change it


def test_execution_plan_is_cached_per_fetches_and_fed_keys(small_graph):
    x, _, w, y, z, _ = small_graph
    with tfl.Session() as sess:
        sess.run(z, {x: [[1, 1]]})
        first = sess.plan([z], [x])
        sess.run(z, {x: [[2, 2]]})
        assert sess.plan([z], [x]) is first
        assert sess.plan([z], [y]) is not first


def test_intermediates_are_released_after_their_last_use():
    x = tfl.Placeholder((3,), name="x")
    a = tfl.exp(x, name="a")
    b = tfl.square(a, name="b")
    c = tfl.add(b, a, name="c")
    d = tfl.negative(c, name="d")
    with tfl.Session(optimize=False) as sess:  # the plan of the ops as written (optimised, they are one kernel)
        sess.run(d, {x: [0, 1, 2]})
        plan = sess.plan([d], [x])
    slot = plan.slot_of
    released = {step.node.name: set(step.release) for step in plan.steps}
    assert released["a"] == {slot[x]}  # x is last read by a
    assert released["c"] == {slot[a], slot[b]}  # a is read by b and c, released after c
    assert released["d"] == {slot[c]}  # and d itself, fetched, is kept


def test_feed_errors_name_the_placeholder_and_the_fetch(small_graph):
    x, _, w, y, z, _ = small_graph
    with tfl.Session() as sess:
        with pytest.raises(tfl.FeedError) as err:
            sess.run(z, {x: np.ones((4, 3))})
        for fragment in ("'x'", "(None, 2)", "(4, 3)", "fetch 'z'"):
            assert fragment in str(err.value)
        with pytest.raises(tfl.FeedError, match=r"Placeholder 'x'.*needs a value.*fetch 'z'"):
            sess.run(z)
        with pytest.raises(tfl.FeedError, match="not numbers"):
            sess.run(z, {x: [["a", "b"]]})
        with pytest.raises(tfl.GraphError, match="no node named 'nope'"):
            sess.run(z, {"nope": 1})


def test_feeds_are_cast_to_the_placeholder_dtype_when_representable():
    labels = tfl.Placeholder((None,), "int64", name="labels")
    flt = tfl.Placeholder((None,), "float32", name="flt")
    with tfl.Session() as sess:
        out = sess.run([labels, flt], {labels: np.array([1.0, 2.0]), flt: np.array([1, 2], np.int64)})
        assert out[0].dtype == np.int64 and out[1].dtype == np.float32
        with pytest.raises(tfl.FeedError, match="cannot be represented as int64"):
            sess.run(labels, {labels: [1.5, 2.0]})
        with pytest.raises(tfl.FeedError, match="NaN"):
            sess.run(labels, {labels: [np.nan]})


def test_placeholder_default_is_used_unless_fed():
    training = tfl.Placeholder((), "bool", name="training", default=True)
    with tfl.Session() as sess:
        assert sess.run(training) == True  # noqa: E712 - numpy bool
        assert sess.run(training, {training: False}) == False  # noqa: E712


def test_kernel_failures_become_execution_errors_naming_the_node():
    x = tfl.Placeholder((None, None), name="x")
    y = tfl.Placeholder((None, None), name="y")
    line = __import__("inspect").currentframe().f_lineno + 1
    s = tfl.add(x, y, name="bad_add")
    with tfl.Session() as sess, pytest.raises(tfl.ExecutionError) as err:
        sess.run(s, {x: np.ones((2, 3)), y: np.ones((4, 5))})
    message = str(err.value)
    for fragment in ("Add node 'bad_add'", f"test_session.py:{line}", "(2, 3)", "(4, 5)", "broadcast"):
        assert fragment in message
    assert err.value.__cause__ is None and isinstance(err.value.original, ValueError)


def test_train_ops_return_none_and_updates_read_old_values():
    w = tfl.Variable(np.array(1.0), name="w")
    double = tfl.assign(w, w * 2.0)
    read_after = tfl.identity(w)  # not depending on the assign: sees the old value
    train = tfl.group(double)
    with tfl.Session() as sess:
        out = sess.run([train, read_after])
    assert out == [None, 1.0] and w.value == 2.0


def test_assign_add_and_sub_compose_within_one_run():
    v = tfl.Variable(np.array(10.0))
    step = tfl.group(tfl.assign_add(v, 5.0), tfl.assign_add(v, 1.0), tfl.assign_sub(v, 2.0))
    with tfl.Session() as sess:
        sess.run(step)
    assert v.value == 14.0


def test_fetched_variable_values_are_snapshots():
    v = tfl.Variable(np.zeros(2))
    inc = tfl.assign_add(v, 1.0)
    with tfl.Session() as sess:
        before = sess.run(v)
        sess.run(inc)
    assert before.tolist() == [0.0, 0.0] and v.value.tolist() == [1.0, 1.0]


def test_growing_graph_between_runs_warns_once():
    x = tfl.Placeholder((), name="x")
    with tfl.Session() as sess, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x
        for _ in range(8):
            y = y + 1.0  # the classic leak: a new op per step
            sess.run(y, {x: 0.0})
    growth = [w for w in caught if issubclass(w.category, GraphGrowthWarning)]
    assert len(growth) == 1 and "training loop" in str(growth[0].message)


def test_steady_graph_does_not_warn():
    x = tfl.Placeholder((), name="x")
    y = x + 1.0
    with tfl.Session() as sess, warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(10):
            sess.run(y, {x: 0.0})


def test_closed_session_and_foreign_nodes_are_refused():
    x = tfl.Placeholder((), name="x")
    sess = tfl.Session()
    sess.close()
    with pytest.raises(tfl.TinyflowError, match="closed"):
        sess.run(x, {x: 1.0})
    with tfl.Graph().as_default():
        other = tfl.Constant(1.0)
    with tfl.Session() as sess, pytest.raises(tfl.TinyflowError, match="another graph"):
        sess.run(other)


def test_unknown_backend_is_a_backend_error():
    with pytest.raises(tfl.BackendError, match="unknown backend 'tpu'.*available here"):
        tfl.Session(backend="tpu")
    assert "numpy" in tfl.backends.available()


def test_values_fetched_with_an_in_place_update_keep_their_value():
    w = tfl.Variable(np.ones(3), name="w")
    seen = tfl.identity(w)  # the same buffer as w on any backend
    train = tfl.optim.SGD(0.5).minimize(tfl.reduce_sum(tfl.square(w)))
    with tfl.Session() as sess:
        before, _ = sess.run([seen, train])
    np.testing.assert_array_equal(before, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(w.value, [0.0, 0.0, 0.0])
