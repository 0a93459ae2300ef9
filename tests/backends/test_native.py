"""The compiled library: loading, build flags, threads."""
import os

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import native



def test_c_backend_is_built_and_preferred():
    assert native.is_built(), native.why_not_built()
    assert tfl.backends.available()[0] == "c"
    assert tfl.Session().backend.name == os.environ.get("TINYFLOW_BACKEND", "c")


def test_the_sanitizer_run_really_loads_the_sanitized_build():
    if os.environ.get("TINYFLOW_EXPECT_SANITIZERS"):  # set by scripts/sanitize.sh
        assert "-fsanitize=address,undefined" in native.build_flags()
    else:
        assert "-fsanitize" not in native.build_flags() and "-O3" in native.build_flags()


def test_thread_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "1")
    assert native.configure_threads() == 1
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "2")
    assert native.configure_threads() == 2


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


def _run_python(code, **env):
    import subprocess
    import sys
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=120)


@pytest.mark.parametrize("content", [b"", b"not a library at all\n", b"\x7fELF garbage"])
def test_a_ckernels_path_to_a_non_library_only_makes_the_c_backend_unavailable(tmp_path, content):
    bogus = tmp_path / "_ckernels.abi3.so"
    bogus.write_bytes(content)
    result = _run_python("import tinyflow as tfl; print(tfl.backends.available()); "
                         "print(tfl.backends.CBackend.why_unavailable())", TINYFLOW_CKERNELS_PATH=str(bogus))
    assert result.returncode == 0, result.stderr
    assert "'c'" not in result.stdout.splitlines()[0] and "numpy" in result.stdout
    assert str(bogus) in result.stdout and "TINYFLOW_CKERNELS_PATH" in result.stdout


def test_a_ckernels_path_to_a_text_file_without_so_suffix_is_reported(tmp_path):
    bogus = tmp_path / "kernels.txt"
    bogus.write_text("hello")
    result = _run_python("import tinyflow as tfl; print(tfl.backends.CBackend.why_unavailable())",
                         TINYFLOW_CKERNELS_PATH=str(bogus))
    assert result.returncode == 0, result.stderr
    assert str(bogus) in result.stdout


@pytest.mark.parametrize("value, expected", [("3000000000", native.MAX_THREADS), ("0", None), ("-4", None),
                                             ("two", None), (" 1 ", 1)])
def test_absurd_thread_counts_are_clamped_or_ignored(monkeypatch, value, expected):
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "1")
    native.configure_threads()
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", value)
    threads = native.configure_threads()  # never OverflowError
    if expected is None:
        assert threads == 1  # ignored: the previous setting stays
    else:
        assert threads == expected
    monkeypatch.setenv("TINYFLOW_NUM_THREADS", "2")
    native.configure_threads()


def test_the_shared_codes_are_declared_once_and_agree_everywhere():
    from tinyflow.backends import kernel_codes
    assert kernel_codes.ENUMS["tf_layout_kind"]["TF_SCALAR"] == 3 and kernel_codes.PARALLEL_MIN == 2 ** 18
    # an installed wheel has no header: it reads ENUM_NAMES' enums from the library, so they must be every enum
    assert set(kernel_codes.ENUM_NAMES) == set(kernel_codes.ENUMS)
    for codes in kernel_codes.ENUMS.values():  # the parsed header agrees with what cffi compiled
        for name, value in codes.items():
            assert getattr(native.lib, name) == value, name
    assert f"-DTF_B_ROW={native.lib.TF_B_ROW}" in kernel_codes.opencl_defines()
    assert kernel_codes.LAYOUT_KINDS["col"] == native.lib.TF_COLUMN
    assert kernel_codes.REDUCE["ReduceMean"] == native.lib.TF_REDUCE_MEAN


def test_the_codes_are_known_without_the_c_library(tmp_path):
    bogus = tmp_path / "missing.so"
    result = _run_python("from tinyflow.backends import kernel_codes, native; assert native.lib is None; "
                         "print(kernel_codes.LAYOUT_KINDS['scalar'], kernel_codes.ENUMS['tf_broadcast_pattern']['TF_A_COLUMN'])",
                         TINYFLOW_CKERNELS_PATH=str(bogus))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "6"]


def test_the_window_formula_is_the_one_of_shape_inference():
    from tinyflow.backends.kernel_codes import pool_geometry
    from tinyflow.ops.windows import window_output_size
    x = tfl.Placeholder((2, 3, 9, 7))
    y = tfl.max_pool2d(x, (3, 2), stride=(2, 3), padding=((1, 0), (1, 1)), dilation=(1, 2), ceil_mode=True)
    geometry = pool_geometry(y, np.zeros((2, 3, 9, 7)))
    assert y.shape[2:] == geometry[12:] == (window_output_size(9, 3, 2, (1, 0), 1, True),
                                            window_output_size(7, 2, 3, (1, 1), 2, True))