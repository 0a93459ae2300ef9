"""Pictures of eager tensors: the recorded backward graph, and the backward pass step by step."""
import numpy as np
import pytest

import tinyflow as tfl

pytest.importorskip("graphviz", reason="the graphviz Python package draws the pictures")


def _loss():
    x = tfl.tensor(np.ones((2, 3)), requires_grad=True)
    layer = tfl.nn.Linear(3, 1, name="fc")
    return x, (layer(x) * x.sum(1, keepdims=True)).mean()


def test_backward_graph_shows_ops_leaves_and_where_they_were_made():
    x, loss = _loss()
    source = tfl.viz.backward_graph(loss, show_values=True).source
    for op_type in ("ReduceMean", "Multiply", "ReduceSum", "Add", "MatMul"):
        assert f'label="{op_type}' in source
    assert "Variable 'fc/weight'" in source and "leaf tensor" in source and "test_viz_eager.py" in source
    assert source.count("->") == 9  # 8 input edges and the one into the output


def test_backward_steps_follow_the_eager_backward_and_leave_grads_alone():
    x, loss = _loss()
    steps = tfl.viz.eager_backprop_steps(loss)
    assert sorted(steps.order) == sorted(["ReduceMean", "Multiply", "ReduceSum", "Add", "MatMul"])
    assert steps.order[:2] == ["ReduceMean", "Multiply"] and steps.order.index("Add") < steps.order.index("MatMul")
    assert "pending" in steps[0].source and "grad" in steps[-1].source
    assert x.grad is None
    loss.backward()  # the graph is still there: the pictures retained it
    assert x.grad is not None


def test_pictures_explain_what_they_need():
    with pytest.raises(tfl.TinyflowError, match="to_graphviz"):
        tfl.viz.backward_graph(tfl.Placeholder((2,)))
    with pytest.raises(tfl.TinyflowError, match="no backward pass"):
        tfl.viz.eager_backprop_steps(tfl.tensor([1.0]))
