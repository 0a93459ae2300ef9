"""to_static: tracing per input signature, the program cache, shared parameters, training through it."""
import logging

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec


def mlp():
    return tfl.nn.Sequential(tfl.nn.Linear(13, 8, act="relu"), tfl.nn.Linear(8, 1))


def graph_mode_output(model, x):
    node = tfl.Placeholder((None, 13), name="reference_x")
    with tfl.Session() as sess:
        return sess.run(model(node), {node: x})


def test_one_program_serves_every_batch_size_and_matches_graph_mode():
    model = mlp()
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13], "float32", "x")])
    x = np.random.default_rng(0).standard_normal((5, 13)).astype(np.float32)
    out5, out1 = f(x), f(x[:1])
    assert isinstance(out5, tfl.Tensor) and out5.shape == (5, 1) and out1.shape == (1, 1)
    assert len(f.concrete_programs) == 1
    program = f.concrete_programs[0]
    assert program.inputs[0].shape == (None, 13) and program.inputs[0].name.endswith("x")
    np.testing.assert_allclose(out5, graph_mode_output(model, x), rtol=1e-6)
    np.testing.assert_allclose(out1, out5[:1], rtol=1e-6)


def test_the_program_shares_parameters_with_the_layer():
    layer = tfl.nn.Linear(2, 1, bias=False)
    f = tfl.jit.to_static(layer)
    x = np.ones((1, 2), np.float32)
    f(x)
    layer.weight.value = np.array([[1.0], [2.0]], np.float32)
    np.testing.assert_allclose(f(x), [[3.0]])
    assert len(f.concrete_programs) == 1


def test_retraces_are_logged_with_their_reason(caplog):
    @tfl.jit.to_static
    def scale(x, factor):
        return x * factor

    with caplog.at_level(logging.INFO, logger="tinyflow.jit"):
        scale(np.ones((2, 4), np.float32), 2.0)
        scale(np.ones((2, 4), np.float32), 2.0)
        assert caplog.records == []
        np.testing.assert_allclose(scale(np.ones((2, 5), np.float32), 2.0), np.full((2, 5), 2.0))
        assert "x dim 1: 4 → 5" in caplog.text
        np.testing.assert_allclose(scale(np.ones((2, 5), np.float32), 3.0), np.full((2, 5), 3.0))
        assert "factor: 2.0 → 3.0" in caplog.text
        scale(np.ones((2, 5), np.float64), 3.0)
        assert "x dtype: float32 → float64" in caplog.text
    assert len(scale.concrete_programs) == 4 and scale.retraces == 3


def test_the_cache_is_capped_and_least_recently_used_goes_first(caplog):
    f = tfl.jit.to_static(lambda x: x + 1.0)
    for n in range(1, 10):
        f(np.zeros(n, np.float32))
    assert len(f.concrete_programs) == 8
    assert [p.inputs[0].shape for p in f.concrete_programs] == [(n,) for n in range(2, 10)]
    assert "more than 8 input signatures" in caplog.text


def test_training_flag_is_part_of_the_key_and_reaches_dropout_and_batchnorm():
    model = tfl.nn.Sequential(tfl.nn.Linear(4, 4), tfl.nn.BatchNorm1d(4), tfl.nn.Dropout(0.5))
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 4])])
    x = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(f(x), f(x))  # evaluation: deterministic
    before = model.layers[1].running_mean.value.copy()
    f.train()
    f(x)
    assert len(f.concrete_programs) == 2 and f.concrete_programs[-1].training
    assert not np.allclose(model.layers[1].running_mean.value, before)  # batch-norm update ops ran


def test_input_spec_mismatch_and_bad_arguments_raise():
    f = tfl.jit.to_static(lambda x: x * 2.0, input_spec=[InputSpec([None, 3], "float32", "x")])
    with pytest.raises(tfl.FeedError, match=r"InputSpec says \[None, 3\]"):
        f(np.ones((2, 4), np.float32))
    g = tfl.jit.to_static(lambda x, sizes: x)
    with pytest.raises(tfl.TinyflowError, match="argument 'sizes'.* a set.*lists, tuples or dicts"):
        g(np.ones(2), {1, 2})
    with pytest.raises(TypeError, match="InputSpec"):
        tfl.jit.to_static(lambda x: x, input_spec=[(None, 3)])


def test_bad_to_static_and_input_spec_arguments_raise_tinyflow_errors():
    """A spec that is not an InputSpec, a non-function and a spec without a shape: TinyflowError subclasses."""
    with pytest.raises(tfl.ArgumentError, match="input_spec entries must be tfl.jit.InputSpec"):
        tfl.jit.to_static(lambda x: x, input_spec=[(None, 3)])
    with pytest.raises(tfl.ArgumentError, match="to_static takes a function or a tfl.nn.Layer, got 3"):
        tfl.jit.to_static(3)
    with pytest.raises(tfl.ShapeError, match="InputSpec needs a shape"):
        InputSpec(None)


