"""DistributedOptimizer and broadcast_variables: data-parallel training equals one process on the full batch."""
import numpy as np
import pytest

import tinyflow as tfl
from launching import launch
from problems import mlp_graph, optimizer, regression_data

STEPS = 5

WORKER = """
import sys
import numpy as np
import tinyflow as tfl
from problems import mlp_graph, optimizer, regression_data
d = tfl.distributed
d.init()
r, w = d.rank(), d.world_size()
name, out = sys.argv[1], sys.argv[2]
# each process starts from different weights: broadcast_variables must make them rank 0's
x, t, loss, train = mlp_graph(seed=100 + r, opt=d.DistributedOptimizer(optimizer(name)))
graph = tfl.get_default_graph()
for var in graph.variables():                     # optimizer slots too (Adam's step counter, moments)
    var.value = var.value + r
first = graph.variables()[0]
kept = graph.variables()[1].value
d.broadcast_variables([first])                    # a list: only those
assert d.all_reduce(first.value.copy(), "max").tolist() == d.all_reduce(first.value.copy(), "min").tolist()
np.testing.assert_array_equal(graph.variables()[1].value, kept)
d.broadcast_variables()
for var in graph.variables():
    values = np.asarray(var.value, np.float64)
    assert (d.all_reduce(values.copy(), "max") == d.all_reduce(values.copy(), "min")).all(), var.name
X, Y = regression_data()
sess = tfl.Session()
calls = d.communication_stats().get("all_reduce", {}).get("calls", 0)
for _ in range(STEPS):
    sess.run(train, {x: X[r::w], t: Y[r::w]})
calls = d.communication_stats()["all_reduce"]["calls"] - calls
packs = sum(n.op_type == "AllReduceGradients" for n in graph.nodes)
np.savez(f"{out}/rank{r}.npz", calls=calls, packs=packs, **{v.name: v.value for v in graph.variables()})

# eager mode: a Layer on Tensors, loss.backward(), DistributedOptimizer(SGD(layer.parameters(), lr)).step()
tfl.set_seed(100 + r)
layer = tfl.nn.Linear(5, 2, dtype="float64")
opt = d.DistributedOptimizer(tfl.optim.SGD(layer.parameters(), lr=0.1))
d.broadcast_variables(layer.parameters())
calls = d.communication_stats()["all_reduce"]["calls"]
for _ in range(STEPS):
    opt.zero_grad()
    loss = tfl.reduce_mean(tfl.square(layer(tfl.tensor(X[r::w])) - tfl.tensor(Y[r::w])))
    loss.backward()
    opt.step()
eager_calls = d.communication_stats()["all_reduce"]["calls"] - calls
eager = [p.value for p in layer.parameters()]

# eager leaf Tensors as parameters, with Adam: broadcast_variables sets them in place
rng = np.random.default_rng(r)
params = [tfl.tensor(rng.normal(size=(5, 2)), requires_grad=True), tfl.tensor(rng.normal(size=2), requires_grad=True)]
d.broadcast_variables(params)
adam = d.DistributedOptimizer(tfl.optim.Adam(params, lr=0.05))
for _ in range(STEPS):
    adam.zero_grad()
    tfl.reduce_mean(tfl.square(tfl.matmul(tfl.tensor(X[r::w]), params[0]) + params[1] - tfl.tensor(Y[r::w]))).backward()
    adam.step()
tensors = [p.numpy() for p in params]

# to_static: a graph-mode DistributedOptimizer's minimize inside the traced step (one all_reduce per call)
from tinyflow.jit import InputSpec
with tfl.Graph().as_default():
    tfl.set_seed(100 + r)
    static_layer = tfl.nn.Linear(5, 2, dtype="float64")
    static_opt = d.DistributedOptimizer(tfl.optim.SGD(0.1))

    @tfl.jit.to_static(input_spec=[InputSpec([None, 5], "float64"), InputSpec([None, 2], "float64")])
    def train_step(x, target):
        loss = tfl.reduce_mean(tfl.square(static_layer(x) - target))
        static_opt.minimize(loss)
        return loss
    d.broadcast_variables(static_layer.parameters())
    calls = d.communication_stats()["all_reduce"]["calls"]
    for _ in range(STEPS):  # traced on the first call, in the default graph: the one holding static_layer
        train_step(tfl.tensor(X[r::w]), tfl.tensor(Y[r::w]))
static_calls = d.communication_stats()["all_reduce"]["calls"] - calls
static = [p.value for p in static_layer.parameters()]
np.savez(f"{out}/eager{r}.npz", calls=[eager_calls, static_calls], *eager, *tensors, *static)

# average_gradients: a gradient present on some ranks only is an error everywhere; None everywhere stays None
p, q, unused = (tfl.tensor(np.zeros(n), requires_grad=True) for n in (3, 2, 4))
mine = np.full(2, float(r))
q.grad = mine
d.average_gradients([q, unused])
np.testing.assert_allclose(q.grad, np.full(2, (w - 1) / 2))
assert unused.grad is None and (mine == r).all()   # the caller's array is not overwritten
if r == 0:
    p.grad = np.ones(3)
try:
    d.average_gradients([p, q])
    raise AssertionError("a gradient on rank 0 only must fail")
except d.DistributedError as err:
    assert f"has a gradient on 1 of {w} processes" in str(err), err
""".replace("STEPS", str(STEPS))


