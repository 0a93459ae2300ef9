"""tfl.viz draws an optimised plan: fused kernels as clusters naming the ops they replaced."""
import numpy as np
import pytest

import tinyflow as tfl

pytest.importorskip("graphviz", reason="the graphviz Python package is not installed (pip install graphviz)")


def test_plan_picture_shows_fused_clusters_and_the_users_graph_is_drawn_as_written():
    x = tfl.Placeholder((None, 3), name="x")
    w = tfl.Variable(np.ones((3, 2), np.float32), name="w")
    y = tfl.reduce_sum(tfl.tanh(tfl.sigmoid(tfl.matmul(x, w) * 2.0 + 1.0, name="act")), name="y")
    sess = tfl.Session()
    sess.run(y, {x: np.ones((4, 3), np.float32)})
    source = tfl.viz.to_graphviz(sess.plan([y], {x})).source
    assert "cluster_" in source and "fused: Multiply → Add → Sigmoid → Tanh" in source and "act" in source
    plain = tfl.viz.to_graphviz(y).source
    assert "fused" not in plain and "Sigmoid" in plain
