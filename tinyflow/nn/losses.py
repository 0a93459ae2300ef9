"""Loss functions, with torch.nn.functional's names and `reduction`; the two cross-entropies on logits are single
fused ops (tinyflow/ops/cross_entropy.py), stable for extreme logits, the others are built of ops."""
from ..arguments import rank_of
from ..errors import ShapeError
from ..nodes import as_node
from ..ops.array_ops import checks, identity
from ..ops.elementwise_ops import abs as absolute, cast, divide, log, maximum, not_equal, softplus, square, where
from ..ops.indexing import take_along_axis
from ..ops.cross_entropy import SigmoidCrossEntropy, SoftmaxCrossEntropy
from ..ops.reductions import reduce_mean, reduce_sum
from ..ops.shape_ops import squeeze, unsqueeze
from ..shapes import shapes_compatible


def softmax_cross_entropy(logits, labels, name=None):
    """Mean cross-entropy of softmax(logits) against integer class ids (one fused, stable op)."""
    return SoftmaxCrossEntropy(logits, labels, name=name)


def sigmoid_cross_entropy(logits, labels, name=None):
    """Mean binary cross-entropy of sigmoid(logits) against targets in [0, 1] (fused, stable)."""
    return SigmoidCrossEntropy(logits, labels, name=name)


def _pair(function, pred, target):
    """pred and target as nodes of one shape: broadcasting them would compare every prediction with every target."""
    pred = as_node(pred)
    target = as_node(target, like=pred)
    if not shapes_compatible(pred.shape, target.shape):
        raise ShapeError(f"{function}: prediction '{getattr(pred, 'name', 'tensor')}' has shape {pred.shape} but "
                         f"target '{getattr(target, 'name', 'tensor')}' has shape {target.shape}; broadcasting them "
                         "would silently compare every prediction with every target. Reshape one of them, "
                         "e.g. tfl.reshape(target, (-1, 1)).")
    return pred, target


def _reduced(function, losses, reduction, name):
    """The losses averaged ('mean'), summed ('sum') or each kept ('none'), as torch's `reduction`."""
    if not isinstance(reduction, str) or reduction not in ("mean", "sum", "none"):
        checks(function, name).fail("reduction", reduction, "is not a reduction", "pass 'mean', 'sum' or 'none'")
    if reduction == "none":
        return losses if name is None else identity(losses, name=name)
    return (reduce_mean if reduction == "mean" else reduce_sum)(losses, name=name)


def mse_loss(pred, target, reduction="mean", name=None):
    """The squared errors (pred - target)², averaged by default; pred and target must have the same shape."""
    pred, target = _pair("mse_loss", pred, target)
    return _reduced("mse_loss", square(pred - target), reduction, name)


def l1_loss(pred, target, reduction="mean", name=None):
    """The absolute errors |pred - target|, averaged by default (torch.nn.functional.l1_loss)."""
    pred, target = _pair("l1_loss", pred, target)
    return _reduced("l1_loss", absolute(pred - target), reduction, name)


def smooth_l1_loss(pred, target, beta=1.0, reduction="mean", name=None):
    """0.5 d² / beta where the error |d| < beta, |d| - 0.5 beta elsewhere (torch's; beta=0 is l1_loss)."""
    pred, target = _pair("smooth_l1_loss", pred, target)
    beta = checks("smooth_l1_loss", name, pred).number("beta", beta, 0.0)
    error = absolute(pred - target)
    losses = error if beta == 0 else where(error < beta, 0.5 / beta * square(error), error - 0.5 * beta)
    return _reduced("smooth_l1_loss", losses, reduction, name)


def binary_cross_entropy(probs, target, reduction="mean", name=None):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p and targets t, each log at least -100 (as torch's)."""
    probs, target = _pair("binary_cross_entropy", probs, target)
    losses = -(target * maximum(log(probs), -100.0) + (1.0 - target) * maximum(log(1.0 - probs), -100.0))
    return _reduced("binary_cross_entropy", losses, reduction, name)


def binary_cross_entropy_with_logits(logits, target, reduction="mean", name=None):
    """binary_cross_entropy(sigmoid(logits), target), computed stably as softplus(z) - z t (as torch's)."""
    logits, target = _pair("binary_cross_entropy_with_logits", logits, target)
    return _reduced("binary_cross_entropy_with_logits", softplus(logits) - logits * target, reduction, name)


def nll_loss(log_probs, target, ignore_index=-100, reduction="mean", name=None):
    """-log_probs[n, target_n] for log-probabilities (N, C) or (N, C, d...) and class ids (N) or (N, d...); 'mean'
    averages over the targets that are not `ignore_index` (torch.nn.functional.nll_loss)."""
    log_probs = as_node(log_probs)
    target = as_node(target, like=log_probs)
    check = checks("nll_loss", name, log_probs, target)
    ignore_index = check.integer("ignore_index", ignore_index)
    if target.dtype.kind not in "iu" or None not in (rank_of(log_probs), rank_of(target)) and (
            rank_of(log_probs) < 2 or rank_of(target) != rank_of(log_probs) - 1):
        check.fail("target", f"class ids of shape {target.shape} and dtype {target.dtype}",
                   f"do not index the classes (axis 1) of log-probabilities of shape {log_probs.shape}",
                   "pass int class ids of shape (N, d...) for log-probabilities (N, C, d...)")
    kept = not_equal(target, ignore_index)
    picked = squeeze(take_along_axis(log_probs, unsqueeze(where(kept, target, 0), 1), 1), 1)
    losses = where(kept, -picked, 0.0)  # not -picked · kept: an ignored row's log-probability may be -inf
    if reduction != "mean":
        return _reduced("nll_loss", losses, reduction, name)
    return divide(reduce_sum(losses), reduce_sum(cast(kept, log_probs.dtype)), name=name)
