"""`import tinyflow` pays only for what every program uses: optional libraries load when first used."""
import json
import os
import pathlib
import subprocess
import sys

BACKEND_INDEPENDENT = True
ROOT = str(pathlib.Path(__file__).resolve().parents[1])
OPTIONAL = ["matplotlib", "pyopencl", "graphviz", "onnx", "torch", "tqdm", "threadpoolctl", "mpi4py", "selenium"]


def run_fresh(code):
    """Run `code` in a fresh interpreter; the JSON of `result` it leaves, and which OPTIONAL libraries it loaded."""
    script = (f"import json, sys\nresult = None\n{code}\n"
              f"print(json.dumps([result, [m for m in {OPTIONAL!r} if m in sys.modules]]))")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_import_tinyflow_leaves_the_optional_libraries_unimported():
    assert run_fresh("import tinyflow\nresult = 'http.server' in sys.modules") == [False, []]  # nor the board's server


def test_optional_parts_load_when_first_used():
    result, loaded = run_fresh("import tinyflow as tfl\n"
                               "result = ['board' in dir(tfl), callable(tfl.board.Board), callable(tfl.onnx.load)]\n"
                               "assert isinstance(tfl.plot.figure(figsize=(2, 2)), tfl.plot.Figure)")
    assert result == [True, True, True]
    assert "matplotlib" in loaded and "pyopencl" not in loaded


def test_available_backends_do_not_depend_on_when_pyopencl_is_imported():
    lazily, _ = run_fresh("import tinyflow as tfl\nresult = tfl.backends.available()")
    eagerly, _ = run_fresh("try:\n    import pyopencl\nexcept ImportError:\n    pass\n"
                           "import tinyflow as tfl\nresult = tfl.backends.available()")
    assert lazily == eagerly
    without, _ = run_fresh("sys.modules['pyopencl'] = None  # as if not installed\nimport tinyflow as tfl\n"
                           "from tinyflow.backends import opencl_runtime\n"
                           "result = [tfl.backends.available(), opencl_runtime.why_unavailable()]")
    assert "opencl" not in without[0] and without[1].startswith("pyopencl is not installed")
