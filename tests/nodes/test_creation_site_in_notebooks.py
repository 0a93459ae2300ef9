"""Nodes built in a notebook or IPython cell name the cell ("cell 5, line 3"), not a temporary file."""
import sys

import numpy as np
import pytest

import tinyflow as tfl



def test_a_node_built_in_a_file_names_the_file_and_line():
    node, line = tfl.Placeholder((2,), name="x"), sys._getframe().f_lineno
    assert node.creation_site.endswith(f"test_creation_site_in_notebooks.py:{line}")


@pytest.fixture
def jupyter_shell(monkeypatch):
    """An IPython shell compiling cells the way a Jupyter kernel does (/tmp/ipykernel_<pid>/<hash>.py)."""
    from IPython.core.interactiveshell import InteractiveShell
    compiler = pytest.importorskip("ipykernel.compiler", reason="ipykernel is not installed (pip install -e '.[dev]')")
    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell, "compile", compiler.XCachingCompiler())
    return shell


def test_a_jupyter_cell_is_named_by_its_execution_count(jupyter_shell):
    shell = jupyter_shell
    shell.run_cell("import tinyflow as tfl", store_history=True)
    result = shell.run_cell("first = 1\nnode = tfl.Placeholder((2,), name='in_a_cell')", store_history=True)
    result.raise_error()
    number = shell.execution_count - 1
    node = shell.user_ns["node"]
    assert "ipykernel_" in node.site[0].co_filename  # what Python itself reports for the cell
    assert node.creation_site == f"cell {number}, line 2"


def test_errors_about_a_node_built_in_a_cell_point_at_the_cell(jupyter_shell):
    shell = jupyter_shell
    shell.run_cell("import tinyflow as tfl\n"
                   "class NoGrad(tfl.Operation):\n"
                   "    abstract = True  # not added to the registry of built-in op types\n"
                   "    def compute(self, x): return x\n", store_history=True)
    result = shell.run_cell("x = tfl.Placeholder((3,), name='x')\ny = NoGrad(x, name='y')", store_history=True)
    result.raise_error()
    with pytest.raises(tfl.GradientError, match=rf"created at cell {shell.execution_count - 1}, line 2"):
        tfl.gradients(shell.user_ns["y"], [shell.user_ns["x"]])


def test_terminal_ipython_cells_are_named_too():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("import tinyflow as tfl", store_history=True)
    shell.run_cell("node = tfl.Placeholder((2,), name='in_ipython')", store_history=True).raise_error()
    assert shell.user_ns["node"].creation_site == f"cell {shell.execution_count - 1}, line 1"


def test_classic_ipython_cell_file_names_are_recognised():
    code = compile("node = tfl.Placeholder((2,), name='legacy')", "<ipython-input-7-0a1b2c3d4e5f>", "exec")
    namespace = {"tfl": tfl, "np": np}
    exec(code, namespace)
    assert namespace["node"].creation_site == "cell 7, line 1"
