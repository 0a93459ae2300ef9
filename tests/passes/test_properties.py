"""Property: on random graphs, the optimised plan computes the same values and gradients as the plain one."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinyflow as tfl

from helpers import assert_close

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

UNARY = [tfl.sigmoid, tfl.tanh, tfl.relu, tfl.negative, tfl.abs, tfl.softplus,
         lambda a: tfl.leaky_relu(a, 0.1), lambda a: tfl.exp(tfl.tanh(a)), lambda a: tfl.square(tfl.tanh(a)),
         lambda a: a * 1.0, lambda a: a + 0.0, lambda a: -(-a), tfl.identity,
         lambda a: tfl.reshape(tfl.reshape(a, (-1,)), (3, 4)) if a.shape == (3, 4) else a]
BINARY = [tfl.add, tfl.subtract, tfl.multiply, tfl.maximum, tfl.minimum,
          lambda a, b: a / (1.0 + tfl.abs(b)), lambda a, b: a * tfl.exp(tfl.Constant(np.float32(0.5)))]

steps = st.lists(st.tuples(st.booleans(), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)),
                 min_size=1, max_size=12)


def build(plan):
    """A random graph over x (3, 4), a row b (4,), a column c (3, 1) and a scalar s; loss and fetches."""
    x = tfl.Placeholder((3, 4), name="x")
    b = tfl.Variable(np.linspace(-1, 1, 4, dtype=np.float32), name="b")
    c = tfl.Variable(np.linspace(0.5, -0.5, 3, dtype=np.float32).reshape(3, 1), name="c")
    s = tfl.Constant(np.float32(0.7))
    values = [x, b, c, s]
    for binary, op, i, j in plan:
        a, other = values[i % len(values)], values[j % len(values)]
        values.append(BINARY[op % len(BINARY)](a, other) if binary else UNARY[op % len(UNARY)](a))
        if len(values) % 5 == 0:
            values.append(values[-1] * values[-2])   # a value read twice: fusion boundaries
    tail = values[4:]
    loss = tfl.add_n([tfl.reduce_sum(v * x) for v in tail[-3:]])
    return x, loss, [tail[-1], loss] + tfl.gradients(loss, [x, b, c])


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps, data=st.integers(0, 2**16))
def test_optimised_equals_plain_values_and_gradients(backend, plan, data):
    with tfl.Graph().as_default() as graph:
        x, loss, fetches = build(plan)
        fetches = [f for f in fetches if f is not None]
        feed = {x: np.random.default_rng(data).standard_normal((3, 4)).astype(np.float32)}
        plain = tfl.Session(graph, optimize=False).run(fetches, feed)
        sess = tfl.Session(graph, optimize=True)
        for _ in range(2):
            optimised = sess.run(fetches, feed)
    assert_close(optimised, plain, rtol=1e-4, atol=1e-5)
