"""The compiled library: loading, build flags, threads."""
import os

import pytest

import tinyflow as tfl
from tinyflow import native

BACKEND_INDEPENDENT = True


def test_c_backend_is_built_and_preferred():
    assert native.is_built(), native.why_not_built()
    assert tfl.backends.available()[0] == "c"
    assert tfl.Session().backend.name == os.environ["TINYFLOW_BACKEND"]


def test_the_sanitizer_run_really_loads_the_sanitized_build():
    if os.environ.get("TINYFLOW_EXPECT_SANITIZERS"):  # set by scripts/sanitize.sh
        assert "-fsanitize=address,undefined" in native.build_flags()
    else:
        assert "-fsanitize" not in native.build_flags() and "-O3" in native.build_flags()


def test_thread_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "1")
    assert native.configure_threads() == 1
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "2")
    assert native.configure_threads() == (2 if native.lib.tf_openmp_enabled() else 1)


def test_info_command_prints_backends_and_build(capsys):
    from tinyflow.cli import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "backends available: c," in out and "numpy" in out and "build flags" in out
    assert "OpenCL" in out  # devices listed, or why there are none


def test_unbuilt_library_is_reported_clearly(monkeypatch):
    monkeypatch.setattr(native, "lib", None)
    assert not tfl.backends.CBackend.is_available()
    with pytest.raises(tfl.BackendError, match="not built.*pip install -e"):
        tfl.backends.get_backend("c")
