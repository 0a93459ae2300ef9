"""The OpenCL kernel sources are found in an installed package first, else in the checkout's ckernels/opencl.

scripts/wheel_smoke.sh (run by scripts/test.sh) builds and installs a real wheel and runs every backend.
"""
import pathlib

from tinyflow.backends import opencl_runtime

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_checkout_uses_ckernels_opencl():
    assert opencl_runtime._kernel_folder() == ROOT / "ckernels" / "opencl"
    assert (opencl_runtime._kernel_folder() / "common.h.cl").is_file()


def test_an_installed_package_uses_its_own_copy(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "tinyflow"
    (package / "opencl_kernels").mkdir(parents=True)
    monkeypatch.setattr(opencl_runtime, "__file__", str(package / "backends" / "opencl_runtime.py"))
    assert opencl_runtime._kernel_folder() == package / "opencl_kernels"


def test_setup_ships_every_kernel_file():
    setup = (ROOT / "setup.py").read_text()
    assert '"tinyflow.opencl_kernels": "ckernels/opencl"' in setup and '"tinyflow.opencl_kernels": ["*.cl"]' in setup
    assert "recursive-include ckernels *.c *.h *.cl *.py" in (ROOT / "MANIFEST.in").read_text()


def test_the_explorer_ships_its_layout_library_with_its_licence():
    """dagre (vendored, MIT) and the pages' own script and styles are package data, in the wheel and the sdist."""
    static = ROOT / "tinyflow" / "viz" / "explorer" / "static"
    assert {"dagre.min.js", "dagre.LICENSE", "explorer.js", "explorer.css"} <= {p.name for p in static.iterdir()}
    licence = (static / "dagre.LICENSE").read_text()
    assert "MIT" in licence or "Permission is hereby granted, free of charge" in licence
    assert "Chris Pettitt" in licence
    setup = (ROOT / "setup.py").read_text()
    assert '"tinyflow.viz.explorer": ["static/*"]' in setup and '"tinyflow.board": ["static/*"]' in setup
    manifest = (ROOT / "MANIFEST.in").read_text()
    assert "recursive-include tinyflow/viz/explorer/static *" in manifest
    assert "recursive-include tinyflow/board/static *" in manifest
