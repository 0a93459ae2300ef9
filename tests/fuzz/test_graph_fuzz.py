"""Graph fuzzing (hypothesis): random graphs of ops with random shapes, dtypes, feeds, views and arguments.

What every generated case asserts, on every backend (the suite runs each test once per backend):
- a failure is a `TinyflowError` whose message names the node (the op being built, the fed
  placeholder, or the node whose kernel failed); no other exception type escapes;
- every op's value on this backend equals numpy's reference `compute` on the same inputs
  (NaN and ±inf in the same places, finite values within a few ulps scaled by the reduction size);
- a bad op argument is an `ArgumentError` when the op is built.
Examples are derandomized, so the suite tries the same cases on every run (see README "Reliability").
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinyflow as tfl
from tinyflow.shapes import matches

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
C_SMALL = 4096  # the C backend routes arrays smaller than this to numpy: half the cases are larger
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30])
ULPS = {np.dtype(np.float32): 64 * np.finfo(np.float32).eps, np.dtype(np.float64): 1e4 * np.finfo(np.float64).eps}



# ------------------------------------------------------------------ values
def uniform_picker(draw):
    """pick(seq): a uniform choice from a seed hypothesis draws (its sampled_from favours the first entries)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return lambda seq: seq[int(rng.integers(len(seq)))]


def random_values(pick, shape, dtype, specials=True):
    """An array of `shape`: normals scaled by 10^k (or offset by 1e4, 1e8), with NaN, ±inf, ±0, huge/tiny values."""
    rng = np.random.default_rng(pick(range(2**31)))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50, 50, size=shape).astype(dtype)
    values = rng.standard_normal(shape) * 10.0 ** pick(range(-2, 3))
    if pick(range(4)) == 0:  # large values close together: where x - (max + log Σ) loses precision
        values += pick([1e4, -1e4, 1e8])
    if specials and values.size and pick([True, False]):
        flat = values.reshape(-1)
        spots = rng.integers(0, flat.size, size=pick(range(1, 5)))
        flat[spots] = rng.choice(SPECIALS, size=spots.size)
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def as_view(pick, array):
    """`array` itself, or an equal non-contiguous view of a larger buffer (reversed or strided)."""
    kind = pick(["plain", "plain", "strided", "reversed", "transposed"])
    if array.ndim == 0 or kind == "plain":
        return array
    if kind == "strided":
        buffer = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), array.dtype)
        buffer[..., ::2] = array
        return buffer[..., ::2]
    if kind == "reversed":
        return np.ascontiguousarray(array[..., ::-1])[..., ::-1]
    return np.ascontiguousarray(array.T).T


def base_shape(pick):
    """A shape of rank 1-3; in the 'large' half, its size passes the C backend's small-array threshold."""
    lead = [pick([1, 2, 3, 5]) for _ in range(pick([0, 1, 2]))]
    if pick([True, False]):
        return tuple(lead) + (math.ceil(C_SMALL / max(1, math.prod(lead))) + pick(range(4)),)
    return tuple(lead) + (pick([1, 2, 3, 4, 7]),)


# ------------------------------------------------------------------ random graphs
def _unary(pick, x, backend):
    """One op of one input (elementwise, reduction, softmax or data movement) with random arguments."""
    floating = x.dtype.kind == "f"
    rank = len(x.shape)
    family = pick(["elementwise", "elementwise", "reduction", "movement"])
    if family == "elementwise":
        choices = ["negative", "abs", "sign", "relu", "cast", "identity"]
        if floating:
            choices += ["square", "sqrt", "exp", "log", "sigmoid", "tanh", "leaky_relu", "softplus"]
    elif family == "reduction":
        choices = ["reduce_sum", "reduce_max"] + (["reduce_mean", "softmax", "log_softmax"] if floating and rank
                                                  else [])
    else:
        choices = ["transpose", "reshape", "get_item"]
    op = pick(choices)
    axis = pick(range(-rank, rank)) if rank else None
    if op in ("reduce_sum", "reduce_max", "reduce_mean"):
        axes = pick([None, axis])
        return getattr(tfl, op)(x, axes, keepdims=pick([True, False]))
    if op in ("softmax", "log_softmax"):
        return getattr(tfl, op)(x, axis=axis)
    if op == "transpose":
        return tfl.transpose(x, pick(list(itertools.permutations(range(rank))) + [None]))
    if op == "reshape":
        return tfl.reshape(x, pick([(-1,), (1, -1)]))
    if op == "get_item":
        if not rank:
            return tfl.identity(x)
        return x[pick([slice(None, None, 2), slice(1, None), slice(None, None, -1), 0, -1])]
    if op == "leaky_relu":
        return tfl.leaky_relu(x, pick([0.0, 0.01, 0.2, -1.0]))
    if op == "cast":  # float -> int of NaN, inf or out-of-range values is undefined (in C and numpy alike)
        return tfl.cast(x, pick(["float32", "float64"] if floating else ["float64", "int32"]))
    return getattr(tfl, op)(x)


