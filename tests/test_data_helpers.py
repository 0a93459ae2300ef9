"""train_test_split, Standardizer, one_hot, batches."""
import numpy as np
import pytest

from tinyflow.data import Standardizer, batches, one_hot, train_test_split


def test_train_test_split_keeps_rows_aligned_and_is_seeded():
    X, y = np.arange(20).reshape(10, 2), np.arange(10)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, seed=1)
    assert len(X_te) == 3 and len(X_tr) == 7
    np.testing.assert_array_equal(X_tr[:, 0] // 2, y_tr)
    np.testing.assert_array_equal(train_test_split(X, y, test_size=0.3, seed=1)[1], X_te)
    with pytest.raises(ValueError, match="different lengths"):
        train_test_split(X, y[:5])


def test_standardizer_round_trips():
    X = np.random.default_rng(0).normal(3, 2, (100, 3))
    X[:, 2] = 1.0  # a constant column must not divide by zero
    s = Standardizer().fit(X)
    Z = s.transform(X)
    np.testing.assert_allclose(Z[:, :2].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(0), 1, atol=1e-12)
    np.testing.assert_allclose(s.inverse_transform(Z), X)


def test_one_hot():
    np.testing.assert_array_equal(one_hot([2, 0], 3), [[0, 0, 1], [1, 0, 0]])
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        one_hot([2], 2)


def test_batches_cover_every_row_once_and_respect_drop_last():
    X, y = np.arange(10), np.arange(10) * 10
    seen = [(xb, yb) for xb, yb in batches(X, y, batch_size=4, seed=0)]
    assert [len(xb) for xb, _ in seen] == [4, 4, 2]
    np.testing.assert_array_equal(np.sort(np.concatenate([xb for xb, _ in seen])), X)
    assert all(np.array_equal(xb * 10, yb) for xb, yb in seen)
    assert [len(b[0]) for b in batches(X, batch_size=4, drop_last=True, shuffle=False)] == [4, 4]
