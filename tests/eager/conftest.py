"""Eager tests run on the backend of the `backend` fixture (it sets $TINYFLOW_BACKEND; eager caches its choice)."""
import pytest

import tinyflow as tfl


@pytest.fixture(autouse=True)
def eager_backend(backend):
    """Point eager mode at this test's backend, and back at the default afterwards."""
    tfl.eager.set_backend(backend)
    yield backend
    tfl.eager.set_backend(None)
