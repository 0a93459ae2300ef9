"""The shipped data sets load without network access."""
import numpy as np

import tinyflow as tfl
from tinyflow.data import BOSTON_FEATURES, load_digits


def test_boston_has_the_classic_shape_and_values():
    X, y = tfl.data.load_boston()
    assert X.shape == (506, 13) and y.shape == (506,) and X.dtype == y.dtype == np.float64
    assert len(BOSTON_FEATURES) == 13
    assert X[0, 0] == 0.00632 and y[0] == 24.0 and y.max() == 50.0


def test_digits_are_8x8_images_with_ten_classes():
    X, y = load_digits()
    assert X.shape == (1797, 64) and y.shape == (1797,) and y.dtype == np.int64
    assert set(np.unique(y)) == set(range(10)) and X.min() == 0 and X.max() == 16