def single_process_reference(name):
    """Every variable after STEPS full-batch steps in this process, starting from rank 0's weights."""
    with tfl.Graph().as_default() as graph:
        x, t, loss, train = mlp_graph(seed=100, opt=optimizer(name))
        X, Y = regression_data()
        with tfl.Session(graph) as sess:
            for _ in range(STEPS):
                sess.run(train, {x: X, t: Y})
        return {v.name: v.value for v in graph.variables()}


@pytest.mark.parametrize("n, name", [(2, "sgd"), (2, "adam"), (3, "adam")])
def test_data_parallel_training_equals_one_process_on_the_full_batch(tmp_path, n, name):
    launch(tmp_path, WORKER, n, name, tmp_path)
    expected = single_process_reference(name)
    results = [dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(n)]
    for r, result in enumerate(results):
        # one packed all_reduce per step, however many variables the model has
        assert result.pop("packs") == 1 and result.pop("calls") == STEPS
        assert sorted(result) == sorted(expected) and len(expected) >= 4
        for var_name, value in expected.items():
            np.testing.assert_allclose(result[var_name], value, rtol=0, atol=1e-12, err_msg=f"rank {r} {var_name}")
            # every process holds bit-for-bit the same parameters
            np.testing.assert_array_equal(result[var_name], results[0][var_name])


def eager_reference():
    """Rank 0's starting parameters after STEPS full-batch eager steps (Linear + SGD, Tensors + Adam)."""
    X, Y = regression_data()
    tfl.set_seed(100)
    layer = tfl.nn.Linear(5, 2, dtype="float64")
    opt = tfl.optim.SGD(layer.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    params = [tfl.tensor(rng.normal(size=(5, 2)), requires_grad=True), tfl.tensor(rng.normal(size=2), requires_grad=True)]
    adam = tfl.optim.Adam(params, lr=0.05)
    for _ in range(STEPS):
        opt.zero_grad()
        tfl.reduce_mean(tfl.square(layer(tfl.tensor(X)) - tfl.tensor(Y))).backward()
        opt.step()
        adam.zero_grad()
        tfl.reduce_mean(tfl.square(tfl.matmul(tfl.tensor(X), params[0]) + params[1] - tfl.tensor(Y))).backward()
        adam.step()
    linear = [p.value for p in layer.parameters()]
    return linear + [p.numpy() for p in params] + linear  # the to_static step trains the same Linear with SGD


@pytest.mark.parametrize("n", [2, 3])
def test_eager_and_to_static_data_parallel_training_equal_one_process_on_the_full_batch(tmp_path, n):
    launch(tmp_path, WORKER, n, "sgd", tmp_path)
    expected = eager_reference()
    results = [np.load(tmp_path / f"eager{r}.npz") for r in range(n)]
    for r, result in enumerate(results):
        assert result["calls"].tolist() == [STEPS, STEPS]  # one packed all_reduce per step
        values = [result[f"arr_{i}"] for i in range(len(expected))]
        assert len(result.files) == len(expected) + 1
        for i, (value, want) in enumerate(zip(values, expected)):
            np.testing.assert_allclose(value, want, rtol=0, atol=1e-12, err_msg=f"rank {r} parameter {i}")
            np.testing.assert_array_equal(value, results[0][f"arr_{i}"])


def test_distributed_optimizer_needs_init_when_the_graph_is_built():
    opt = tfl.distributed.DistributedOptimizer(tfl.optim.SGD(0.1))
    w = tfl.Variable(np.ones(3, np.float32))
    with pytest.raises(tfl.TinyflowError, match=r"init\(\)"):
        opt.minimize(tfl.reduce_sum(w * w))
    assert opt.lr == 0.1 and repr(opt) == "DistributedOptimizer(SGD(lr=0.1, momentum=0.0, dampening=0.0, " \
        "nesterov=False, weight_decay=0.0))"
