"""Metrics by name, computed with numpy on predictions and targets (after a run)."""
import numpy as np

from .errors import ArgumentError, ShapeError


def _aligned(pred, target):
    """Float64 arrays of one shape: (N, 1) predictions against (N,) targets must not broadcast to (N, N)."""
    pred, target = np.asarray(pred, np.float64), np.asarray(target, np.float64)
    if pred.shape != target.shape:
        if pred.size != target.size:
            raise ShapeError(f"predictions of shape {pred.shape} do not match targets of shape {target.shape}")
        pred = pred.reshape(target.shape)
    return pred, target


def mse(pred, target):
    """Mean squared error."""
    pred, target = _aligned(pred, target)
    return float(np.mean((pred - target) ** 2))


def rmse(pred, target):
    """Root mean squared error."""
    return float(np.sqrt(mse(pred, target)))


def mae(pred, target):
    """Mean absolute error."""
    pred, target = _aligned(pred, target)
    return float(np.mean(np.abs(pred - target)))


def accuracy(pred, target):
    """Share of correct classes: argmax of (N, C) scores, or logits > 0 for one binary column."""
    pred, target = np.asarray(pred), np.asarray(target)
    two_columns_or_more = pred.ndim == 2 and pred.shape[1] > 1
    classes = pred.argmax(axis=1) if two_columns_or_more else (pred.reshape(len(pred)) > 0).astype(np.int64)
    return float(np.mean(classes == target.reshape(len(target))))


METRICS = {"mse": mse, "rmse": rmse, "mae": mae, "accuracy": accuracy}


def get_metric(name):
    """A metric function by name (or a callable `fn(pred, target) -> float` as is)."""
    if callable(name):
        return name
    try:
        return METRICS[name]
    except KeyError:
        raise ArgumentError(f"unknown metric {name!r}; known metrics: {sorted(METRICS)}") from None
