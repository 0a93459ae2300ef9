"""tfl.nn.LSTM, GRU and RNN against torch.nn's with the same weights (outputs, final states, gradients of the input,
the initial state and every weight) in eager and graph mode; the cells checked by finite differences."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec
from tinyflow.nn.recurrent import unroll
from tinyflow.testing import gradcheck

torch = pytest.importorskip("torch", reason="these checks compare with PyTorch; pip install torch")
RNG = np.random.default_rng(7)

KINDS = {"LSTM": ({}, {}), "GRU": ({}, {}), "RNN-tanh": ({}, {}),
         "RNN-relu": ({"nonlinearity": "relu"}, {"nonlinearity": "relu"})}
CONFIGS = [pytest.param(dict(num_layers=2, bidirectional=True), id="2-layers-bidirectional"),
           pytest.param(dict(num_layers=1, bias=False, batch_first=True), id="1-layer-no-bias-batch-first")]


def pair(kind, dtype, config):
    """(tinyflow layer, torch layer holding the same weights) of one kind."""
    ours_kw, theirs_kw = KINDS[kind]
    name = kind.split("-")[0]
    ours = getattr(tfl.nn, name)(4, 5, dtype=dtype, **config, **ours_kw)
    theirs = getattr(torch.nn, name)(4, 5, **config, **theirs_kw).to(getattr(torch, dtype))
    with torch.no_grad():
        for param_name, param in theirs.named_parameters():
            param.copy_(torch.from_numpy(getattr(ours, param_name).value))
    return ours, theirs


def torch_run(theirs, x, hx, projections):
    """torch's outputs and the gradients of sum(output·P) + sum(h_n·Q) (+ sum(c_n·R))."""
    x = torch.tensor(x, requires_grad=True)
    hx = [torch.tensor(h, requires_grad=True) for h in hx]
    output, final = theirs(x, (tuple(hx) if len(hx) == 2 else hx[0]) if hx else None)
    finals = list(final) if isinstance(final, tuple) else [final]
    sum((t * torch.from_numpy(p)).sum() for t, p in zip([output] + finals, projections)).backward()
    grads = [x.grad.numpy()] + [h.grad.numpy() for h in hx] + [p.grad.numpy() for p in theirs.parameters()]
    return [t.detach().numpy() for t in [output] + finals], grads


def inputs_for(ours, dtype, with_state):
    """An input batch (3 steps of 2 sequences) and, with_state, initial states, as numpy arrays."""
    x = RNG.standard_normal((2, 3, 4) if ours.batch_first else (3, 2, 4)).astype(dtype)
    layers = ours.num_layers * (2 if ours.bidirectional else 1)
    hx = [RNG.standard_normal((layers, 2, 5)).astype(dtype) for _ in range(ours.states)] if with_state else []
    return x, hx


def tolerances(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


def results(output, final):
    return [output] + (list(final) if isinstance(final, tuple) else [final])


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_layers_in_eager_mode_equal_torch_in_values_and_gradients(kind, dtype, config):
    ours, theirs = pair(kind, dtype, config)
    x, hx = inputs_for(ours, dtype, with_state=kind != "GRU")  # GRU starts from zeros, the others from given states
    tx, thx = tfl.tensor(x, requires_grad=True), [tfl.tensor(h, requires_grad=True) for h in hx]
    got = results(*ours(tx, (tuple(thx) if len(thx) == 2 else thx[0]) if thx else None))
    projections = [RNG.standard_normal(t.shape).astype(dtype) for t in got]
    sum((t * p).sum() for t, p in zip(got, projections)).backward()
    expected, expected_grads = torch_run(theirs, x, hx, projections)
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value.numpy(), want, **tolerances(dtype))
    got_grads = [tx.grad] + [h.grad for h in thx] + [p.grad for p in ours.parameters()]
    for grad, want in zip(got_grads, expected_grads):
        np.testing.assert_allclose(grad, want, **tolerances(dtype))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_layers_in_graph_mode_equal_torch_with_an_unknown_batch_size(kind, config):
    ours, theirs = pair(kind, "float32", config)
    x, hx = inputs_for(ours, "float32", with_state=kind == "LSTM")
    shape = (None, 3, 4) if ours.batch_first else (3, None, 4)
    x_node = tfl.Placeholder(shape, "float32", name="x")
    hx_nodes = [tfl.Placeholder((None, None, 5), "float32") for _ in hx]
    got = results(*ours(x_node, (tuple(hx_nodes) if len(hx_nodes) == 2 else None)))
    projections = [RNG.standard_normal(shape).astype(np.float32) for shape in _shapes(ours, x)]
    loss = tfl.add_n([tfl.reduce_sum(t * p) for t, p in zip(got, projections)])
    grads = tfl.gradients(loss, [x_node] + hx_nodes + ours.parameters())
    with tfl.Session() as sess:
        values = sess.run(got + grads, {x_node: x, **dict(zip(hx_nodes, hx))})
    expected, expected_grads = torch_run(theirs, x, hx, projections)
    for value, want in zip(values, expected + expected_grads):
        np.testing.assert_allclose(value, want, **tolerances("float32"))


