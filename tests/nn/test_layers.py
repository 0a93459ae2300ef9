"""Layers: shapes, parameters, registries, seeding, dropout and batch-norm modes, gradients."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.testing import gradcheck


def run(fetch, feed=None):
    with tfl.Session() as sess:
        return sess.run(fetch, feed or {})


@pytest.mark.parametrize("layer, in_shape, out_shape", [
    (lambda: tfl.nn.Linear(13, 4), (5, 13), (5, 4)),
    (lambda: tfl.nn.Linear(3, 2, bias=False, act="tanh"), (1, 3), (1, 2)),
    (lambda: tfl.nn.Conv2D(2, 3, 3, padding=1, act="relu"), (4, 2, 6, 6), (4, 3, 6, 6)),
    (lambda: tfl.nn.Conv2D(2, 3, (3, 1), stride=2), (1, 2, 7, 5), (1, 3, 3, 3)),
    (lambda: tfl.nn.MaxPool2D(2), (2, 3, 6, 6), (2, 3, 3, 3)),
    (lambda: tfl.nn.AvgPool2D(3, stride=1, padding=1), (2, 3, 5, 5), (2, 3, 5, 5)),
    (lambda: tfl.nn.Flatten(), (2, 3, 4, 5), (2, 60)),
    (lambda: tfl.nn.Dropout(0.5), (4, 7), (4, 7)),
    (lambda: tfl.nn.BatchNorm1d(7), (4, 7), (4, 7)),
    (lambda: tfl.nn.BatchNorm2d(3), (2, 3, 4, 4), (2, 3, 4, 4)),
    (lambda: tfl.nn.BatchNorm3d(2), (2, 2, 3, 4, 4), (2, 2, 3, 4, 4)),
    (lambda: tfl.nn.Conv1D(2, 4, 3, padding="same", dilation=2, groups=2), (3, 2, 9), (3, 4, 9)),
    (lambda: tfl.nn.Conv2D(4, 6, 3, stride=2, padding=1, dilation=(1, 2), groups=2), (1, 4, 8, 8), (1, 6, 4, 3)),
    (lambda: tfl.nn.Conv3D(1, 2, (1, 3, 3), padding=(0, 1, 1)), (2, 1, 3, 5, 5), (2, 2, 3, 5, 5)),
    (lambda: tfl.nn.ConvTranspose2D(3, 2, 3, stride=2, padding=1, output_padding=1), (2, 3, 4, 5), (2, 2, 8, 10)),
    (lambda: tfl.nn.ConvTranspose1D(2, 4, 4, stride=2, groups=2), (2, 2, 5), (2, 4, 12)),
    (lambda: tfl.nn.MaxPool1D(3, stride=2, ceil_mode=True), (2, 3, 8), (2, 3, 4)),
    (lambda: tfl.nn.MaxPool3D(2), (2, 3, 4, 4, 4), (2, 3, 2, 2, 2)),
    (lambda: tfl.nn.AvgPool1D(2), (2, 3, 7), (2, 3, 3)),
    (lambda: tfl.nn.LayerNorm(6), (3, 4, 6), (3, 4, 6)),
    (lambda: tfl.nn.GroupNorm(2, 4), (2, 4, 3, 3), (2, 4, 3, 3)),
    (lambda: tfl.nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4), (2, 3, 4, 4)),
])
def test_layers_produce_the_expected_shapes(layer, in_shape, out_shape):
    x = tfl.Placeholder((None,) + in_shape[1:])
    y = layer()(x)
    assert y.shape == (None,) + out_shape[1:]
    assert run(y, {x: np.random.default_rng(0).standard_normal(in_shape)}).shape == out_shape


def test_parameters_live_under_the_layer_scope_and_are_shared_on_reuse(fresh_graph):
    layer = tfl.nn.Linear(3, 2, name="dense")
    assert [v.name for v in layer.parameters()] == ["dense/weight", "dense/bias"]
    assert layer.weight.shape == (3, 2) and layer.bias.shape == (2,)
    a, b = layer(tfl.Placeholder((None, 3))), layer(tfl.Placeholder((None, 3)))
    assert a.name.startswith("dense/") and b.name.startswith("dense/")
    assert len(fresh_graph.variables()) == 2  # calling twice shares the weights
    bn = tfl.nn.BatchNorm1d(4)
    assert [v.name for v in bn.parameters()] == ["BatchNorm1d/weight", "BatchNorm1d/bias"]
    assert {v.name for v in bn.variables()} - {v.name for v in bn.parameters()} == \
        {"BatchNorm1d/running_mean", "BatchNorm1d/running_var"}
    net = tfl.nn.Sequential(tfl.nn.Linear(4, 4), tfl.nn.Dropout(0.1), tfl.nn.Linear(4, 1))
    assert len(net.parameters()) == 4


def test_activation_registry():
    with pytest.raises(ValueError, match=r"unknown activation 'swishy'.*'relu'.*register_activation"):
        tfl.nn.Linear(2, 2, act="swishy")

    @tfl.nn.register_activation("cube_test")
    def cube(x):
        return x * x * x
    layer = tfl.nn.Linear(1, 1, act="cube_test", weight_init="ones")
    assert run(layer(tfl.Constant(np.array([[2.0]], np.float32)))) == 8.0
    assert "cube_test" in tfl.nn.registered_activations()


@pytest.mark.parametrize("init", ["zeros", "ones", "normal", "uniform", "xavier_uniform", "xavier_normal",
                                  "he_uniform", "he_normal"])
def test_initializers_by_name_are_seeded(init):
    tfl.set_seed(7)
    first = tfl.nn.Linear(200, 100, weight_init=init).weight.value
    tfl.set_seed(7)
    second = tfl.nn.Linear(200, 100, weight_init=init).weight.value
    np.testing.assert_array_equal(first, second)
    expected_std = {"zeros": 0, "ones": 0, "normal": 0.01, "uniform": 1 / np.sqrt(200) / np.sqrt(3),
                    "xavier_uniform": np.sqrt(2 / 300), "xavier_normal": np.sqrt(2 / 300),
                    "he_uniform": np.sqrt(2 / 200), "he_normal": np.sqrt(2 / 200)}[init]
    assert first.std() == pytest.approx(expected_std, rel=0.05, abs=1e-9)
    with pytest.raises(ValueError, match="unknown initializer"):
        tfl.nn.Linear(2, 2, weight_init="glorious")


def test_dropout_is_active_only_when_training():
    x = tfl.Placeholder((None, 1000))
    y = tfl.nn.Dropout(0.25)(x)
    flag = tfl.nn.training_flag()
    ones = np.ones((2, 1000), np.float32)
    np.testing.assert_array_equal(run(y, {x: ones}), ones)  # the flag defaults to False: evaluation
    trained = run(y, {x: ones, flag: True})
    assert set(np.unique(trained)) == {0.0, np.float32(1 / 0.75)}
    assert 0.2 < np.mean(trained == 0) < 0.3


def test_batch_norm_uses_batch_statistics_in_training_and_moving_ones_in_evaluation():
    x = tfl.Placeholder((None, 3))
    bn = tfl.nn.BatchNorm1d(3, momentum=0.5)
    y = bn(x)
    flag = tfl.nn.training_flag()
    updates = tfl.group(*tfl.nn.update_ops())
    data = np.random.default_rng(0).normal(5.0, 2.0, (64, 3)).astype(np.float32)
    with tfl.Session() as sess:
        trained, _ = sess.run([y, updates], {x: data, flag: True})
        np.testing.assert_allclose(trained.mean(0), 0, atol=1e-5)
        np.testing.assert_allclose(trained.std(0), 1, atol=1e-3)
        np.testing.assert_allclose(bn.running_mean.value, 0.5 * data.mean(0), rtol=1e-5)
        np.testing.assert_allclose(bn.running_var.value, 0.5 + 0.5 * data.var(0, ddof=1), rtol=1e-4)
        evaluated = sess.run(y, {x: data})
    expected = (data - bn.running_mean.value) / np.sqrt(bn.running_var.value + 1e-5)
    np.testing.assert_allclose(evaluated, expected, rtol=1e-5, atol=1e-5)


def test_gradients_through_a_layer_stack_match_finite_differences():
    rng = np.random.default_rng(0)

    def network(x):
        with tfl.name_scope("net"):
            conv = tfl.nn.Conv2D(1, 2, 3, padding=1, act="tanh", dtype="float64")
            dense = tfl.nn.Linear(2 * 2 * 2, 3, act="softplus", dtype="float64")
            return dense(tfl.nn.Flatten()(tfl.nn.AvgPool2D(2)(conv(x))))
    gradcheck(network, [rng.standard_normal((2, 1, 4, 4))])


@pytest.mark.parametrize("make, message", [
    (lambda: tfl.nn.Linear("a", 3), "Linear: in_features='a' is not an integer"),
    (lambda: tfl.nn.Linear(-1, 3), "Linear: in_features=-1 is below 1"),
    (lambda: tfl.nn.Conv2D(4, 4, 3, groups=0), "Conv2D: groups=0 is below 1"),
    (lambda: tfl.nn.Conv2D(4, 6, 3, groups=4), "Conv2D: groups=4 does not divide in_channels=4 and out_channels=6"),
    (lambda: tfl.nn.Conv2D(4, 4, "x"), "Conv2D: kernel_size='x' is not an int or a sequence of 2 ints"),
    (lambda: tfl.nn.Conv1D(4, 4, 0), "Conv1D: kernel_size=0 is below 1"),
    (lambda: tfl.nn.MaxPool2D("a"), "MaxPool2D: kernel_size='a' is not an int or a sequence of 2 ints"),
    (lambda: tfl.nn.Dropout("a"), "Dropout: p='a' is not a number"),
    (lambda: tfl.nn.Dropout(1.0), r"Dropout: p=1.0 is out of range; pass a finite number in \[0.0, 1.0\)"),
    (lambda: tfl.nn.GroupNorm(0, 4), "GroupNorm: num_groups=0 is below 1"),
    (lambda: tfl.nn.GroupNorm(3, 4), "GroupNorm: num_groups=3 does not divide num_channels=4"),
    (lambda: tfl.nn.LayerNorm("a"), r"LayerNorm: normalized_shape\[0\]='a' is not an integer"),
    (lambda: tfl.nn.BatchNorm2d("a"), "BatchNorm2d: num_features='a' is not an integer"),
    (lambda: tfl.nn.InstanceNorm1d(0), "InstanceNorm1d: num_features=0 is below 1"),
    (lambda: tfl.nn.LSTM("a", 3), "LSTM: input_size='a' is not an integer"),
    (lambda: tfl.nn.GRU(2, 3, num_layers=0), "GRU: num_layers=0 is below 1"),
    (lambda: tfl.nn.Linear(2, 3, dtype="text"), "Linear: dtype='text' is not a bool, integer or float dtype"),
    (lambda: tfl.nn.Sequential(tfl.nn.Linear(2, 3), 1), r"Sequential: layers\[1\]=1 is not a layer"),
])
def test_bad_layer_arguments_raise_argument_errors_naming_the_layer(make, message):
    with pytest.raises(tfl.ArgumentError, match=message):
        make()


def test_flatten_merges_axes_of_unknown_size_at_run_time():
    x = tfl.Placeholder((None, 3, None))
    y = tfl.nn.Flatten()(x)
    assert run(y, {x: np.ones((2, 3, 4), np.float32)}).shape == (2, 12)
    with pytest.raises(tfl.ArgumentError, match="needs an input of known rank"):
        tfl.nn.Flatten()(tfl.Placeholder(None))


def test_batch_norm_names_a_momentum_or_eps_that_is_not_a_number():
    x = tfl.Placeholder((2, 3))
    with pytest.raises(tfl.ArgumentError, match="momentum='a' is not a number"):
        tfl.nn.BatchNorm1d(3, momentum="a")(x)
    with pytest.raises(tfl.ArgumentError, match="eps='a' is not a number"):
        tfl.batch_norm(x, np.zeros(3), np.ones(3), eps="a")


def test_normalization_layers_check_eps_when_built():
    for build in (lambda: tfl.nn.LayerNorm(4, eps=-1.0), lambda: tfl.nn.GroupNorm(2, 4, eps=-1.0),
                  lambda: tfl.nn.InstanceNorm2d(4, eps=-1.0), lambda: tfl.nn.BatchNorm2d(4, eps=-1.0)):
        with pytest.raises(tfl.ArgumentError, match="eps=-1.0 is out of range"):
            build()


def test_an_activation_or_initializer_that_is_not_a_name_is_an_argument_error():
    with pytest.raises(tfl.ArgumentError, match=r"unknown activation \['relu'\]"):
        tfl.nn.Linear(2, 3, act=["relu"])
    with pytest.raises(tfl.ArgumentError, match=r"unknown initializer \['x'\]"):
        tfl.nn.Linear(2, 3, weight_init=["x"])


@pytest.mark.parametrize("build, message", [
    (lambda: tfl.nn.Linear(2, 3, bias="yes"), "bias='yes' is not a bool"),
    (lambda: tfl.nn.Conv2D(2, 3, 3, bias=np.array([1, 2])), "bias=array"),
    (lambda: tfl.nn.LSTM(2, 3, batch_first=np.array([1, 2])), "batch_first=array"),
    (lambda: tfl.nn.GRU(2, 3, bidirectional="no"), "bidirectional='no' is not a bool"),
    (lambda: tfl.nn.BatchNorm2d(3, affine="x"), "affine='x' is not a bool"),
    (lambda: tfl.nn.RNN(2, 3, nonlinearity=np.array([1, 2])), "nonlinearity=array"),
    (lambda: tfl.nn.mse_loss(tfl.Placeholder((2,)), tfl.Placeholder((2,)), reduction=np.array([1, 2])),
     "reduction=array"),
    (lambda: tfl.pad(tfl.Placeholder((2,)), 1, mode=np.array([1, 2])), "mode=array"),
])
def test_a_flag_or_choice_of_the_wrong_type_is_an_argument_error(build, message):
    with pytest.raises(tfl.ArgumentError, match=message):
        build()
