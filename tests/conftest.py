"""Shared fixtures: every test gets a fresh default graph and a fixed global seed."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests import op_cases as a plain module

import tinyflow as tfl  # noqa: E402

# generated fused kernels compile into a fresh folder per test run, never a previous run's cache
if "TINYFLOW_CACHE_DIR" not in os.environ:
    import atexit, shutil, tempfile  # noqa: E401
    os.environ["TINYFLOW_CACHE_DIR"] = tempfile.mkdtemp(prefix="tinyflow-test-cache-")
    atexit.register(shutil.rmtree, os.environ["TINYFLOW_CACHE_DIR"], True)


def pytest_generate_tests(metafunc):
    """Parametrise `backend` over every available backend, for the tests that ask for it."""
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", tfl.backends.available(), indirect=True)


@pytest.fixture
def backend(request, monkeypatch):
    """Opt-in: a test that exercises a backend (kernels, plans, eager compute) takes `backend`, or its module
    says `pytestmark = pytest.mark.usefixtures("backend")`, and runs once per available backend. Every
    other test runs once, on the default backend."""
    monkeypatch.setenv("TINYFLOW_BACKEND", request.param)
    return request.param


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts from an empty default graph and the same random seed."""
    tfl.reset_default_graph()
    tfl.set_seed(0)
    yield tfl.get_default_graph()


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for every browser test (tests/browser.py); skips naming what to install."""
    import shutil

    import browser
    needs = browser.missing()
    if needs:
        pytest.skip(f"the browser tests need {needs}")
    driver = browser.launch()
    yield driver
    driver.quit()
    shutil.rmtree(driver.profile_dir, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    """Say where the browser tests left their screenshots and pages."""
    import browser
    folder = browser.used_artifacts_dir()
    if folder:
        terminalreporter.write_line(f"browser test artefacts (screenshots, pages): {folder}")