def _binary(pick, a, b):
    """One binary op on a and b (which broadcast together)."""
    floating = a.dtype.kind == "f" and b.dtype.kind == "f"
    choices = ["add", "subtract", "maximum", "minimum", "where", "concat", "add_n", "compare"]
    if floating:
        choices += ["multiply", "divide", "power", "matmul"]
    op = pick(choices)
    if op == "where":
        return tfl.where(tfl.greater(a, b), a, b)
    if op == "compare":
        return pick([tfl.greater, tfl.greater_equal, tfl.less, tfl.less_equal, tfl.equal])(a, b)
    if op == "concat":
        return tfl.concat([a, b], axis=pick([-1, 0]))
    if op == "add_n":
        return tfl.add_n([a, b, a])
    if op == "matmul":
        return tfl.matmul(a, tfl.transpose(b) if len(b.shape) == 2 else b)
    return getattr(tfl, op)(a, b)


@st.composite
def random_graphs(draw, backend):
    """(feeds, nodes): placeholders fed with random values and views, and 2-8 random ops on them."""
    pick = uniform_picker(draw)
    dtype = np.dtype(pick(["float32", "float32", "float64", "int64"]))
    shape = base_shape(pick)
    unknown_batch = pick([True, False])
    feeds, pool = {}, []
    for i in range(pick([1, 2])):
        static = ((None,) + shape[1:]) if unknown_batch else shape
        x = tfl.Placeholder(static, dtype, name=f"x{i}")
        feeds[x] = as_view(pick, random_values(pick, shape, dtype))
        pool.append(x)
    pool.append(tfl.Constant(random_values(pick, shape[-1:], dtype, specials=False), name="row"))
    for _ in range(pick(range(2, 9))):
        a = pick(pool)
        try:
            if pick([True, False]) or len(pool) < 2:
                node = _unary(pick, a, backend)
            else:
                node = _binary(pick, a, pick(pool))
        except tfl.TinyflowError as err:  # e.g. concat of shapes that differ, matmul of mismatched operands
            assert any(word in str(err) for word in ("Concat", "MatMul", "concat", "matmul", "shape")), err
            continue
        pool.append(node)
    return feeds, pool


def assert_same_values(node, got, expected, scale):
    """got == expected with numpy's NaN/inf placement; finite values within ULPS * scale."""
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (node, got.shape, expected.shape)
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected, err_msg=repr(node))
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=f"NaN placement of {node!r}")
    infinite = np.isinf(expected)
    np.testing.assert_array_equal(got[infinite], expected[infinite], err_msg=f"inf placement of {node!r}")
    finite = np.isfinite(expected)
    scale = np.broadcast_to(scale, expected.shape)[finite]
    tolerance = ULPS[expected.dtype] * (np.abs(expected[finite]) + np.where(np.isfinite(scale), scale, np.inf))
    error = np.abs(got[finite].astype(np.float64) - expected[finite])
    assert np.all(error <= tolerance), (f"{node!r}: worst error {np.max(error - tolerance)} above tolerance",
                                        got[finite][np.argmax(error - tolerance)])


FOLDING = {"ReduceSum", "ReduceMean", "MatMul", "Conv", "ConvTranspose", "AvgPool", "AddN"}  # sums of products


def _scale(node, inputs):
    """How large rounding differences may get: 1 for elementwise ops; for sums, the sum of |terms|."""
    if node.op_type not in FOLDING:
        return 1.0
    with np.errstate(all="ignore"):
        return np.abs(node.compute(*[np.abs(v) for v in inputs]))


def _reference_values(nodes, feeds, fetched):
    """numpy's `compute` of every op on the values this backend produced for its inputs."""
    value_of = dict(fetched)
    value_of.update(feeds)
    for node in nodes:
        if isinstance(node, tfl.Constant):
            value_of[node] = node.value
    for node in nodes:
        if isinstance(node, tfl.Operation):
            inputs = [np.asarray(value_of[i]) for i in node.inputs]
            with np.errstate(all="ignore"):
                expected = node.compute(*inputs)
            yield node, inputs, expected


