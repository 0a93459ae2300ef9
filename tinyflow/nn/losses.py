"""Loss functions. The two cross-entropies are single fused ops (tinyflow/ops/losses.py), stable for extreme logits."""
from ..errors import ShapeError
from ..nodes import as_node
from ..ops.losses import SigmoidCrossEntropy, SoftmaxCrossEntropy
from ..ops.elementwise_ops import square
from ..ops.reductions import reduce_mean
from ..shapes import shapes_compatible


def softmax_cross_entropy(logits, labels, name=None):
    """Mean cross-entropy of softmax(logits) against integer class ids (one fused, stable op)."""
    return SoftmaxCrossEntropy(logits, labels, name=name)


def sigmoid_cross_entropy(logits, labels, name=None):
    """Mean binary cross-entropy of sigmoid(logits) against targets in [0, 1] (fused, stable)."""
    return SigmoidCrossEntropy(logits, labels, name=name)


def mse_loss(pred, target, name=None):
    """Mean squared error over all elements; pred and target must have the same shape."""
    pred = as_node(pred)
    target = as_node(target, like=pred)
    if not shapes_compatible(pred.shape, target.shape):
        raise ShapeError(f"mse_loss: prediction '{pred.name}' has shape {pred.shape} but target "
                         f"'{target.name}' has shape {target.shape}; broadcasting them would silently "
                         "compare every prediction with every target. Reshape one of them, "
                         "e.g. tfl.reshape(target, (-1, 1)).")
    return reduce_mean(square(pred - target), name=name)
