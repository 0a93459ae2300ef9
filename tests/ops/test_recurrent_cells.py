"""The recurrent loop op (Recurrence) and its backward (RecurrenceGrad): every backend's kernels equal the numpy
reference in float32 and float64 on awkward shapes, in both directions, bad shapes are refused by name, a layer runs
one loop op, and the gradients of a sequence's slices are summed in one op."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.ops.recurrent_cells import GATES, Recurrence, RecurrenceGrad

RNG = np.random.default_rng(36)


def loop_values(cell, steps, n, h, dtype, bias):
    """x_gates, w_hh, the state, maybe a bias, and a gradient of every state; pre-activations spread over ±4."""
    state = (2, n, h) if cell == "LSTM" else (n, h)
    width = GATES[cell] * h
    values = [RNG.uniform(-4, 4, (steps, n, width)), RNG.uniform(-1, 1, (width, h)), RNG.standard_normal(state)]
    values += [RNG.uniform(-1, 1, width)] * bias + [RNG.standard_normal((steps,) + state)]
    return [v.astype(dtype) for v in values]


@pytest.mark.parametrize("cell", sorted(GATES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("steps, n, h, bias, reverse, onnx", [
    (1, 1, 1, False, False, False), (3, 5, 7, True, True, True), (2, 9, 37, False, True, False),
    (4, 70, 130, True, False, True)])
def test_loop_kernels_equal_the_numpy_reference(backend, cell, dtype, steps, n, h, bias, reverse, onnx):
    """Odd sizes; rows in fours and a remainder; hidden sizes across blocks of units; rows and blocks split over
    threads; torch's gate order and ONNX's."""
    values = loop_values(cell, steps, n, h, dtype, bias)
    feeds = [tfl.Placeholder(v.shape, dtype) for v in values]
    order = {"LSTM": (0, 2, 3, 1), "GRU": (1, 0, 2), "GRU_RESET_FIRST": (1, 0, 2)}.get(cell) if onnx else None
    outputs = [Recurrence(*feeds[:-1], cell=cell, reverse=reverse, order=order),
               RecurrenceGrad(*feeds, cell=cell, reverse=reverse, order=order)]
    with tfl.Session() as sess:
        got = sess.run(outputs, dict(zip(feeds, values)))
    expected = [outputs[0].compute(*values[:-1]), outputs[1].compute(*values)]
    for g, e in zip(got, expected):  # float32: sums of up to 130 products of ±4, carried over the steps
        tolerance = (1e-4 if dtype == np.float32 else 1e-12) * max(1, np.abs(e).max())
        assert g.dtype == dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("cell, shapes", [
    ("LSTM", [(2, 3, 8), (8, 2), (3, 2)]), ("LSTM", [(2, 3, 8), (4, 2), (2, 3, 2)]),
    ("GRU", [(2, 3, 6), (6, 2), (3, 3)]), ("RNN_TANH", [(2, 3, 2), (2, 2), (3, 2), (3,)])])
def test_a_loop_on_gates_that_do_not_fit_the_state_names_the_shapes(cell, shapes):
    with pytest.raises(tfl.ShapeError, match=rf"Recurrence.*x_gates \(T, N, {GATES[cell]}·H\).*{shapes[2]}"):
        Recurrence(*[tfl.Placeholder(s) for s in shapes], cell=cell)


@pytest.mark.parametrize("cell, order", [("lstm", None), ("LSTM", (0, 1, 2, 2)), ("GRU", (0, 1, 2, 3))])
def test_an_unknown_cell_or_gate_order_is_refused_with_the_choices(cell, order):
    with pytest.raises(tfl.ArgumentError, match=rf"cell= one of.*'LSTM'.*order of its gates; got cell='{cell}'"):
        Recurrence(*[tfl.Placeholder(s) for s in [(2, 3, 8), (8, 2), (2, 3, 2)]], cell=cell, order=order)


def test_a_layer_runs_one_loop_op_per_layer_and_direction_and_no_step_ops():
    lstm = tfl.nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    x = tfl.Placeholder((6, 2, 4))
    output, _ = lstm(x)
    loss = tfl.reduce_sum(output * output)
    grads = tfl.gradients(loss, lstm.parameters())
    with tfl.Session() as sess:
        sess.run(grads, {x: RNG.standard_normal((6, 2, 4)).astype(np.float32)})
        op_types = [step.node.op_type for plan in sess._plans.values() for step in plan.steps]
    assert op_types.count("Recurrence") == op_types.count("RecurrenceGrad") == 4
    # per loop: the input projection and the gradients of W_ih, W_hh and (second layer) of its input
    assert op_types.count("MatMul") == 2 * 3 + 2 * 4
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
    """A second derivative goes through RecurrenceGrad (whose gradient differentiates the steps written with ops;
    the RecurrenceGrad cases of tests/op_cases.py check it against finite differences): no silent zero or None."""
    x = tfl.Placeholder((3, 2, 4), "float64", name="x")
    layer = kind(4, 5, dtype="float64")
    first = tfl.gradients(tfl.reduce_sum(tfl.square(layer(x)[0])), [x])[0]
    second = tfl.gradients(tfl.reduce_sum(first * first), [layer.weight_hh_l0])[0]
    assert second is not None
    value = tfl.Session().run(second, {x: np.random.default_rng(3).standard_normal((3, 2, 4))})
    assert np.all(np.isfinite(value)) and np.abs(value).max() > 0
