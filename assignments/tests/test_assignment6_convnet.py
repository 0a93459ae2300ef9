"""Assignment 6: a convnet in graph mode, from conv arithmetic to a trained digits classifier."""
import numpy as np
import pytest

import tinyflow as tfl

pytestmark = pytest.mark.assignment6


@pytest.fixture
def a6(student_module):
    return student_module("assignment6_convnet")


@pytest.fixture(scope="module")
def digits():
    X, y = tfl.data.load_digits()
    X = (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return tfl.data.train_test_split(X, y, test_size=0.25, seed=0)


@pytest.mark.parametrize("n, kernel, stride, padding, expected", [(8, 3, 1, 1, 8), (8, 3, 1, 0, 6), (8, 3, 2, 0, 3),
                                                                  (7, 2, 2, 0, 3), (5, 5, 1, 2, 5)])
def test_conv_output_size(a6, n, kernel, stride, padding, expected):
    assert a6.conv_output_size(n, kernel, stride, padding) == expected


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 0), (2, 1)])
def test_naive_convolution_matches_tinyflow(a6, stride, padding):
    rng = np.random.default_rng(stride * 10 + padding)
    x, w = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2))
    images, kernel = tfl.Placeholder(x.shape, "float64"), tfl.Placeholder(w.shape, "float64")
    with tfl.Session() as sess:
        expected = sess.run(tfl.conv2d(images, kernel, stride=stride, padding=padding), {images: x, kernel: w})
    np.testing.assert_allclose(a6.conv2d_naive(x, w, stride, padding), expected, rtol=1e-10, atol=1e-12)


def test_convnet_shapes_and_parameters(a6):
    net = a6.build_convnet()
    logits = net(tfl.Placeholder((None, 1, 8, 8), "float32"))
    assert logits.shape == (None, 10)
    assert sum(p.value.size for p in net.parameters()) == (8 * 1 * 3 * 3 + 8) + (8 * 4 * 4 * 10 + 10)


def test_training_graph_nodes(a6, digits):
    X_train, _, y_train, _ = digits
    parts = a6.build_training_graph(a6.build_convnet())
    assert parts["images"].shape == (None, 1, 8, 8) and parts["labels"].dtype == np.int64
    assert parts["loss"].shape == () and parts["accuracy"].shape == ()
    with tfl.Session() as sess:
        loss, accuracy = sess.run([parts["loss"], parts["accuracy"]],
                                  {parts["images"]: X_train[:50], parts["labels"]: y_train[:50]})
    assert abs(loss - np.log(10)) < 0.5  # an untrained net guesses: about log(10)
    assert 0.0 <= accuracy <= 1.0


def test_training_reaches_90_percent_on_held_out_digits(a6, digits):
    X_train, X_test, y_train, y_test = digits
    parts = a6.build_training_graph(a6.build_convnet(), lr=0.01)
    history = a6.train(parts, X_train, y_train, epochs=4, batch_size=32)
    assert len(history) == 4 and history[-1] < history[0]
    with tfl.Session() as sess:
        accuracy = sess.run(parts["accuracy"], {parts["images"]: X_test, parts["labels"]: y_test})
    assert accuracy > 0.9, accuracy
