"""Tensors behave as PyTorch users expect (issue 35): eager == and != compare elementwise, % and // work on
nodes and Tensors, one dtype promotion rule in graph, eager and to_static mode, rank-0 tensors take axis 0 and -1,
and integer lists and tuples index as integer arrays. (Values and gradients of the new ops against torch:
tests/ops/test_against_torch.py.)"""
import numpy as np
import pytest

import tinyflow as tfl


def _graph(fn, *arrays):
    placeholders = [tfl.Placeholder(a.shape, a.dtype) for a in arrays]
    out = fn(*placeholders)
    with tfl.Session() as sess:
        return out.dtype, sess.run(out, dict(zip(placeholders, arrays)))


def _eager(fn, *arrays):
    out = fn(*[tfl.tensor(a, dtype=a.dtype) for a in arrays])
    return out.dtype, out.numpy()


def _to_static(fn, *arrays):
    out = tfl.jit.to_static(fn)(*[tfl.tensor(a, dtype=a.dtype) for a in arrays])
    return out.dtype, out.numpy()


MODES = {"graph": _graph, "eager": _eager, "to_static": _to_static}


def test_eager_equality_compares_elementwise_and_tensors_stay_usable_as_dict_keys():
    x, y = tfl.tensor([0.0, 1.0, 2.0]), tfl.tensor([0.0, 5.0, 2.0])
    assert (x == 0).tolist() == [True, False, False] and (x != y).tolist() == [False, True, False]
    assert (1.0 == x).dtype == np.bool_ and (x == np.array([0.0, 1.0, 0.0])).tolist() == [True, True, False]
    assert {x: "x", y: "y"}[y] == "y" and x in {x} and y not in {x}  # identity hashing
    assert (x == None) is False and (x != "x") is True  # noqa: E711 - what is not a number is simply different


def test_a_tensor_of_several_values_in_an_if_says_to_use_tfl_any_or_all():
    x = tfl.tensor([0.0, 1.0])
    with pytest.raises(tfl.TinyflowError, match=r"tfl\.any\(t\) or tfl\.all\(t\)"):
        if x == 0:
            pass
    assert bool(tfl.tensor([3.0]) == 3) and not bool(tfl.tensor(2.0) != 2)


@pytest.mark.parametrize("mode", MODES)
def test_any_and_all_reduce_like_torch(mode):
    x = np.array([[0.0, 1.0, np.nan], [0.0, 0.0, 2.0]])
    dtype, got = MODES[mode](lambda t: tfl.stack([tfl.any(t, 1), tfl.all(t, 1), tfl.any(t, 0)[:2]]), x)
    assert dtype == np.bool_ and got.tolist() == [[True, True], [False, False], [False, True]]


