"""Small training problems built identically by the worker processes and by the single-process reference."""
import numpy as np

import tinyflow as tfl

ROWS = 12  # divisible by 2 and 3: equal shards for both process counts the tests use


def regression_data():
    """A float64 regression problem (float64 so sums in different orders agree to ~1e-15)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(ROWS, 5))
    Y = X @ rng.normal(size=(5, 2)) + 0.1 * rng.normal(size=(ROWS, 2))
    return X, Y


def optimizer(name):
    """The optimizers the data-parallel tests compare."""
    return {"sgd": lambda: tfl.optim.SGD(0.1, momentum=0.9),
            "adam": lambda: tfl.optim.Adam(0.05)}[name]()


def mlp_graph(seed, opt):
    """(x, t, loss, train step) of a small float64 MLP; `opt` builds the train step."""
    tfl.set_seed(seed)
    net = tfl.nn.Sequential(tfl.nn.Linear(5, 8, act="tanh", dtype="float64"), tfl.nn.Linear(8, 2, dtype="float64"))
    x = tfl.Placeholder((None, 5), "float64", name="x")
    t = tfl.Placeholder((None, 2), "float64", name="t")
    loss = tfl.reduce_mean(tfl.square(net(x) - t))
    return x, t, loss, opt.minimize(loss)


def boston_rows(rows=96):
    """The first `rows` Boston rows, standardised, float64 (96 is divisible by 2 and 3)."""
    X, y = tfl.data.load_boston()
    X = tfl.data.Standardizer().fit_transform(np.asarray(X[:rows], np.float64))
    return X, np.asarray(y[:rows], np.float64)


def boston_model(seed, dropout=0.0):
    """An MLP regression Model (Adam, batch norm, optional dropout) with the mae metric."""
    tfl.set_seed(seed)
    layers = [tfl.nn.Linear(13, 16, act="relu", dtype="float64")]
    if dropout:
        layers.append(tfl.nn.Dropout(dropout))
    layers.append(tfl.nn.Linear(16, 1, dtype="float64"))
    return tfl.Model(tfl.nn.Sequential(*layers), "mse", tfl.optim.Adam(1e-2), metrics=["mae"])


def parameters(model):
    """{name: value} of every Variable of a model (weights and optimizer slots)."""
    return {v.name: v.value for v in model.variables}


def batchnorm_model(seed=5):
    """A regression Model with batch normalisation (moving statistics in non-trainable Variables)."""
    tfl.set_seed(seed)
    net = tfl.nn.Sequential(tfl.nn.Linear(13, 8, dtype="float64"), tfl.nn.BatchNorm1d(8, dtype="float64"),
                            tfl.nn.Linear(8, 1, dtype="float64"))
    return tfl.Model(net, "mse", tfl.optim.SGD(0.01))
