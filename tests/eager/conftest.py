"""Eager tests that take the `backend` fixture run on its backend (eager mode caches its choice: set it here)."""
import pytest

import tinyflow as tfl


@pytest.fixture(autouse=True)
def eager_backend(request):
    """Point eager mode at this test's backend (the default one without `backend`), and back afterwards."""
    name = request.getfixturevalue("backend") if "backend" in request.fixturenames else None
    tfl.eager.set_backend(name)
    yield name
    tfl.eager.set_backend(None)
