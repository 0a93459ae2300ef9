"""Registry-driven, through to_static: every op case traced by `tfl.jit.to_static` gives graph mode's value, and the
gradient eager backward takes through the traced program equals graph mode's `tfl.gradients`."""
import numpy as np
import pytest

import tinyflow as tfl
from op_cases import GRAPH_ONLY, all_cases


CASES = [(i, c) for i, c in all_cases() if i.rsplit("-", 1)[0] not in GRAPH_ONLY]  # stacks exist in graphs only


def graph_mode(case, projection):
    """The case's value and the gradients of sum(value * projection) for its float inputs, in graph mode."""
    with tfl.Graph().as_default():
        placeholders = [tfl.Placeholder(v.shape, v.dtype) for v in case.inputs]
        node = case.build(*placeholders)
        loss = tfl.reduce_sum(node * tfl.Constant(projection))
        floats = [p for p, v in zip(placeholders, case.inputs) if v.dtype.kind == "f"]
        grads = tfl.gradients(loss, floats)
        with tfl.Session() as sess:
            feed = dict(zip(placeholders, case.inputs))
            return sess.run(node, feed), [None if g is None else sess.run(g, feed) for g in grads]


@pytest.mark.parametrize("case", [c for _, c in CASES], ids=[i for i, _ in CASES])
def test_to_static_value_and_gradient_equal_graph_mode(case):
    inputs = [tfl.tensor(v, requires_grad=v.dtype.kind == "f", dtype=v.dtype) for v in case.inputs]
    static = tfl.jit.to_static(case.build)
    out = static(*inputs)
    assert isinstance(out, tfl.Tensor) and len(static.concrete_programs) == 1
    projection = np.random.default_rng(0).standard_normal(out.shape)
    (out * projection).sum().backward()
    value, graph_grads = graph_mode(case, projection)
    np.testing.assert_allclose(out.numpy(), value, rtol=1e-6, atol=1e-8)
    assert out.dtype == value.dtype
    for x, g in zip([x for x in inputs if x.requires_grad], graph_grads):
        if g is None:
            assert x.grad is None or not np.any(x.grad)
        else:
            np.testing.assert_allclose(x.grad, g, rtol=1e-6, atol=1e-8)
