"""Scaled-dot-product attention: torch's values and gradients on every backend (the C kernel at every size), finite
differences on awkward shapes, and errors that name the op and the shapes."""
import numpy as np
import pytest
import torch

import tinyflow as tfl
from tinyflow.backends import CBackend
from tinyflow.testing import gradcheck

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

RNG = np.random.default_rng(0)
# (q, k, v) shapes: one head and batch 1, L ≠ S, E ≠ Ev, batch 3 with heads, query rows not a multiple of the C kernel's
# 4, more keys and value columns than one vector of them, and no head axis at all
SHAPES = [((1, 1, 5, 3), (1, 1, 7, 3), (1, 1, 7, 2)), ((3, 2, 6, 4), (3, 2, 19, 4), (3, 2, 19, 5)),
          ((3, 9, 8), (3, 4, 8), (3, 4, 17))]


def masking(kind, q_shape, k_shape, dtype):
    """attn_mask / is_causal arguments: a float (L, S) mask added, a boolean mask per batch entry and key (broadcast
    over heads and queries, every row keeping a key), or the causal mask."""
    if kind == "float":
        return {"attn_mask": RNG.standard_normal((q_shape[-2], k_shape[-2])).astype(dtype)}
    if kind == "bool":
        keep = RNG.random(q_shape[:1] + (1,) * (len(q_shape) - 2) + k_shape[-2:-1]) > 0.4
        keep[..., 0] = True
        return {"attn_mask": keep}
    return {"is_causal": True} if kind == "causal" else {}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("mask", [None, "float", "bool", "causal"])
def test_attention_values_and_gradients_match_torch(backend, monkeypatch, dtype, shapes, mask):
    monkeypatch.setattr(CBackend, "small_size", 0)  # the C kernel at every size
    arrays = [RNG.standard_normal(shape).astype(dtype) for shape in shapes]
    options = masking(mask, shapes[0], shapes[1], dtype)
    inputs = [tfl.Placeholder(a.shape, dtype) for a in arrays]
    y = tfl.nn.scaled_dot_product_attention(*inputs, **options)
    seed = RNG.standard_normal(y.shape).astype(dtype)
    sess = tfl.Session()
    got = sess.run([y] + tfl.gradients(tfl.reduce_sum(y * seed), inputs), dict(zip(inputs, arrays)))
    if backend == "c":
        assert sess.backend.report.kernel_ops["ScaledDotProductAttention"] == 1  # C, not the numpy fallback
    tensors = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = torch.nn.functional.scaled_dot_product_attention(
        *tensors, **{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in options.items()})
    expected.backward(torch.from_numpy(seed))
    tight = dict(rtol=3e-5, atol=3e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    for value, want in zip(got, [expected] + [t.grad for t in tensors]):
        assert value.dtype == dtype
        np.testing.assert_allclose(value, want.detach().numpy(), **tight)


@pytest.mark.parametrize("shapes", SHAPES)
def test_attention_gradient_of_every_input_and_the_float_mask_matches_finite_differences(shapes):
    arrays = [RNG.standard_normal(shape) for shape in shapes]
    mask = RNG.standard_normal((shapes[0][-2], shapes[1][-2]))  # broadcast over the batch: its gradient is summed
    gradcheck(lambda q, k, v, m: tfl.nn.scaled_dot_product_attention(q, k, v, m, scale=0.7), arrays + [mask])


def test_eager_attention_computes_and_backpropagates_as_the_graph():
    arrays = [RNG.standard_normal(shape) for shape in SHAPES[1]]
    tensors = [tfl.tensor(a, requires_grad=True) for a in arrays]
    y = tfl.nn.scaled_dot_product_attention(*tensors, is_causal=True)
    tfl.reduce_sum(y * y).backward()
    inputs = [tfl.Placeholder(a.shape, "float64") for a in arrays]
    graph_y = tfl.nn.scaled_dot_product_attention(*inputs, is_causal=True)
    want = tfl.Session().run([graph_y] + tfl.gradients(tfl.reduce_sum(graph_y * graph_y), inputs),
                             dict(zip(inputs, arrays)))
    for got, expected in zip([y.numpy()] + [t.grad for t in tensors], want):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes, options, words", [
    (((2, 5, 4), (2, 6, 3), (2, 6, 3)), {}, "(2, 5, 4), (2, 6, 3) and (2, 6, 3)"),  # E of q and k differ
    (((2, 5, 4), (2, 6, 4), (2, 7, 3)), {}, "second-to-last"),  # S of k and v differ
    (((2, 5, 4), (2, 6, 4), (2, 6, 3)), {"attn_mask": np.zeros((3, 5, 6), np.float32)}, "(3, 5, 6), (2, 5, 6)"),
    (((2, 5, 4), (2, 6, 4), (2, 6, 3)), {"attn_mask": np.zeros((4, 1, 5, 6), np.float32)}, "larger than the scores"),
    (((2, 5, 4), (2, 6, 4), (2, 6, 3)), {"attn_mask": np.zeros((5, 6), np.int64)}, "int64; cast"),
    (((2, 5, 4), (2, 6, 4), (2, 6, 3)), {"attn_mask": np.ones((5, 6), bool), "is_causal": True}, "needs no attn_mask"),
    (((None, 5, None), (2, 6, 4), (2, 6, 3)), {}, "pass scale="),
])
def test_attention_on_unfit_inputs_names_the_op_and_the_shapes(shapes, options, words):
    inputs = [tfl.Placeholder(shape, "float32") for shape in shapes]
    with pytest.raises(tfl.TinyflowError, match="ScaledDotProductAttention") as caught:
        tfl.nn.scaled_dot_product_attention(*inputs, **options)
    assert words in str(caught.value)


def test_attention_shapes_known_only_at_run_time_are_checked_before_any_kernel(backend):
    q, k, v = (tfl.Placeholder((None, None, None), "float32", name=n) for n in "qkv")
    y = tfl.nn.scaled_dot_product_attention(q, k, v, scale=0.5)
    feed = {q: np.ones((2, 64, 8), np.float32), k: np.ones((2, 64, 9), np.float32), v: np.ones((2, 64, 8), np.float32)}
    with pytest.raises(tfl.TinyflowError, match=r"ScaledDotProductAttention .*\(2, 64, 8\), \(2, 64, 9\)"):
        tfl.Session().run(y, feed)