@given(data=st.data())
@settings(FUZZ, max_examples=300)
def test_random_graphs_agree_with_numpy_and_fail_only_with_named_tinyflow_errors(backend, data):
    with tfl.Graph().as_default() as graph:
        feeds, _ = data.draw(random_graphs(backend))
        ops = [n for n in graph.nodes if isinstance(n, tfl.Operation)]  # helpers' nodes too (minimum, greater)
        if not ops:
            return
        if data.draw(st.integers(0, 3)) == 0 and any(p.shape[0] is None for p in feeds):  # a clashing batch size
            first = next(iter(feeds))
            feeds[first] = np.concatenate([feeds[first], feeds[first][:1]])
        with tfl.Session(graph, backend=backend) as sess:
            try:
                with np.errstate(all="ignore"):
                    values = sess.run(ops, feeds)
            except tfl.TinyflowError as err:
                assert any(f"'{n.name}'" in str(err) for n in graph.nodes), err
                return
    fetched = dict(zip(ops, values))
    for node, value in fetched.items():
        assert matches(node.shape, np.shape(value)), (node, np.shape(value))
        assert np.asarray(value).dtype == node.dtype, (node, np.asarray(value).dtype)
    for node, inputs, expected in _reference_values(graph.nodes, feeds, fetched):
        assert_same_values(node, np.asarray(fetched[node]), expected, _scale(node, inputs))


