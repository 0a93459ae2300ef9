"""Property tests: for any broadcastable pair of shapes, gradients come back in each input's shape, summed."""
import pytest
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tinyflow as tfl

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


@settings(max_examples=60, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       op=st.sampled_from(["add", "subtract", "multiply", "maximum"]), unknown_dims=st.booleans())
def test_binary_op_gradients_are_summed_back_to_each_input_shape(shapes, op, unknown_dims):
    shape_a, shape_b = shapes.input_shapes
    rng = np.random.default_rng(0)
    a_val, b_val = rng.standard_normal(shape_a), rng.standard_normal(shape_b) + 0.01
    with tfl.Graph().as_default():
        # with unknown_dims, every dimension is None statically: broadcasting is resolved at run time
        a = tfl.Placeholder((None,) * len(shape_a) if unknown_dims else shape_a, "float64")
        b = tfl.Placeholder((None,) * len(shape_b) if unknown_dims else shape_b, "float64")
        out = getattr(tfl, op)(a, b)
        weights = rng.standard_normal(shapes.result_shape)
        ga, gb = tfl.gradients(tfl.reduce_sum(out * weights), [a, b])
        with tfl.Session() as sess:
            grad_a, grad_b = sess.run([ga, gb], {a: a_val, b: b_val})
    full_a, full_b = np.broadcast_to(a_val, shapes.result_shape), np.broadcast_to(b_val, shapes.result_shape)
    local = {"add": (1.0, 1.0), "subtract": (1.0, -1.0), "multiply": (full_b, full_a),
             "maximum": ((full_a > full_b) * 1.0, (full_b > full_a) * 1.0)}[op]
    expected_a = np.broadcast_to(weights * local[0], shapes.result_shape)
    expected_b = np.broadcast_to(weights * local[1], shapes.result_shape)

    def unbroadcast(g, shape):
        lead = g.ndim - len(shape)
        g = g.sum(axis=tuple(range(lead))) if lead else g
        return g.sum(axis=tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True).reshape(shape)
    assert grad_a.shape == shape_a and grad_b.shape == shape_b
    np.testing.assert_allclose(grad_a, unbroadcast(expected_a, shape_a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_b, unbroadcast(expected_b, shape_b), rtol=1e-12, atol=1e-12)
