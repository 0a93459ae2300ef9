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


def _summed_in_one_reduce(value, shape):
    """The plain definition: one np.add.reduce over every axis broadcasting added or stretched."""
    lead = value.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and value.shape[lead + i] != 1)
    return np.add.reduce(value, axis=axes, keepdims=True).reshape(shape)


def test_summing_merged_axes_outer_first_agrees_with_one_reduce_for_every_broadcast_of_small_shapes():
    import itertools
    from tinyflow.ops.broadcasting import sum_to_shape
    rng = np.random.default_rng(0)
    checked = 0
    for ndim in range(5):
        for value_shape in itertools.product([0, 1, 2, 3], repeat=ndim):
            value = rng.standard_normal(value_shape).astype(np.float32)
            for kept in range(ndim + 1):
                tail = value_shape[ndim - kept:]
                for ones in itertools.product([False, True], repeat=kept):
                    shape = tuple(1 if one else d for one, d in zip(ones, tail))
                    got, expected = sum_to_shape(value, shape), _summed_in_one_reduce(value, shape)
                    assert type(got) is np.ndarray and got.shape == shape and got.dtype == expected.dtype
                    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
                    checked += 1
    assert checked > 9000
    ints = rng.integers(0, 5, (3, 4), dtype=np.int8)  # numpy's integer sums widen; so do these
    assert sum_to_shape(ints, (4,)).dtype == _summed_in_one_reduce(ints, (4,)).dtype
    strided = rng.standard_normal((6, 8, 5, 5)).astype(np.float32)[::2, :, ::2]  # not contiguous: reshape copies
    np.testing.assert_allclose(sum_to_shape(strided, (1, 8, 1, 1)), _summed_in_one_reduce(strided, (1, 8, 1, 1)),
                               rtol=1e-5)


def test_a_weight_applied_to_a_batch_gets_its_gradient_from_one_product_not_a_sum_of_per_entry_products():
    """(8, 16, 4) @ (4, 3): the weight's gradient is one (4, 128) @ (128, 3) product, not eight (4, 16) @ (16, 3)
    ones in an (8, 4, 3) array summed afterwards (a transformer layer's weights made (batch, 256, 768) arrays)."""
    x, w = tfl.Placeholder((8, 16, 4), "float64"), tfl.Variable(np.ones((4, 3)), name="w")
    grad = tfl.gradients(tfl.reduce_sum(tfl.square(tfl.matmul(x, w))), [w])[0]
    value = np.random.default_rng(0).standard_normal((8, 16, 4))
    with tfl.Session() as sess:
        got = sess.run(grad, {x: value})
        steps = [step.node for plan in sess._plans.values() for step in plan.steps]
    flat = value.reshape(-1, 4)
    np.testing.assert_allclose(got, 2 * flat.T @ (flat @ np.ones((4, 3))))
    assert not any(node.op_type == "SumToShapeOf" for node in steps)
    assert not any(node.shape == (8, 4, 3) for node in steps)
