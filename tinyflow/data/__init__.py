"""Small data sets shipped inside the package (no downloads), see PROVENANCE.md beside this file; and
splitting, scaling, encoding and batching arrays: the data plumbing every demo needs."""
import gzip
import os

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
BOSTON_FEATURES = ("CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT")


def load_boston():
    """The Boston housing table: X (506, 13) float64 features, y (506,) float64 median values in $1000s.
    Read PROVENANCE.md before using it for anything but learning: feature B encodes a racist assumption."""
    table = np.loadtxt(os.path.join(_HERE, "boston.csv"), delimiter=",", skiprows=2)
    return table[:, :13], table[:, 13]


def load_digits():
    """The UCI 8x8 handwritten digits: X (1797, 64) float64 pixels in 0..16, y (1797,) int64 labels."""
    with gzip.open(os.path.join(_HERE, "digits.csv.gz"), "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :64], table[:, 64].astype(np.int64)


def _order(arrays, what, shuffle, seed):  # the row order of arrays sharing their first dimension
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError(f"arrays to {what} have different lengths: {[len(a) for a in arrays]}")
    return np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)


def train_test_split(*arrays, test_size=0.2, shuffle=True, seed=0):
    """Split arrays with the same first dimension into (a_train, a_test, b_train, b_test, ...)."""
    order = _order(arrays, "split", shuffle, seed)
    n_test = int(round(len(order) * test_size)) if isinstance(test_size, float) else int(test_size)
    if not 0 < n_test < len(order):
        raise ValueError(f"test_size={test_size} leaves no training or no test rows out of {len(order)}")
    return [np.asarray(a)[rows] for a in arrays for rows in (order[n_test:], order[:n_test])]


class Standardizer:
    """Scale features to zero mean and unit variance using statistics of the data it was fitted on."""

    mean = std = None

    def fit(self, X):
        """Learn per-column mean and standard deviation (constant columns keep a scale of 1)."""
        X = np.asarray(X, dtype=np.float64)
        self.mean, std = X.mean(axis=0), X.std(axis=0)
        self.std = np.where(std > 0, std, 1.0)
        return self

    def transform(self, X):
        """(X - mean) / std, in X's float dtype."""
        if self.mean is None:
            raise ValueError("Standardizer.transform called before fit")
        X = np.asarray(X)
        return ((X - self.mean) / self.std).astype(X.dtype if X.dtype.kind == "f" else np.float64)

    def fit_transform(self, X):
        """fit(X) then transform(X)."""
        return self.fit(X).transform(X)

    def inverse_transform(self, Z):
        """Back to the original scale."""
        return np.asarray(Z) * self.std + self.mean


def one_hot(labels, num_classes=None, dtype=np.float32):
    """Integer labels (N,) to a one-hot matrix (N, num_classes)."""
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise ValueError(f"one_hot needs integer labels, got dtype {labels.dtype}")
    num_classes = int(labels.max()) + 1 if num_classes is None else num_classes
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must be in [0, {num_classes})")
    return np.eye(num_classes, dtype=dtype)[labels.ravel()]


def batches(*arrays, batch_size=32, shuffle=True, seed=None, drop_last=False):
    """Yield tuples of aligned mini-batches from arrays sharing their first dimension."""
    order = _order(arrays, "batch", shuffle, seed)
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    stop = len(order) - len(order) % batch_size if drop_last else len(order)
    for start in range(0, stop, batch_size):
        yield tuple(np.asarray(a)[order[start:start + batch_size]] for a in arrays)


__all__ = ["load_boston", "load_digits", "BOSTON_FEATURES", "train_test_split", "Standardizer", "one_hot", "batches"]
