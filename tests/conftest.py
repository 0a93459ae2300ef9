"""Shared fixtures: every test gets a fresh default graph and a fixed global seed."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests import op_cases as a plain module

import tinyflow as tfl  # noqa: E402


@pytest.fixture(autouse=True, params=tfl.backends.available())
def backend(request, monkeypatch):
    """Every test runs once per available backend, so each op is checked on every backend."""
    monkeypatch.setenv("TINYFLOW_BACKEND", request.param)
    return request.param


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts from an empty default graph and the same random seed."""
    tfl.reset_default_graph()
    tfl.set_seed(0)
    yield tfl.get_default_graph()
