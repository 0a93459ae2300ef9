"""Gradients summed back to a broadcast input's shape are arrays, also when that shape is ()."""
import numpy as np

import tinyflow as tfl


def test_the_gradient_of_a_scalar_broadcast_over_a_batch_is_a_writable_array():
    x = tfl.Placeholder((None, 3), name="x")
    b = tfl.Variable(np.float32(0.5), name="b")
    grad = tfl.gradients(tfl.reduce_sum(x * 2.0 + b), [b])[0]
    with tfl.Session() as sess:
        for _ in range(3):  # interpreted, then compiled
            value = sess.run(grad, {x: np.ones((4, 3), np.float32)})
            assert isinstance(value, np.ndarray), type(value)  # as on every backend, not a numpy scalar
            assert value.shape == () and value.dtype == np.float32 and value == 12.0
            value[...] = 0.0  # the caller's own array