@pytest.mark.parametrize("mode", MODES)
def test_mod_and_floor_division_operators_follow_python(mode):
    a, b = np.array([7, -7, 7, -7, 0], np.int32), np.array([2, 2, -2, -2, 3], np.int32)
    dtype, got = MODES[mode](lambda x, y: tfl.stack([x // y, x % y, 9 // y, 9 % y, x // 2]), a, b)
    assert dtype == np.int32
    assert got.tolist() == [(a // b).tolist(), (a % b).tolist(), (9 // b).tolist(), (9 % b).tolist(), (a // 2).tolist()]
    floats = np.array([1.0, -1.0, 7.5]), np.array([0.1, 0.1, -2.0])
    _, got = MODES[mode](lambda x, y: x // y, *floats)
    assert got.tolist() == [1.0 // 0.1, -1.0 // 0.1, 7.5 // -2.0]  # 9, -10, -4: not floor(1 / 0.1) = 10


# (program, operand dtype, the dtype torch gives): a Python number takes the tensor's dtype where it holds it
PROMOTIONS = [
    (lambda x: x * 2, np.int32, np.int32),
    (lambda x: 2 - x, np.int32, np.int32),
    (lambda x: x + x, np.int32, np.int32),
    (lambda x: x * 2.5, np.int32, np.float32),
    (lambda x: x / 2, np.int32, np.float32),
    (lambda x: x // 2 + x % 3, np.int32, np.int32),
    (lambda x: x * 2.5, np.float16, np.float16),
    (lambda x: x + 1, np.float64, np.float64),
    (lambda x: x * 1000, np.int8, np.int64),  # 1000 does not fit int8: widened, not wrapped (nor an OverflowError)
    (lambda x: tfl.exp(x), np.int32, np.float32),
]


@pytest.mark.parametrize("program, dtype, expected", PROMOTIONS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_python_numbers_promote_alike_in_graph_eager_and_to_static(program, dtype, expected):
    x = np.array([1, 2, 3], dtype)
    results = {mode: run(program, x) for mode, run in MODES.items()}
    assert {mode: d for mode, (d, _) in results.items()} == dict.fromkeys(MODES, np.dtype(expected))
    for _, value in results.values():
        np.testing.assert_array_equal(value, results["graph"][1])


@pytest.mark.parametrize("mode", MODES)
def test_rank0_tensors_take_axis_0_and_minus_1(mode):
    x = np.array(1.5)
    functions = [lambda t: tfl.reduce_sum(t, 0), lambda t: tfl.reduce_mean(t, -1, keepdims=True),
                 lambda t: tfl.max(t, 0), lambda t: tfl.logsumexp(t, (-1,)), lambda t: tfl.softmax(t, 0),
                 lambda t: tfl.log_softmax(t, -1), lambda t: tfl.cumsum(t, 0),
                 lambda t: tfl.cast(tfl.argmax(t, 0), "float64")]
    _, got = MODES[mode](lambda t: tfl.stack([f(t) for f in functions]), x)
    assert got.tolist() == [1.5, 1.5, 1.5, 1.5, 1.0, 0.0, 1.5, 0.0]
    with pytest.raises(tfl.ArgumentError, match="axis=1"):
        tfl.reduce_sum(tfl.tensor(1.5), 1)


@pytest.mark.parametrize("mode", MODES)
def test_lists_and_tuples_of_ints_in_an_index_are_integer_arrays(mode):
    x = np.arange(12.0).reshape(3, 4)
    _, got = MODES[mode](lambda t: tfl.concat([tfl.flatten(t[[0, 2]]), t[(1, 0, -1), [0, 3, 2]],
                                                 tfl.flatten(t[((2, 1),)])], 0), x)
    np.testing.assert_array_equal(got, np.concatenate([x[[0, 2]].ravel(), x[[1, 0, -1], [0, 3, 2]], x[[2, 1]].ravel()]))


def test_an_eager_tensor_indexes_by_its_value():
    x = tfl.tensor(np.arange(6.0))
    assert x[tfl.tensor([4, 1])].tolist() == [4.0, 1.0] and x[x > 3.5].tolist() == [4.0, 5.0]


def test_constructors_give_torchs_dtypes_and_refuse_bad_arguments():
    assert tfl.arange(3).dtype == np.int64 and tfl.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert tfl.arange(0.5, 2).dtype == np.float32 and tfl.arange(4, dtype="float64").dtype == np.float64
    assert tfl.linspace(0, 1, 3).tolist() == [0, 0.5, 1] and tfl.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert tfl.full((2,), 7).dtype == np.int64 and tfl.full((), 0.5).dtype == np.float32
    n = tfl.Placeholder((), "int64")
    counted, filled = tfl.arange(n), tfl.full(tfl.shape(tfl.Placeholder((None, 2))), 1.5)
    with tfl.Session() as sess:
        assert sess.run(counted, {n: 3}).tolist() == [0, 1, 2] and counted.dtype == np.int64
    assert filled.dtype == np.float32 and filled.shape == (None, 2)
    for bad, message in [(lambda: tfl.arange(0, 3, 0), "step=0"), (lambda: tfl.eye(-1), "n=-1"),
                         (lambda: tfl.full((2, -1), 1.0), "holds -1"), (lambda: tfl.linspace(0, 1, 2.5), "steps")]:
        with pytest.raises(tfl.ArgumentError, match=message):
            bad()


def test_the_new_functions_name_themselves_in_argument_errors():
    x = tfl.Placeholder((None, 4))
    with pytest.raises(tfl.ArgumentError, match="roll .*axis=0 has a size known only at run time"):
        tfl.roll(x, 1, 0)
    with pytest.raises(tfl.ArgumentError, match="one_hot.*does not hold integers"):
        tfl.one_hot(x, 3)
    with pytest.raises(tfl.ArgumentError, match="masked_fill.*is not boolean"):
        tfl.masked_fill(x, x, 0.0)
    with pytest.raises(tfl.ArgumentError, match="nll_loss.*do not index the classes"):
        tfl.nn.nll_loss(x, tfl.Placeholder((None, 4), "int64"))
    with pytest.raises(tfl.ArgumentError, match="l1_loss.*reduction='avg'"):
        tfl.nn.l1_loss(x, x, reduction="avg")


def test_variance_of_dims_known_at_run_time_counts_them_when_the_graph_runs():
    x = tfl.Placeholder((None, 3), "float64")
    values = np.random.default_rng(0).standard_normal((5, 3))
    with tfl.Session() as sess:
        got = sess.run([tfl.var(x, 0), tfl.std(x, correction=0)], {x: values})
    np.testing.assert_allclose(got[0], values.var(0, ddof=1))
    np.testing.assert_allclose(got[1], values.std())


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_eager_conv_layers_with_bias_groups_and_dilation_equal_torch(rank):
    torch = pytest.importorskip("torch", reason="compares with PyTorch; pip install torch")
    layer = getattr(tfl.nn, f"Conv{rank}D")(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
    layer.bias.value = np.random.default_rng(1).standard_normal(6).astype(np.float32)  # not the zero initial bias
    x = np.random.default_rng(0).standard_normal((2, 4) + (7,) * rank).astype(np.float32)
    t = tfl.tensor(x, requires_grad=True)
    y = layer(t)
    (y * y).sum().backward()
    conv = getattr(torch.nn.functional, f"conv{rank}d")
    tx = torch.tensor(x, requires_grad=True)
    ty = conv(tx, torch.tensor(layer.weight.value), torch.tensor(layer.bias.value), stride=2, padding=2, dilation=2,
              groups=2)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(t.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-4)
