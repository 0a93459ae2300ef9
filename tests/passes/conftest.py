"""Optimiser tests: kernels compile at their first run, at every size, into this test process's own cache folder."""
import pytest

from tinyflow.backends import CBackend


@pytest.fixture(autouse=True)
def compile_at_first_run(monkeypatch):
    """Fused kernels skip the numpy runs, so every test exercises the generated C / OpenCL code."""
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
    # small arrays go to numpy in production; here every size runs the generated kernel
    monkeypatch.setattr(CBackend, "small_size", 0)