# ------------------------------------------------------------------ convolution and pooling
@given(data=st.data())
@settings(FUZZ, max_examples=30)
def test_conv_and_pooling_agree_with_numpy(backend, data):
    pick = uniform_picker(data.draw)
    dtype = np.dtype(pick(["float32", "float64"]))
    n, c, side = pick([1, 2]), pick([1, 2, 3]), pick([5, 9, 40, 40])  # 2 x 2 x 40 x 40 passes the C threshold
    kernel = pick([1, 2, 3])
    stride, padding = pick([1, 2, 3]), pick(range(kernel // 2 + 1))
    x_value = as_view(pick, random_values(pick, (n, c, side, side), dtype, specials=True))
    w_value = random_values(pick, (2, c, kernel, kernel), dtype, specials=False)
    with tfl.Graph().as_default() as graph:
        x = tfl.Placeholder((None, c, side, side), dtype, name="image")
        ops = [tfl.conv2d(x, tfl.Constant(w_value), stride=stride, padding=padding),
               tfl.max_pool2d(x, kernel, stride=stride, padding=padding),
               tfl.avg_pool2d(x, kernel, stride=stride, padding=padding)]
        with tfl.Session(graph, backend=backend) as sess:
            with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 in a window: NaN is the answer
                values = sess.run(ops, {x: x_value})
    fetched = dict(zip(ops, values))
    for node, inputs, expected in _reference_values(graph.nodes, {x: x_value}, fetched):
        assert_same_values(node, np.asarray(fetched[node]), expected, _scale(node, inputs))


# ------------------------------------------------------------------ bad feeds
def _bad_feed(pick, shape, dtype):
    """A value that must not be accepted for a Placeholder of `shape` and `dtype`."""
    kind = pick(["rank", "size", "strings", "object", "none", "complex", "ragged", "node", "nan_for_int",
                 "fraction_for_int", "dict"])
    if kind == "rank":
        return kind, np.zeros(shape + (2,), dtype)
    if kind == "size":
        return kind, np.zeros(shape[:-1] + (shape[-1] + pick([1, 2, 3]),), dtype)
    if kind == "strings":
        return kind, np.full(shape, "1.5")
    if kind == "object":
        return kind, np.full(shape, object())
    if kind == "none":
        return kind, None
    if kind == "complex":
        return kind, np.ones(shape, np.complex64)
    if kind == "ragged":
        return kind, [[1.0, 2.0], [3.0]]
    if kind == "node":
        return kind, tfl.Constant(1.0)
    if kind == "dict":
        return kind, {"a": 1}
    if kind == "nan_for_int":
        return (kind, np.full(shape, np.nan)) if dtype.kind in "iu" else ("rank", np.zeros(shape + (1,), dtype))
    return (kind, np.full(shape, 0.5)) if dtype.kind in "iu" else ("size", np.zeros(shape + (3,), dtype))


@given(data=st.data())
@settings(FUZZ, max_examples=80)
def test_bad_feeds_are_feed_errors_naming_the_placeholder(backend, data):
    pick = uniform_picker(data.draw)
    dtype = np.dtype(pick(["float32", "float64", "int64", "int32"]))
    shape = base_shape(pick)
    with tfl.Graph().as_default() as graph:
        x = tfl.Placeholder(shape, dtype, name="fed_input")
        y = tfl.reduce_sum(tfl.abs(x) + x, axis=-1)
        kind, value = _bad_feed(pick, shape, dtype)
        with tfl.Session(graph, backend=backend) as sess:
            with pytest.raises(tfl.FeedError) as err:
                sess.run(y, {x: value} if pick([True, False]) or kind == "none" else {"fed_input": value})
            assert "'fed_input'" in str(err.value), (kind, str(err.value))
            with pytest.raises(tfl.FeedError, match="'fed_input'.*needs a value"):
                sess.run(y)  # nothing fed at all


# ------------------------------------------------------------------ bad op arguments
ANYTHING = st.one_of(
    st.none(), st.booleans(), st.integers(-6, 6), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3), st.sampled_from([np.int64(1), np.float32(0.5), np.bool_(True), object(), "float32"]),
    st.lists(st.one_of(st.integers(-4, 4), st.floats(-2, 2), st.booleans(), st.none()), max_size=4),
    st.tuples(st.integers(-4, 4), st.integers(-4, 4)))
# op builders and the argument they take from the fuzzer; x is (2, 3, 8, 8)
BUILDERS = {
    "transpose": lambda x, v: tfl.transpose(x, v), "reduce_sum": lambda x, v: tfl.reduce_sum(x, v),
    "reduce_mean_keepdims": lambda x, v: tfl.reduce_mean(x, 1, keepdims=v),
    "reduce_max": lambda x, v: tfl.reduce_max(x, v), "argmax": lambda x, v: tfl.argmax(x, v),
    "softmax": lambda x, v: tfl.softmax(x, v), "log_softmax": lambda x, v: tfl.log_softmax(x, v),
    "concat": lambda x, v: tfl.concat([x, x], v), "reshape": lambda x, v: tfl.reshape(x, v),
    "leaky_relu": lambda x, v: tfl.leaky_relu(x, v), "cast": lambda x, v: tfl.cast(x, v),
    "max_pool2d": lambda x, v: tfl.max_pool2d(x, v), "avg_pool2d_stride": lambda x, v: tfl.avg_pool2d(x, 2, v),
    "max_pool2d_padding": lambda x, v: tfl.max_pool2d(x, 3, 1, v),
    "conv2d_stride": lambda x, v: tfl.conv2d(x, np.ones((1, 3, 3, 3), np.float32), stride=v),
    "conv2d_padding": lambda x, v: tfl.conv2d(x, np.ones((1, 3, 3, 3), np.float32), padding=v),
    "dropout": lambda x, v: tfl.dropout(x, v), "dropout_training": lambda x, v: tfl.dropout(x, 0.5, training=v),
    "get_item": lambda x, v: x[v], "add_n": lambda x, v: tfl.add_n(v), "add": lambda x, v: tfl.add(x, v),
}
NOT_AN_INT = (bool, np.bool_, float, np.floating, str)


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@given(value=ANYTHING)
@settings(FUZZ, max_examples=20)
def test_bad_op_arguments_are_argument_errors_at_construction(backend, builder, value):
    with tfl.Graph().as_default():
        x = tfl.Placeholder((2, 3, 8, 8), "float32", name="images")
        try:
            node = BUILDERS[builder](x, value)
        except tfl.TinyflowError as err:
            message = str(err)  # names the input, or the list/value that could not become one
            assert "'images'" in message or "xs=" in message or message.startswith("Constant: value="), message
            return
    # accepted: it must have been a sensible value, and the node is consistent
    integer_args = ("transpose", "reduce_sum", "reduce_max", "argmax", "softmax", "log_softmax", "concat",
                    "max_pool2d", "avg_pool2d_stride", "conv2d_stride", "conv2d_padding", "max_pool2d_padding")
    if builder in integer_args:
        assert not isinstance(value, NOT_AN_INT), (builder, value)
    if builder in ("reduce_mean_keepdims", "dropout_training"):
        assert isinstance(value, (bool, np.bool_)), (builder, value)
    if isinstance(node, tfl.Operation):
        assert node.infer_shape(*[i.shape for i in node.inputs]) == node.shape
