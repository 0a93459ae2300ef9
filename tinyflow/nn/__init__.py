"""Neural-network building blocks: losses (and, built on the graph, layers)."""
from .losses import mse_loss, sigmoid_cross_entropy, softmax_cross_entropy

__all__ = ["mse_loss", "softmax_cross_entropy", "sigmoid_cross_entropy"]
