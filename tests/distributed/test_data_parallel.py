"""DistributedOptimizer and broadcast_variables: data-parallel training equals one process on the full batch."""
import numpy as np
import pytest

import tinyflow as tfl
from launching import launch
from problems import mlp_graph, optimizer, regression_data

BACKEND_INDEPENDENT = True
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

# eager form: parameters carrying numpy .grad arrays, as tfl.Tensor does
class Param:
    def __init__(self, grad):
        self.grad = grad
class EagerSGD:
    def __init__(self, params):
        self.params, self.steps = params, 0
    def step(self):
        self.steps += 1
params = [Param(np.full((2, 2), float(r), np.float32)), Param(None), Param(np.arange(3.0) * (r + 1))]
first = params[0].grad
opt = d.DistributedOptimizer(EagerSGD(params))
calls = d.communication_stats()["all_reduce"]["calls"]
opt.step()
assert d.communication_stats()["all_reduce"]["calls"] == calls + 1 and opt.steps == 1
assert params[0].grad is first and first.dtype == np.float32          # averaged in place
np.testing.assert_allclose(first, np.full((2, 2), (w - 1) / 2))
assert params[1].grad is None
np.testing.assert_allclose(params[2].grad, np.arange(3.0) * (w + 1) / 2)
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


def test_distributed_optimizer_needs_init_when_the_graph_is_built():
    opt = tfl.distributed.DistributedOptimizer(tfl.optim.SGD(0.1))
    w = tfl.Variable(np.ones(3, np.float32))
    with pytest.raises(tfl.TinyflowError, match=r"init\(\)"):
        opt.minimize(tfl.reduce_sum(w * w))
    assert opt.lr == 0.1 and repr(opt) == "DistributedOptimizer(SGD(lr=0.1, momentum=0.0, dampening=0.0, " \
        "nesterov=False, weight_decay=0.0))"
