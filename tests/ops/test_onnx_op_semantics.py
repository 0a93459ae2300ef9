"""The semantics of the ops added for ONNX import that gradient checks do not see: ties, signs, empty
reductions, dtypes, run-time errors, and the same functions in eager mode and inside to_static."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def run(node, feed=None):
    with tfl.Session() as sess:
        return sess.run(node, feed or {})


def test_argmax_and_argmin_flatten_by_default_keep_dims_and_pick_the_first_or_last_tie():
    x = np.array([[1, 5, 5], [7, 0, 7]])
    assert run(tfl.argmax(x)) == 3 and run(tfl.argmin(x)) == 4
    np.testing.assert_array_equal(run(tfl.argmax(x, 1, keepdims=True)), [[1], [0]])
    np.testing.assert_array_equal(run(tfl.ops.reductions.ArgMax(x, 1, select_last_index=True)), [2, 2])
    np.testing.assert_array_equal(run(tfl.ops.reductions.ArgMin(x, 0, True, True)), [[0, 1, 0]])
    assert run(tfl.ops.reductions.ArgMax(x, None, True, True)).shape == (1, 1)
    assert tfl.argmax(tfl.Placeholder((None, 3)), axis=0).dtype == np.int64


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint64", "int8"])
def test_topk_takes_the_lower_index_first_among_ties(dtype):
    x = np.array([[3, 1, 3, 2, 1], [0, 0, 0, 0, 0]], dtype)
    values, indices = tfl.topk(x, 3)
    got_values, got_indices = run([values, indices])
    np.testing.assert_array_equal(got_indices, [[0, 2, 3], [0, 1, 2]])
    np.testing.assert_array_equal(got_values, [[3, 3, 2], [0, 0, 0]])
    assert got_values.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(run(tfl.topk(x, 2, largest=False)[1]), [[1, 4], [0, 1]])


def test_empty_reductions_give_their_identities():
    empty = np.zeros((2, 0, 4), np.float32)
    assert (run(tfl.reduce_max(empty, 1)) == -np.inf).all() and (run(tfl.reduce_min(empty, 1)) == np.inf).all()
    assert (run(tfl.reduce_prod(empty, 1)) == 1).all() and (run(tfl.reduce_sum(empty, 1)) == 0).all()
    assert (run(tfl.reduce_logsumexp(empty, 1)) == -np.inf).all()
    assert (run(tfl.reduce_max(np.zeros((0, 3), np.int64), 0)) == np.iinfo(np.int64).min).all()
    assert run(tfl.reduce_logsumexp(np.full(3, -np.inf))) == -np.inf


def test_logsumexp_keeps_precision_for_large_values():
    x = np.array([1000.0, 1000.0, -np.inf])
    assert run(tfl.reduce_logsumexp(x)) == pytest.approx(1000 + np.log(2))


def test_the_gradient_of_a_product_with_a_zero_is_exact():
    x = tfl.Placeholder((3,), "float64")
    (g,) = tfl.gradients(tfl.reduce_prod(x), [x])
    np.testing.assert_array_equal(run(g, {x: [0.0, 2.0, 3.0]}), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(run(g, {x: [0.0, 2.0, 0.0]}), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32"])
def test_mod_takes_the_divisor_sign_and_fmod_the_dividend_sign(dtype):
    a, b = np.array([-7, 7, -7, 7], dtype), np.array([3, -3, -3, 3], dtype)
    np.testing.assert_array_equal(run(tfl.mod(a, b)), [2, -2, -1, 1])
    np.testing.assert_array_equal(run(tfl.fmod(a, b)), [-1, 1, -1, 1])
    assert tfl.mod(a, b).dtype == np.dtype(dtype)


def test_clip_bounds_default_to_the_dtype_range_and_keep_its_dtype():
    x = np.array([-128, 0, 127], np.int8)
    np.testing.assert_array_equal(run(tfl.clip(x, max=np.int8(10))), [-128, 0, 10])
    assert tfl.clip(x, min=np.int8(-5)).dtype == np.int8
    np.testing.assert_array_equal(run(tfl.clip(np.array([np.nan, -2.0, 2.0]), -1.0, 1.0)), [np.nan, -1.0, 1.0])
    np.testing.assert_array_equal(run(tfl.clip(np.array([0.0, 5.0]), 3.0, 1.0)), [1.0, 1.0])  # low > high: high


def test_gelu_and_erf_values():
    x = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(run(tfl.erf(x)), [-0.9999779095030014, -0.5204998778130465, 0, 0.5204998778130465,
                                                 0.9999779095030014], rtol=1e-15)
    np.testing.assert_allclose(run(tfl.gelu(x)), x * 0.5 * (1 + run(tfl.erf(x / np.sqrt(2)))), rtol=1e-15)


def test_pad_modes_match_numpy_and_negative_widths_crop():
    x = np.arange(12.0).reshape(3, 4)
    for mode in ("reflect", "edge", "wrap"):
        np.testing.assert_array_equal(run(tfl.pad(x, ((1, 2), (3, 1)), mode=mode)), np.pad(x, ((1, 2), (3, 1)), mode))
    np.testing.assert_array_equal(run(tfl.pad(x, ((-1, 1), (0, -2)), value=9)),
                                  np.pad(x[1:, :2], ((0, 1), (0, 0)), constant_values=9))


def test_gather_out_of_range_is_an_execution_error_naming_the_node():
    x = tfl.Placeholder((3, 2), name="table")
    i = tfl.Placeholder((2,), "int64", name="ids")
    y = tfl.gather(x, i, name="lookup")
    with pytest.raises(tfl.ExecutionError, match="lookup"):
        run(y, {x: np.zeros((3, 2)), i: [0, 3]})
    with pytest.raises(tfl.ShapeError, match="integer indices"):
        tfl.gather(x, tfl.Placeholder((2,), "float32"))


def test_the_gather_gradient_adds_up_repeated_indices():
    x = tfl.Placeholder((3, 2), "float64")
    (g,) = tfl.gradients(tfl.reduce_sum(tfl.gather(x, np.array([[2, 0], [2, -1]]))), [x])
    np.testing.assert_array_equal(run(g, {x: np.zeros((3, 2))}), [[1, 1], [0, 0], [3, 3]])


def test_constant_scalar_gathers_are_views_whose_gradients_join_in_one_op():
    """An attention's q, k and v gathered from one projection by constant indices (ONNX exports of
    nn.MultiheadAttention): plain indexing, and the three gradients one pass, not three scatters and their sum."""
    x = tfl.Placeholder((2, 3, 4), "float64")
    parts = [tfl.gather(x, tfl.Constant(np.int64(k)), axis=1) for k in range(3)] + [tfl.gather(x, -1, axis=-1)]
    assert [p.shape for p in parts] == [(2, 4)] * 3 + [(2, 3)]
    loss = sum(tfl.reduce_sum(p * float(k + 1)) for k, p in enumerate(parts))
    (g,) = tfl.gradients(loss, [x])
    value = np.random.default_rng(0).standard_normal((2, 3, 4))
    with tfl.Session() as sess:
        got_parts, got = sess.run([parts, g], {x: value})
        op_types = [step.node.op_type for plan in sess._plans.values() for step in plan.steps]
    for k in range(3):
        np.testing.assert_array_equal(got_parts[k], value[:, k])
    expected = np.broadcast_to(np.array([1.0, 2.0, 3.0])[None, :, None], (2, 3, 4)).copy()
    expected[..., -1] += 4
    np.testing.assert_array_equal(got, expected)
    assert not {"Gather", "GatherGrad", "AddN"} & set(op_types) and op_types.count("GetItemGrads") == 1


def test_split_stack_squeeze_unsqueeze_flatten_and_expand_shapes():
    x = tfl.Placeholder((None, 6, 1))
    assert [p.shape for p in tfl.split(x, [2, 4], axis=1)] == [(None, 2, 1), (None, 4, 1)]
    assert [p.shape for p in tfl.split(x, 3, axis=-2)] == [(None, 2, 1)] * 3
    assert tfl.stack([x, x], axis=1).shape == (None, 2, 6, 1)
    assert tfl.squeeze(x, -1).shape == (None, 6) and tfl.unsqueeze(x, (0, 2)).shape == (1, None, 1, 6, 1)
    assert tfl.flatten(x, 1).shape == (None, 6) and tfl.flatten(x).shape == (None,)
    assert tfl.expand(x, (2, 1, 6, 5)).shape == (2, None, 6, 5) and tfl.tile(x, (1, 2)).shape == (None, 6, 2)
    value = np.arange(12.0).reshape(2, 6, 1)
    np.testing.assert_array_equal(run(tfl.flatten(x, 1), {x: value}), value.reshape(2, 6))


def test_einsum_spellings():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    for equation, operands in [("ij,jk", (a, b)), ("ij,jk->ik", (a, b)), ("ij->", (a,)), ("ji", (a,)),
                               ("...j,jk->...k", (a, b)), ("i,i->i", (a[0], a[1])), ("ii->i", (b[:, :3],))]:
        np.testing.assert_allclose(run(tfl.einsum(equation, *operands)), np.einsum(equation, *operands))


def test_the_new_functions_work_on_eager_tensors_and_inside_to_static():
    def f(x):
        values, _ = tfl.topk(tfl.gelu(x) + tfl.sin(x), 2)
        parts = tfl.split(tfl.pad(x, ((0, 0), (1, 1)), mode="reflect"), [3, 3], axis=1)
        return tfl.reduce_logsumexp(tfl.stack(parts, 0), 0) * tfl.clip(tfl.reduce_min(values, 1, keepdims=True), 0)

    value = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    x = tfl.tensor(value, requires_grad=True)
    eager = f(x)
    eager.sum().backward()
    static = tfl.jit.to_static(f, input_spec=[InputSpec([None, 4], "float32", "x")])
    placeholder = tfl.Placeholder((None, 4), name="x")
    graph_out = f(placeholder)
    (graph_grad,) = tfl.gradients(tfl.reduce_sum(graph_out), [placeholder])
    expected, expected_grad = run([graph_out, graph_grad], {placeholder: value})
    np.testing.assert_allclose(eager.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(static(value).numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(x.grad, expected_grad, rtol=1e-5, atol=1e-6)


def test_a_shape_vector_picked_with_an_ellipsis_a_mask_or_negative_indices_keeps_its_static_entries():
    x = tfl.Placeholder((2, None, 5), name="x")
    size = tfl.shape(x)
    assert tfl.reshape(tfl.Placeholder((10, None, 1)), size[...]).shape == (2, None, 5)
    assert tfl.reshape(tfl.Placeholder((10,)), size[np.array([True, False, True])]).shape == (2, 5)
    assert tfl.reshape(tfl.Placeholder((10,)), tfl.gather(size, np.array([-1, 0]))).shape == (5, 2)
    y = tfl.Placeholder((2, 3, 5), name="y")
    np.testing.assert_array_equal(run(tfl.reshape(tfl.ones_like(y), tfl.shape(y)[...]), {y: np.ones((2, 3, 5))}),
                                  np.ones((2, 3, 5)))
