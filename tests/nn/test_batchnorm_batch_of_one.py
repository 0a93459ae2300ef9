"""A training batch with one value per channel leaves BatchNorm's running variance finite and unchanged."""
import numpy as np

import tinyflow as tfl


def test_a_batch_of_one_updates_the_running_mean_but_not_the_variance():
    x = tfl.Placeholder((None, 3))
    bn = tfl.nn.BatchNorm1d(3, momentum=0.5)
    y = bn(x)
    flag = tfl.nn.training_flag()
    updates = tfl.group(*tfl.nn.update_ops())
    bn.running_var.value = np.array([2.0, 3.0, 4.0], np.float32)
    one = np.array([[1.0, -2.0, 4.0]], np.float32)
    with tfl.Session() as sess:
        out, _ = sess.run([y, updates], {x: one, flag: True})
    np.testing.assert_array_equal(out, np.zeros((1, 3), np.float32))  # x - mean is 0: the output is β
    np.testing.assert_allclose(bn.running_mean.value, 0.5 * one[0])
    np.testing.assert_array_equal(bn.running_var.value, [2.0, 3.0, 4.0])


def test_batchnorm2d_with_one_image_still_has_a_variance_per_channel():
    x = tfl.Placeholder((None, 2, 2, 2))
    bn = tfl.nn.BatchNorm2d(2, momentum=1.0)
    bn(x)
    data = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    with tfl.Session() as sess:
        sess.run(tfl.group(*tfl.nn.update_ops()), {x: data, tfl.nn.training_flag(): True})
    np.testing.assert_allclose(bn.running_var.value, data.reshape(2, 4).var(1, ddof=1), rtol=1e-6)


def test_fit_with_a_last_batch_of_one_predicts_finite_numbers():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(65, 4)).astype(np.float32)
    y = (X @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)
    net = tfl.nn.Sequential(tfl.nn.Linear(4, 8, act="relu"), tfl.nn.BatchNorm1d(8), tfl.nn.Linear(8, 1))
    model = tfl.Model(net, "mse", tfl.optim.Adam(1e-2))
    model.fit(X, y, epochs=3, batch_size=64, shuffle=False, verbose=0)  # batches of 64 and 1
    assert np.all(np.isfinite(net.layers[1].running_var.value))
    assert np.all(np.isfinite(model.predict(X)))
