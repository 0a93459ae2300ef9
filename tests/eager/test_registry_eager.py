"""Registry-driven, in eager mode: every differentiable op's eager gradient matches finite differences and
graph mode (the same gradient functions run on Tensors)."""
import numpy as np
import pytest

import tinyflow as tfl
from op_cases import GRAPH_ONLY, all_cases

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend


def _eager_gradients(case, projection_seed=0):
    inputs = [tfl.tensor(v, requires_grad=v.dtype.kind == "f", dtype=v.dtype) for v in case.inputs]
    out = case.build(*inputs)
    assert isinstance(out, tfl.Tensor), f"an op on Tensors must return a Tensor, got {out!r}"
    projection = np.random.default_rng(projection_seed).standard_normal(out.shape)
    loss = (out * projection).sum()
    loss.backward()
    return out, projection, [x.grad if x.requires_grad else None for x in inputs]


def _eager_loss(case, values, projection):
    with tfl.no_grad():
        out = case.build(*[tfl.tensor(v, dtype=v.dtype) for v in values])
    return float(np.sum(out.numpy() * projection))


CASES = [c for i, c in all_cases() if i.rsplit("-", 1)[0] not in GRAPH_ONLY]  # stacks exist in graphs only
IDS = [i for i, _ in all_cases() if i.rsplit("-", 1)[0] not in GRAPH_ONLY]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager_gradient_matches_finite_differences(case):
    out, projection, grads = _eager_gradients(case)
    rng = np.random.default_rng(1)
    eps, rtol, atol = case.options.get("eps", 1e-6), case.options.get("rtol", 1e-4), case.options.get("atol", 1e-6)
    checked = [i for i, v in enumerate(case.inputs) if v.dtype.kind == "f"]
    for _ in range(3):
        steps = {i: rng.standard_normal(case.inputs[i].shape) for i in checked}
        plus = [v + eps * steps[i] if i in steps else v for i, v in enumerate(case.inputs)]
        minus = [v - eps * steps[i] if i in steps else v for i, v in enumerate(case.inputs)]
        numeric = (_eager_loss(case, plus, projection) - _eager_loss(case, minus, projection)) / (2 * eps)
        analytic = sum(float(np.sum((grads[i] if grads[i] is not None else 0.0) * steps[i])) for i in checked)
        assert abs(numeric - analytic) <= atol + rtol * abs(numeric), (numeric, analytic)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_eager_value_and_gradient_equal_graph_mode(case):
    out, projection, grads = _eager_gradients(case)
    placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in case.inputs]
    node = case.build(*placeholders)
    loss = tfl.reduce_sum(node * tfl.Constant(projection))
    floats = [p for p, v in zip(placeholders, case.inputs) if v.dtype.kind == "f"]
    graph_grads = tfl.gradients(loss, floats)
    with tfl.Session() as sess:
        feed = dict(zip(placeholders, case.inputs))
        value = sess.run(node, feed)
        graph_values = [None if g is None else sess.run(g, feed) for g in graph_grads]
    np.testing.assert_allclose(out.numpy(), value, rtol=1e-6, atol=1e-8)
    assert out.dtype == value.dtype
    eager = [g for g, v in zip(grads, case.inputs) if v.dtype.kind == "f"]
    for e, g in zip(eager, graph_values):
        if g is None:
            assert e is None or not np.any(e)
        else:
            np.testing.assert_allclose(e, g, rtol=1e-6, atol=1e-8)
