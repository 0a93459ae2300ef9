"""Small data sets shipped inside the package (no downloads), see PROVENANCE.md beside this file."""
import gzip
import os

import numpy as np

from .helpers import Standardizer, batches, one_hot, train_test_split

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


__all__ = ["load_boston", "load_digits", "BOSTON_FEATURES", "train_test_split", "Standardizer", "one_hot", "batches"]
