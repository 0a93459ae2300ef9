"""The two cross-entropies as single fused ops, stable for extreme logits, with their gradients.

Their public functions are in nn/losses.py; backends import the ops and `check_labels` from here (the layer below nn/).
"""
import numpy as np

from ..errors import ShapeError
from ..nodes import Operation, as_node
from ..shapes import dims_compatible, shapes_compatible
from .elementwise_ops import Sigmoid
from .registry import register_gradient
from .reductions import ExpandReduced, reduce_sum
from .softmax import Softmax, SoftmaxGrad, stable_log_softmax


def check_labels(labels, n_classes):
    """Raise ValueError naming the first label outside [0, n_classes) (class ids index the logits' columns)."""
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        bad = labels[(labels < 0) | (labels >= n_classes)][0]
        raise ValueError(f"label {bad} is outside [0, {n_classes}): labels must be class ids 0..{n_classes - 1}")


class SoftmaxCrossEntropy(Operation):
    """mean_n( logsumexp(z_n) - z_n[label_n] ) for logits z (N, C) and int labels (N,).
    Gradient wrt z: (softmax(z) - onehot(labels)) · g / N; labels get none."""

    def compute(self, logits, labels):
        check_labels(labels, logits.shape[1])
        log_probs = stable_log_softmax(logits, axis=1)
        picked = log_probs[np.arange(len(labels)), labels]
        return -picked.mean() if len(labels) else np.zeros((), logits.dtype)

    def infer_shape(self, logits_shape, labels_shape):
        if logits_shape is None or len(logits_shape) != 2:
            raise ShapeError(f"softmax_cross_entropy needs logits of shape (N, C), got {logits_shape}")
        if labels_shape is None or len(labels_shape) != 1 or not dims_compatible(labels_shape[0], logits_shape[0]):
            raise ShapeError(f"softmax_cross_entropy needs labels of shape (N,) = ({logits_shape[0]},) holding "
                             f"class ids, got {labels_shape}; for one-hot labels pass labels.argmax(1)")
        return ()

    def infer_dtype(self, logits, labels):
        if labels.kind not in "iu":
            raise ShapeError(f"softmax_cross_entropy needs integer class ids as labels, got dtype {labels}; "
                             "use a Placeholder(dtype='int64') for labels")
        return logits


class SoftmaxCrossEntropyGrad(Operation):
    """(softmax(z) - onehot(labels)) · g / N: the gradient of SoftmaxCrossEntropy wrt its logits."""

    shape_of = dtype_of = 0

    def compute(self, logits, labels, grad):
        probs = np.exp(stable_log_softmax(logits, axis=1))
        probs[np.arange(len(labels)), labels] -= 1
        return probs * (grad / max(len(labels), 1))


register_gradient(SoftmaxCrossEntropy)(lambda op, grad: [SoftmaxCrossEntropyGrad(*op.inputs, grad), None])


@register_gradient(SoftmaxCrossEntropyGrad)
def _softmax_cross_entropy_grad_grad(op, grad):
    logits, labels, g = op.inputs
    n = ExpandReduced(g, labels, axes=None, keepdims=False, mean=True)   # g / N, shape (N,)
    d_logits = SoftmaxGrad(Softmax(logits, axis=1), grad, axis=1) * n[:, None]
    d_g = reduce_sum(grad * SoftmaxCrossEntropyGrad(logits, labels, as_node(1.0, like=g)))
    return [d_logits, None, d_g]


class SigmoidCrossEntropy(Operation):
    """mean( max(z, 0) - z·t + log(1 + e^-|z|) ): binary cross-entropy on logits z, targets t in [0, 1].
    Gradient: ((σ(z) - t) · g / n, -z · g / n) with n the number of elements."""

    def compute(self, logits, labels):
        losses = np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))
        return losses.mean() if losses.size else np.zeros((), logits.dtype)

    def infer_shape(self, logits_shape, labels_shape):
        if not shapes_compatible(logits_shape, labels_shape):
            raise ShapeError(f"sigmoid_cross_entropy needs logits and labels of the same shape, got "
                             f"{logits_shape} and {labels_shape}")
        return ()


@register_gradient(SigmoidCrossEntropy)
def _sigmoid_cross_entropy_grad(op, grad):
    logits, labels = op.inputs
    share = ExpandReduced(grad, logits, axes=None, keepdims=False, mean=True)  # g / n in z's shape
    return [(Sigmoid(logits) - labels) * share, -(logits * share)]