def test_structured_outputs_and_python_values_come_back_as_written():
    @tfl.jit.to_static
    def stats(x):
        return {"sum": tfl.reduce_sum(x), "parts": (x * 2.0, "label")}

    out = stats(np.arange(3, dtype=np.float32))
    assert float(out["sum"]) == 3.0 and out["parts"][1] == "label"
    np.testing.assert_allclose(out["parts"][0], [0, 2, 4])


def test_the_traced_graph_can_be_drawn():
    model = mlp()
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13])])
    program = f.graph(InputSpec([None, 13]))
    assert program is f.concrete_programs[0]
    source = tfl.viz.to_graphviz(program.fetches).source
    assert "MatMul" in source and "Relu" in source


def test_decorating_a_layer_method():
    class Net(tfl.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = tfl.nn.Linear(3, 2)

        @tfl.jit.to_static
        def forward(self, x):
            return tfl.relu(self.fc(x))

    net = Net()
    x = np.ones((4, 3), np.float32)
    assert net.forward(x).shape == (4, 2)
    assert len(net.forward.concrete_programs) == 1
    node = tfl.Placeholder((None, 3))
    assert isinstance(net(node), tfl.Node)  # inside a graph it builds ops as before


def _train(step_fn, model, xs, ys, steps):
    losses = []
    for _ in range(steps):
        losses.append(float(step_fn(xs, ys)))
    return losses, [v.value.copy() for v in model.parameters()]


@pytest.mark.parametrize("make_optimizer", [lambda: tfl.optim.SGD(0.05, momentum=0.9), lambda: tfl.optim.Adam(0.01)])
def test_training_through_to_static_matches_graph_mode(make_optimizer):
    rng = np.random.default_rng(2)
    xs, ys = rng.standard_normal((16, 13)).astype(np.float32), rng.standard_normal((16, 1)).astype(np.float32)

    tfl.set_seed(5)
    static_model, static_opt = mlp(), make_optimizer()

    @tfl.jit.to_static
    def train_step(x, y):
        loss = tfl.nn.mse_loss(static_model(x), y)
        static_opt.minimize(loss)   # the update runs with every call, as in eager code
        return loss
    static_losses, static_params = _train(train_step, static_model, xs, ys, 5)

    tfl.set_seed(5)
    model, opt = mlp(), make_optimizer()
    x, y = tfl.Placeholder((None, 13)), tfl.Placeholder((None, 1))
    loss = tfl.nn.mse_loss(model(x), y)
    train = opt.minimize(loss)
    with tfl.Session() as sess:
        graph_losses = [float(sess.run([loss, train], {x: xs, y: ys})[0]) for _ in range(5)]
    np.testing.assert_allclose(static_losses, graph_losses, rtol=1e-5)
    for a, b in zip(static_params, [v.value for v in model.parameters()]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert static_losses[-1] < static_losses[0]
    assert len(train_step.concrete_programs) == 1


def test_eager_tensors_in_tensors_out_and_graph_nodes_still_build_graphs():
    model = mlp()
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13], "float32", "x")])
    x = np.random.default_rng(3).standard_normal((4, 13)).astype(np.float32)
    out = f(tfl.tensor(x))
    assert isinstance(out, tfl.Tensor) and out.requires_grad and out.shape == (4, 1)  # parameters require grad
    assert not f(x).requires_grad  # numpy in: a plain value
    np.testing.assert_allclose(out.numpy(), f(x).numpy(), rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), model(tfl.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)  # eager mode
    assert len(f.concrete_programs) == 1  # a Tensor and an array of one signature share the program
    node = tfl.Placeholder((None, 13), name="graph_x", graph=model.graph)
    assert isinstance(f(node), tfl.Node) and f(node).graph is model.graph  # graph arguments build graph nodes
    with tfl.no_grad():
        assert not f(tfl.tensor(x, requires_grad=True)).requires_grad


def test_backward_through_a_to_static_layer_matches_eager_mode():
    model = mlp()
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13], "float32", "x")])
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((5, 13)).astype(np.float32), rng.standard_normal((5, 1)).astype(np.float32)
    grads = []
    for forward in (f, model):  # the traced program, then the layer itself in eager mode
        xt = tfl.tensor(x, requires_grad=True)
        loss = tfl.nn.mse_loss(forward(xt), tfl.tensor(y))
        loss.backward()
        grads.append([xt.grad] + [p.grad for p in model.parameters()])
        for p in model.parameters():
            p.grad = None
    assert all(g is not None for g in grads[0])
    for static, eager in zip(*grads):
        np.testing.assert_allclose(static, eager, rtol=1e-5, atol=1e-7)
    assert len(f.concrete_programs) == 1