def _shapes(ours, x):
    """The shapes of output, h_n (and c_n) for input x."""
    steps, batch = (x.shape[1], x.shape[0]) if ours.batch_first else x.shape[:2]
    directions = 2 if ours.bidirectional else 1
    output = (batch, steps, directions * 5) if ours.batch_first else (steps, batch, directions * 5)
    return [output] + [(ours.num_layers * directions, batch, 5)] * ours.states


CELLS = [pytest.param("LSTM", 2, id="lstm"), pytest.param("GRU", 1, id="gru"),
         pytest.param("GRU_RESET_FIRST", 1, id="gru-onnx-reset"), pytest.param("RNN_TANH", 1, id="rnn-tanh"),
         pytest.param("RNN_RELU", 1, id="rnn-relu")]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("cell, states", CELLS)
def test_cells_unrolled_pass_finite_difference_checks(cell, states, reverse):
    gates = {"LSTM": 4, "RNN_TANH": 1, "RNN_RELU": 1}.get(cell, 3)
    hidden, size = 3, 2
    arrays = [RNG.standard_normal(s) for s in [(3, 2, size), (gates * hidden, size), (gates * hidden, hidden),
                                              (gates * hidden,), (gates * hidden,)] + [(2, hidden)] * states]

    def build(x, w_ih, w_hh, b_ih, b_hh, *state):
        output, final = unroll(cell, x, w_ih, w_hh, b_ih, b_hh, state, reverse=reverse)
        return tfl.concat([tfl.reshape(output, (-1,))] + [tfl.reshape(s, (-1,)) for s in final], 0)

    gradcheck(build, arrays)


def test_an_unknown_sequence_length_is_a_shape_error_that_says_to_fix_the_time_axis():
    x = tfl.Placeholder((None, 2, 4), "float32")
    with pytest.raises(tfl.ShapeError, match="known sequence length"):
        tfl.nn.LSTM(4, 5)(x)


def test_a_single_unbatched_sequence_is_a_shape_error_that_says_to_add_a_batch_axis():
    with pytest.raises(tfl.ShapeError, match="add a batch axis"):
        tfl.nn.GRU(4, 5)(tfl.tensor(np.zeros((3, 4), np.float32)))


def test_an_unknown_rnn_nonlinearity_is_refused_with_the_choices():
    with pytest.raises(tfl.ArgumentError, match="'tanh' or 'relu'"):
        tfl.nn.RNN(4, 5, nonlinearity="gelu")


def test_an_lstm_given_only_h0_is_refused_asking_for_both_states():
    h0 = tfl.tensor(np.zeros((1, 2, 5), np.float32))
    with pytest.raises(tfl.ArgumentError, match=r"\(h_0, c_0\), got 1"):
        tfl.nn.LSTM(4, 5)(tfl.tensor(np.zeros((3, 2, 4), np.float32)), h0)


def test_an_input_of_the_wrong_feature_size_is_a_shape_error_naming_the_expected_shape():
    with pytest.raises(tfl.ShapeError, match=r"\(N, T, 4\), got shape \(2, 3, 6\)"):
        tfl.nn.RNN(4, 5, batch_first=True)(tfl.tensor(np.zeros((2, 3, 6), np.float32)))


def test_parameters_carry_torchs_names_and_shapes():
    ours, theirs = tfl.nn.LSTM(4, 5, num_layers=2, bidirectional=True), torch.nn.LSTM(4, 5, 2, bidirectional=True)
    assert [(v.name.rsplit("/", 1)[-1], v.shape) for v in ours.parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]


def test_to_static_lstm_equals_the_eager_layer():
    layer = tfl.nn.LSTM(4, 5, num_layers=2)
    static = tfl.jit.to_static(layer, input_spec=[InputSpec([3, None, 4], "float32", "x")])
    x = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    for got, want in zip(results(*static(x)), results(*layer(tfl.tensor(x)))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
