"""Scaled-dot-product attention as one op, with torch's meaning: softmax(q kᵀ · scale + mask) v.

One op (not the five it stands for) so that a backend can compute each block of query rows' scores, their softmax and
their product with v while the scores are in cache; the optimiser's passes/attention.py makes it from imported graphs.
"""
import math

import numpy as np

from ..arguments import Arguments, rank_of
from ..errors import ShapeError
from ..nodes import Operation
from ..shapes import broadcast_shapes, dims_compatible
from .elementwise_ops import where
from .matmul import matmul, swap_last_axes
from .registry import register_gradient
from .softmax import SoftmaxGrad, softmax


class ScaledDotProductAttention(Operation):
    """softmax(q kᵀ · scale + mask) v for q (..., L, E), k (..., S, E), v (..., S, Ev) and an optional mask
    broadcasting to (..., L, S): boolean (keep where True) or added.  Gradient: through the recomputed weights."""

    def __init__(self, q, k, v, *mask, scale=None, name=None):
        if scale is None:
            if q.shape[-1] is None:
                Arguments(self, name, q).fail("scale", scale, f"cannot default to 1/√E: q's shape {q.shape} has "
                                              "no static last axis E", "pass scale=1/math.sqrt(E)")
            scale = 1 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
        self.scale = Arguments(self, name, q).number("scale", scale)
        super().__init__(q, k, v, *mask, name=name)

    def infer_shape(self, q, k, v, mask=()):
        if min(len(q), len(k), len(v)) < 2 or not (dims_compatible(q[-1], k[-1]) and dims_compatible(k[-2], v[-2])):
            raise ShapeError(f"needs q (..., L, E), k (..., S, E) and v (..., S, Ev), got shapes {q}, {k} and {v}; "
                             "q and k must share their last axis, k and v their second-to-last one")
        batch = broadcast_shapes(q[:-2], k[:-2], v[:-2], what="attention batch axes")
        scores = batch + (q[-2], k[-2])
        if broadcast_shapes(mask, scores, what="the mask and the scores (..., L, S)") != scores:
            raise ShapeError(f"the mask of shape {mask} is larger than the scores {scores}; it must broadcast to them")
        return batch + (q[-2], v[-1])

    def infer_dtype(self, q, k, v, mask=None):
        if q.kind != "f" or k != q or v != q or mask not in (None, q, np.dtype(bool)):
            raise ShapeError(f"needs q, k and v of one float dtype and a mask of it or bool, got dtypes {q}, {k}, "
                             f"{v}{f' and {mask}' if mask is not None else ''}; cast them (tfl.cast)")
        return q

    def check_values(self, *values):
        """ShapeError naming this node when values' shapes do not fit (static shapes may have been unknown)."""
        try:
            self.infer_shape(*[value.shape for value in values])
        except ShapeError as err:
            raise ShapeError(f"{self.op_type} '{self.name}': {err}") from None

    def compute(self, q, k, v, *mask):
        self.check_values(q, k, v, *mask)
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(self.scale)
        if mask:
            scores = np.where(mask[0], scores, -np.inf) if mask[0].dtype == bool else scores + mask[0]
        weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        return np.matmul(weights / np.sum(weights, axis=-1, keepdims=True), v).astype(q.dtype, copy=False)


@register_gradient(ScaledDotProductAttention)
def _attention_grad(op, grad):
    # y = P v, P = softmax(S), S = q kᵀ · scale (+ mask): dv = Pᵀ g, dS = SoftmaxGrad(P, g vᵀ), dq = dS k · scale,
    # dk = dSᵀ q · scale, a float mask's = dS (autodiff sums each to its input's shape over broadcast axes)
    q, k, v, *mask = op.inputs
    scores = matmul(q, swap_last_axes(k)) * op.scale
    if mask:
        scores = where(mask[0], scores, -np.inf) if mask[0].dtype == bool else scores + mask[0]
    weights = softmax(scores)
    d_scores = SoftmaxGrad(weights, matmul(grad, swap_last_axes(v)), axis=-1)
    d_mask = [None if mask[0].dtype == bool else d_scores] if mask else []
    return [matmul(d_scores, k) * op.scale, matmul(swap_last_axes(d_scores), q) * op.scale,
            matmul(swap_last_axes(weights), grad), *d_mask]


def scaled_dot_product_attention(q, k, v, attn_mask=None, scale=None, is_causal=False, name=None):
    """softmax(q kᵀ · scale + mask) v, as torch.nn.functional.scaled_dot_product_attention (scale: 1/√E)."""
    mask = () if attn_mask is None else (attn_mask,)
    if Arguments(ScaledDotProductAttention, name, q).flag("is_causal", is_causal):
        length, source = q.shape[-2] if rank_of(q) else None, k.shape[-2] if rank_of(k) else None
        if mask or length is None or source is None:
            Arguments(ScaledDotProductAttention, name, q, k).fail(
                "is_causal", True, f"needs no attn_mask and static L and S (q {q.shape}, k {k.shape})",
                "pass the causal mask yourself: attn_mask=tfl.tril(tfl.ones((L, S), bool))")
        mask = (np.tril(np.ones((length, source), bool)),)
    return ScaledDotProductAttention(q, k, v, *mask, scale=scale, name=name)