def test_eager_training_through_a_to_static_layer_matches_eager_training():
    rng = np.random.default_rng(7)
    xs, ys = rng.standard_normal((5, 8, 13)).astype(np.float32), rng.standard_normal((5, 8, 1)).astype(np.float32)
    eager_model, static_model = mlp(), mlp()
    for a, b in zip(eager_model.parameters(), static_model.parameters()):
        b.value = a.value.copy()
    f = tfl.jit.to_static(static_model, input_spec=[InputSpec([None, 13])])
    for model, forward in ((eager_model, eager_model), (static_model, f)):
        opt = tfl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # (Adam amplifies rounding near g = 0)
        for x, y in zip(xs, ys):
            opt.zero_grad()
            tfl.nn.mse_loss(forward(tfl.tensor(x)), tfl.tensor(y)).backward()
            opt.step()
    for a, b in zip(static_model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(a.value, b.value, rtol=1e-5, atol=1e-6)


def test_a_tensor_requiring_grad_is_refused_where_its_gradient_would_be_lost():
    model, opt = mlp(), tfl.optim.SGD(0.1)

    @tfl.jit.to_static
    def train_step(x, y):
        loss = tfl.nn.mse_loss(model(x), y)
        opt.minimize(loss)
        return loss
    x, y = tfl.tensor(np.ones((2, 13), np.float32), requires_grad=True), tfl.tensor(np.ones((2, 1), np.float32))
    with pytest.raises(tfl.TinyflowError, match="changes state.*opt.minimize"):
        train_step(x, y)
    assert not train_step(x.detach(), y).requires_grad  # the step ran; its loss is a plain value


@pytest.mark.parametrize("optimizers", [
    (lambda params: tfl.optim.Adam(params, lr=0.01), lambda: tfl.optim.Adam(0.01)),
    (lambda params: tfl.optim.SGD(params, lr=0.05, momentum=0.9), lambda: tfl.optim.SGD(0.05, momentum=0.9)),
])
def test_a_to_static_training_step_matches_eager_training(optimizers):
    eager_optimizer, graph_optimizer = optimizers
    rng = np.random.default_rng(4)
    xs, ys = rng.standard_normal((6, 16, 13)).astype(np.float32), rng.standard_normal((6, 16, 1)).astype(np.float32)

    eager_model, static_model = mlp(), mlp()
    for a, b in zip(eager_model.parameters(), static_model.parameters()):
        b.value = a.value.copy()
    initial = [p.value.copy() for p in eager_model.parameters()]

    opt = eager_optimizer(eager_model.parameters())
    eager_losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = tfl.nn.mse_loss(eager_model(tfl.tensor(x)), tfl.tensor(y))
        loss.backward()
        opt.step()
        eager_losses.append(loss.item())

    static_opt = graph_optimizer()

    @tfl.jit.to_static(input_spec=[InputSpec([None, 13]), InputSpec([None, 1])])
    def train_step(x, y):
        loss = tfl.nn.mse_loss(static_model(x), y)
        static_opt.minimize(loss)
        return loss
    static_losses = [train_step(tfl.tensor(x), tfl.tensor(y)).item() for x, y in zip(xs, ys)]

    np.testing.assert_allclose(static_losses, eager_losses, rtol=1e-5)
    for a, b in zip(static_model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(a.value, b.value, rtol=1e-5, atol=1e-6)
    assert all(not np.allclose(p.value, v) for p, v in zip(eager_model.parameters(), initial))  # it trained
    assert eager_losses[-1] < eager_losses[0] and len(train_step.concrete_programs) == 1


def test_a_traced_program_sees_the_eager_optimizers_steps():
    model = mlp()
    f = tfl.jit.to_static(model, input_spec=[InputSpec([None, 13])])
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((4, 13)).astype(np.float32), rng.standard_normal((4, 1)).astype(np.float32)
    before = f(x).numpy()  # the program's session exists now (OpenCL: with device copies of the Variables)
    opt = tfl.optim.SGD(model.parameters(), lr=0.5)
    tfl.nn.mse_loss(model(tfl.tensor(x)), tfl.tensor(y)).backward()
    opt.step()  # updates the Variables in place on the host
    after = f(x).numpy()
    assert not np.allclose(after, before)
    with tfl.no_grad():
        np.testing.assert_allclose(after, model(tfl.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)
