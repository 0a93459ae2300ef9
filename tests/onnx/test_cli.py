"""`tinyflow onnx show model.onnx [-o graph.svg]` and the ONNX line of `tinyflow info`."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.cli import main

onnx = pytest.importorskip("onnx", reason="the onnx package is needed (pip install onnx)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402



def write_model(path):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="/conv/Conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="/act/Relu"),
             helper.make_node("Flatten", ["r"], ["y"], name="/flatten/Flatten")]
    inits = [numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "conv.weight"),
             numpy_helper.from_array(np.zeros(2, np.float32), "conv.bias")]
    nodes[0].input[1:] = ["conv.weight", "conv.bias"]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 32])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="hand"), str(path))


def test_show_prints_the_summary_and_draws_the_graph(tmp_path, capsys):
    write_model(tmp_path / "tiny.onnx")
    assert main(["onnx", "show", str(tmp_path / "tiny.onnx")]) == 0
    out = capsys.readouterr().out
    assert "graph 'tiny', ONNX opset 17, produced by hand" in out
    assert "x: float32 (None, 1, 4, 4)" in out and "y: float32 (None, 32)" in out
    assert "ONNX ops (3 nodes): Conv 1, Flatten 1, Relu 1" in out
    assert "parameters: 20 in 2 trainable Variables" in out
    if not tfl.viz.dot_available():
        pytest.skip("graphviz's `dot` is not installed (apt-get install graphviz): the picture cannot be drawn")
    assert main(["onnx", "show", str(tmp_path / "tiny.onnx"), "-o", str(tmp_path / "tiny.svg")]) == 0
    picture = (tmp_path / "tiny.svg").read_text()
    assert "conv.weight" in picture and "cluster_conv" in picture  # ONNX names and the module as a cluster


def test_show_imports_neither_matplotlib_nor_torch_nor_pyopencl(tmp_path):
    """The command once spent most of its time importing libraries it does not use."""
    write_model(tmp_path / "tiny.onnx")
    picture = ["-o", str(tmp_path / "tiny.svg")] if tfl.viz.dot_available() else []
    script = ("import sys\nfrom tinyflow.cli import main\nassert main(sys.argv[1:]) == 0\n"
              "print(sorted(m for m in ('matplotlib', 'torch', 'pyopencl', 'tqdm') if m in sys.modules))")
    root = str(pathlib.Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", script, "onnx", "show", str(tmp_path / "tiny.onnx"), *picture],
                          capture_output=True, text=True, cwd=root, timeout=120,
                          env=dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_show_reports_a_bad_file_without_a_traceback(tmp_path, capsys):
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage" * 10)
    assert main(["onnx", "show", str(tmp_path / "bad.onnx")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_info_names_the_onnx_version(capsys):
    from tinyflow.cli import info
    info()
    assert f"ONNX: onnx {onnx.__version__}" in capsys.readouterr().out
