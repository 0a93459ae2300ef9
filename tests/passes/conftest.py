"""Optimiser tests: kernels compile at their first run, into this test process's own cache folder."""
import pytest


@pytest.fixture(autouse=True)
def compile_at_first_run(monkeypatch):
    """Fused kernels skip the numpy runs, so every test exercises the generated C / OpenCL code."""
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
