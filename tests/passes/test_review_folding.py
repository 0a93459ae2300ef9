"""Folding ones_like / zeros_like keeps the side effects of the subgraph their input came from."""
import numpy as np

import tinyflow as tfl


def test_ones_like_of_an_assign_still_runs_the_assign():
    counter = tfl.Variable(np.zeros(3, np.float32), name="counter")
    bump = tfl.assign_add(counter, tfl.Constant(np.ones(3, np.float32)))
    doubled = tfl.reduce_sum(tfl.ones_like(bump) * 2.0)
    downstream = tfl.reduce_sum(tfl.zeros_like(bump * 3.0) + 1.0)  # the assign two ops up
    with tfl.Session() as sess:
        for _ in range(3):
            assert sess.run(doubled) == 6.0
        assert sess.run(downstream) == 3.0
    np.testing.assert_array_equal(counter.value, [4.0, 4.0, 4.0])  # every run incremented it


def test_ones_like_of_a_pure_subgraph_is_still_folded():
    x = tfl.Placeholder((2, 3), name="x")
    loss = tfl.reduce_sum(tfl.square(x))
    grad = tfl.gradients(loss, [x])[0]  # backprop seeds with ones_like(loss)
    with tfl.Session() as sess:
        value = sess.run(grad, {x: np.ones((2, 3), np.float32)})
        types = {node.op_type for node in sess.plan([grad], [x]).optimized.nodes}
    np.testing.assert_array_equal(value, 2.0)
    assert "OnesLike" not in types
