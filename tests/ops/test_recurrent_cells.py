"""The recurrent cell ops (LSTMCell, GRUCell) and their backward op (CellGrad): every backend's kernels equal the
numpy reference in float32 and float64 on awkward shapes, bad shapes are refused by name, an unrolled layer runs one
cell op per step, and the gradients of an unrolled sequence's slices are summed in one op."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.ops.recurrent_cells import CellGrad, GRUCell, LSTMCell

RNG = np.random.default_rng(36)


def cell_values(cell, n, h, dtype):
    """x_gates, h_gates, state and a gradient of the state for a cell op class, pre-activations spread over ±4."""
    state = (2, n, h) if cell is LSTMCell else (n, h)
    gates = [RNG.uniform(-4, 4, (n, cell.gates * h)).astype(dtype) for _ in range(2)]
    return gates + [RNG.standard_normal(state).astype(dtype) for _ in range(2)]


@pytest.mark.parametrize("cell", [LSTMCell, GRUCell])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, h", [(1, 1), (5, 7), (300, 130)])  # one value; odd sizes; rows split over threads
def test_cell_kernels_equal_the_numpy_reference(backend, cell, dtype, n, h):
    values = cell_values(cell, n, h, dtype)
    feeds = [tfl.Placeholder(v.shape, dtype) for v in values]
    outputs = [cell(*feeds[:3])] + [CellGrad(*feeds, cell.op_type, k) for k in range(3)]
    with tfl.Session() as sess:
        got = sess.run(outputs, dict(zip(feeds, values)))
    expected = [outputs[0].compute(*values[:3])] + [op.compute(*values) for op in outputs[1:]]
    tolerance = 2e-6 if dtype == np.float32 else 1e-13
    for g, e in zip(got, expected):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("cell, shapes", [(LSTMCell, [(3, 8), (3, 8), (3, 2)]), (LSTMCell, [(3, 8), (3, 4), (2, 3, 2)]),
                                          (GRUCell, [(3, 6), (3, 6), (3, 3)])])
def test_cell_op_on_gates_that_do_not_fit_the_state_names_the_shapes(cell, shapes):
    with pytest.raises(tfl.ShapeError, match=rf"{cell.op_type}.*gates \(N, {cell.gates}·H\).*{shapes[2]}"):
        cell(*[tfl.Placeholder(s) for s in shapes])


def test_lstm_layer_runs_one_cell_op_per_step_and_no_separate_activations():
    lstm = tfl.nn.LSTM(4, 3, num_layers=2)
    x = tfl.Placeholder((6, 2, 4))
    output, _ = lstm(x)
    with tfl.Session() as sess:
        sess.run(output, {x: RNG.standard_normal((6, 2, 4)).astype(np.float32)})
        op_types = [step.node.op_type for plan in sess._plans.values() for step in plan.steps]
    assert op_types.count("LSTMCell") == 12
    assert not {"Sigmoid", "Tanh", "Unsqueeze"} & set(op_types)


def test_gradients_of_a_sequences_slices_are_summed_in_one_op():
    x = tfl.Placeholder((4, 3), "float64")
    loss = sum(tfl.reduce_sum(x[t] * float(t + 1)) for t in range(4)) + tfl.reduce_sum(x[1:3] * x[1:3])
    grad, = tfl.gradients(loss, [x])
    value = RNG.standard_normal((4, 3))
    with tfl.Session() as sess:
        got = sess.run(grad, {x: value})
        op_types = [step.node.op_type for plan in sess._plans.values() for step in plan.steps]
    expected = np.arange(1.0, 5.0)[:, None] + np.pad(2 * value[1:3], ((1, 1), (0, 0)))
    np.testing.assert_allclose(got, expected)
    assert op_types.count("GetItemGrads") == 1 and not {"GetItemGrad", "AddN"} & set(op_types)



@pytest.mark.parametrize("kind", [tfl.nn.LSTM, tfl.nn.GRU])
def test_a_gradient_penalty_through_a_recurrent_layer_reaches_its_weights(kind):
    """A second derivative goes through CellGrad (whose gradient differentiates the cell written with ops; the
    CellGrad cases of tests/op_cases.py check it against finite differences): no silent zero or None."""
    x = tfl.Placeholder((3, 2, 4), "float64", name="x")
    layer = kind(4, 5, dtype="float64")
    first = tfl.gradients(tfl.reduce_sum(tfl.square(layer(x)[0])), [x])[0]
    second = tfl.gradients(tfl.reduce_sum(first * first), [layer.weight_hh_l0])[0]
    assert second is not None
    value = tfl.Session().run(second, {x: np.random.default_rng(3).standard_normal((3, 2, 4))})
    assert np.all(np.isfinite(value)) and np.abs(value).max() > 0
