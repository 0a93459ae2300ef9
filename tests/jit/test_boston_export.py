"""`tinyflow demo boston --export DIR`: the trained MLP as tfl.jit files and ONNX, raw features in."""
import numpy as np
import pytest

import tinyflow as tfl


def test_boston_demo_exports_jit_and_onnx_files_that_agree(tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is needed (pip install onnxruntime)")
    from tinyflow.cli import main
    export = tmp_path / "export"
    assert main(["demo", "boston", "--quiet", "--epochs", "3", "--out", str(tmp_path), "--export", str(export)]) == 0
    assert {"boston_mlp.json", "boston_mlp.npz", "boston_mlp.onnx"} <= {p.name for p in export.iterdir()}
    assert "boston_mlp.onnx" in capsys.readouterr().out
    X, y = tfl.data.load_boston()
    raw = X[:7].astype(np.float32)
    loaded = tfl.jit.load(export / "boston_mlp")
    prices = loaded(raw)
    assert prices.shape == (7, 1) and np.all(np.isfinite(prices))
    session = ort.InferenceSession(str(export / "boston_mlp.onnx"), providers=["CPUExecutionProvider"])
    (onnx_prices,) = session.run(None, {session.get_inputs()[0].name: raw})
    np.testing.assert_allclose(onnx_prices, prices, rtol=1e-5, atol=1e-5)


def test_export_is_refused_for_other_demos(capsys):
    from tinyflow.cli import main
    with pytest.raises(SystemExit):
        main(["demo", "digits", "--export", "somewhere"])
    assert "--export is available for the boston demo" in capsys.readouterr().err
