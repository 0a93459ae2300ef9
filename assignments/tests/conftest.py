"""Puts the assignment modules first on the path and gives every test a fresh graph.

The modules come from the folder above this one, or from $TINYFLOW_ASSIGNMENT_PATH when the
autograder (`tinyflow grade`) runs these tests against a student's folder.
"""
import importlib
import os
import sys

import pytest

import tinyflow as tfl

FOLDER = os.environ.get("TINYFLOW_ASSIGNMENT_PATH") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.abspath(FOLDER))

TOPICS = {1: "forward ops and static shapes", 2: "gradient functions and gradcheck",
          3: "the backprop walk (pending counts)", 4: "optimizers against their formulas",
          5: "a C kernel through cffi, with a parity test", 6: "a convnet in graph mode"}


def pytest_configure(config):
    """Register the markers here too, so `pytest -m assignmentN` works in a student's folder."""
    for number, topic in TOPICS.items():
        config.addinivalue_line("markers", f"assignment{number}: {topic}")


@pytest.fixture(scope="session")
def student_module():
    """Imports one of the student's modules by name (inside a test: a broken file fails its tests, not the run)."""
    return importlib.import_module


@pytest.fixture(autouse=True)
def fresh_graph():
    tfl.reset_default_graph()
    tfl.set_seed(0)
    yield tfl.get_default_graph()
