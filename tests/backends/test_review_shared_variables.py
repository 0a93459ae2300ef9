"""A Variable trained by a C session and an OpenCL session in turn: each sees the other's updates."""
import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import CBackend, OpenCLBackend, opencl_runtime

pytestmark = pytest.mark.usefixtures("backend")  # kernels: run once per available backend

pytestmark = pytest.mark.skipif(not (OpenCLBackend.is_available() and CBackend.is_available()),
                                reason=f"needs the C and OpenCL backends (OpenCL: "
                                       f"{opencl_runtime.why_unavailable() or 'available'})")


def train_in_turns(backends):
    """Two Adam steps per session in the order given, on one graph; the losses and the final weights."""
    with tfl.Graph().as_default():
        x = tfl.Placeholder((None, 4), name="x")
        w = tfl.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), name="w")
        loss = tfl.reduce_mean(tfl.square(tfl.matmul(x, w) - 1.0))
        train = tfl.optim.Adam(0.05).minimize(loss)
        sessions = {name: tfl.Session(backend=name) for name in set(backends)}
        batch = np.arange(32, dtype=np.float32).reshape(8, 4) / 10
        losses = [float(sessions[name].run([train, loss], {x: batch})[1]) for name in backends for _ in range(2)]
        for sess in sessions.values():
            sess.close()
        return losses, w.value


@pytest.mark.parametrize("order", [("opencl", "c", "opencl", "c"), ("c", "opencl", "c", "opencl")])
def test_updates_made_in_place_by_c_kernels_reach_the_opencl_copy(order):
    expected_losses, expected_w = train_in_turns(["numpy"] * 4)
    losses, w = train_in_turns(list(order))
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4)
    np.testing.assert_allclose(w, expected_w, rtol=1e-4, atol=1e-6)
