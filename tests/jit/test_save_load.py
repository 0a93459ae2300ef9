"""jit.save / jit.load: JSON graph + .npz parameters, loaded without the model's code; tampered files refused."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.jit import InputSpec

WORKTREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL_MODULE = textwrap.dedent('''
    import numpy as np
    import tinyflow as tfl

    class GatedNet(tfl.nn.Layer):
        """A convnet whose output depends on a tensor `if` and a tensor `while`."""

        def __init__(self):
            super().__init__()
            self.conv = tfl.nn.Conv2D(1, 3, 3, padding=1, act="relu")
            self.pool = tfl.nn.MaxPool2D(2)
            self.flat = tfl.nn.Flatten()
            self.norm = tfl.nn.BatchNorm1d(12)
            self.fc = tfl.nn.Linear(12, 2)

        def forward(self, x):
            h = self.norm(self.flat(self.pool(self.conv(x))))
            if tfl.reduce_mean(h) > 0:
                h = tfl.tanh(h)
            else:
                h = h * 0.5
            scale = tfl.Constant(1.0)
            while scale < 4.0:
                scale = scale * 2.0
            return tfl.softmax(self.fc(h) * scale)
''')


def run_python(code, cwd):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": WORKTREE, "TINYFLOW_BACKEND": os.environ.get("TINYFLOW_BACKEND", "")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_saved_model_runs_in_a_process_that_cannot_import_its_code(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "gated_model.py").write_text(MODEL_MODULE)
    x = np.random.default_rng(0).standard_normal((5, 1, 4, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    save = run_python(textwrap.dedent(f'''
        import sys, numpy as np, tinyflow as tfl
        sys.path.insert(0, {str(tmp_path / "models")!r})
        from gated_model import GatedNet
        net = GatedNet()
        tfl.jit.save(net, "export/net", input_spec=[tfl.jit.InputSpec([None, 1, 4, 4], "float32", "image")])
        f = tfl.jit.to_static(net)
        np.save("expected.npy", f(np.load("x.npy")))
    '''), tmp_path)
    assert save.returncode == 0, save.stderr
    load = run_python(textwrap.dedent('''
        import numpy as np, tinyflow as tfl
        try:
            import gated_model
            raise SystemExit("the model module must not be importable here")
        except ImportError:
            pass
        m = tfl.jit.load("export/net")
        x = np.load("x.npy")
        np.testing.assert_allclose(m(x), np.load("expected.npy"), rtol=1e-5, atol=1e-6)
        assert m(x[:1]).shape == (1, 2)
        print("ok", sorted({n.op_type for n in m.graph.nodes}))
    '''), tmp_path)
    assert load.returncode == 0, load.stderr
    assert "Cond" in load.stdout and "WhileLoop" in load.stdout and "Conv" in load.stdout


def mlp_file(tmp_path):
    model = tfl.nn.Sequential(tfl.nn.Linear(3, 4, act="sigmoid"), tfl.nn.Linear(4, 1))
    json_path, npz_path = tfl.jit.save(model, tmp_path / "mlp", input_spec=[InputSpec([None, 3], "float32", "x")])
    return model, json_path, npz_path


def test_round_trip_and_fine_tuning_the_loaded_parameters(tmp_path):
    model, json_path, npz_path = mlp_file(tmp_path)
    description = json.loads(open(json_path).read())
    assert description["format"] == "tinyflow.jit" and description["version"] == tfl.jit.save_load.VERSION
    assert description["inputs"][0]["spec"] == {"shape": [None, 3], "dtype": "float32", "name": "x"}
    assert {"MatMul", "Add", "Sigmoid"} <= {n["type"] for n in description["nodes"]}
    assert all(not f.endswith(".pkl") for f in os.listdir(tmp_path))
    m = tfl.jit.load(tmp_path / "mlp")
    x = np.random.default_rng(3).standard_normal((7, 3)).astype(np.float32)
    np.testing.assert_allclose(m(x), tfl.jit.to_static(model)(x), rtol=1e-6)
    assert len(m.parameters()) == 4 and all(isinstance(p, tfl.Variable) for p in m.parameters())
    with m.graph.as_default():
        target = tfl.Placeholder((None, 1))
        loss = tfl.nn.mse_loss(m.outputs[0], target)
        train = tfl.optim.SGD(0.5).minimize(loss, var_list=m.parameters())
    with tfl.Session(m.graph) as sess:
        y = np.ones((7, 1), np.float32)
        first = sess.run(loss, {m.inputs[0]: x, target: y})
        for _ in range(20):
            sess.run(train, {m.inputs[0]: x, target: y})
        assert sess.run(loss, {m.inputs[0]: x, target: y}) < first / 2


def tamper(json_path, change):
    description = json.loads(open(json_path).read())
    change(description)
    with open(json_path, "w") as f:
        json.dump(description, f)


def _node(description, op_type):
    return next(n for n in description["nodes"] if n["type"] == op_type)


@pytest.mark.parametrize("change, message", [
    (lambda d: _node(d, "MatMul").update(type="os.system"), "unknown op type 'os.system'"),
    (lambda d: _node(d, "Sigmoid").update(type="__import__"), "unknown op type"),
    (lambda d: d.update(parameters="../../etc/passwd.npz"), "plain .npz file name"),
    (lambda d: d.update(version=99), "format version 99"),
    (lambda d: _node(d, "Variable").update(value="param_999"), "no array"),
    (lambda d: _node(d, "Variable").update(shape=[5, 5]), "should be"),
    (lambda d: _node(d, "MatMul")["inputs"].__setitem__(0, "nowhere"), "not defined before it"),
    (lambda d: _node(d, "Add").update(shape=[None, 9]), "recorded as"),
    (lambda d: d["nodes"].append({"name": "x", "type": "Reshape", "inputs": [], "attrs": {"shape": {"eval": 1}}}),
     "unexpected attribute value"),
], ids=["unknown-op", "import", "path-traversal", "version", "missing-param", "wrong-shape", "dangling-edge",
        "inconsistent-shape", "attribute-object"])
def test_tampered_descriptions_raise_checkpoint_error(tmp_path, change, message):
    _, json_path, _ = mlp_file(tmp_path)
    tamper(json_path, change)
    with pytest.raises(tfl.CheckpointError, match=message):
        tfl.jit.load(tmp_path / "mlp")


def test_bad_files_raise_checkpoint_error(tmp_path):
    _, json_path, npz_path = mlp_file(tmp_path)
    with open(npz_path, "wb") as f:  # a pickle where the parameters should be
        import pickle
        pickle.dump({"param_0": np.zeros(3)}, f)
    with pytest.raises(tfl.CheckpointError, match="cannot be read"):
        tfl.jit.load(tmp_path / "mlp")
    np.savez(npz_path, param_0=np.array([object()], dtype=object))
    with pytest.raises(tfl.CheckpointError):
        tfl.jit.load(tmp_path / "mlp")
    with open(json_path, "w") as f:
        f.write("{not json")
    with pytest.raises(tfl.CheckpointError, match="not valid JSON"):
        tfl.jit.load(tmp_path / "mlp")
    with pytest.raises(tfl.CheckpointError, match="cannot be read"):
        tfl.jit.load(tmp_path / "missing")


def _damaged_npz(npz_path, how):
    with open(npz_path, "rb") as f:
        data = bytearray(f.read())
    if how == "truncated":
        data = data[:len(data) // 2]
    elif how == "flipped":
        data[len(data) // 3] ^= 0xFF  # inside the first array: its CRC no longer matches
    else:  # a member whose .npy header declares 10**12 float64 values (8 TB) over 64 bytes
        import io
        import zipfile
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12,)})
        with zipfile.ZipFile(npz_path) as archive:
            names = archive.namelist()
        with zipfile.ZipFile(npz_path, "w") as archive:
            for name in names:
                archive.writestr(name, header.getvalue() + bytes(64))
        return
    with open(npz_path, "wb") as f:
        f.write(bytes(data))


@pytest.mark.parametrize("how", ["truncated", "flipped", "huge-header"])
def test_a_damaged_parameter_file_is_a_checkpoint_error_naming_it(tmp_path, how):
    _, _, npz_path = mlp_file(tmp_path)
    _damaged_npz(npz_path, how)
    with pytest.raises(tfl.CheckpointError, match=rf"the parameter file .*mlp\.npz cannot be read: it is damaged"):
        tfl.jit.load(tmp_path / "mlp")


def test_deeply_nested_json_is_a_checkpoint_error_naming_the_file(tmp_path):
    _, json_path, _ = mlp_file(tmp_path)
    with open(json_path, "w") as f:
        f.write("[" * 100000 + "]" * 100000)
    with pytest.raises(tfl.CheckpointError, match=r"mlp\.json is not valid JSON, or nested too deeply"):
        tfl.jit.load(tmp_path / "mlp")
    _, json_path, _ = mlp_file(tmp_path)
    tamper(json_path, lambda d: _node(d, "Sigmoid").update(attrs={"deep": None}))
    text = open(json_path).read().replace('"deep": null', '"deep": ' + "[" * 900 + "]" * 900)
    with open(json_path, "w") as f:
        f.write(text)
    with pytest.raises(tfl.CheckpointError, match=r"node .*Sigmoid.*RecursionError.* \(in .*mlp\.json\)"):
        tfl.jit.load(tmp_path / "mlp")


@pytest.mark.parametrize("write", [tfl.jit.save, tfl.onnx.export], ids=["jit.save", "onnx.export"])
def test_saving_without_input_spec_says_to_pass_it(tmp_path, write):
    pytest.importorskip("onnx", reason="tfl.onnx.export needs the onnx package")
    with pytest.raises(tfl.TinyflowError, match=r"traces the program on inputs of known shapes and dtypes: pass "
                                                r"input_spec=\[tfl\.jit\.InputSpec"):
        write(tfl.nn.Linear(3, 2), tmp_path / "model")


def test_oversized_descriptions_are_refused_before_parsing(tmp_path, monkeypatch):
    from tinyflow.jit import save_load
    _, json_path, _ = mlp_file(tmp_path)
    monkeypatch.setattr(save_load, "MAX_JSON_BYTES", 100)
    with pytest.raises(tfl.CheckpointError, match="more than any tinyflow model description"):
        tfl.jit.load(json_path)


def test_saving_a_training_step_is_refused(tmp_path):
    layer = tfl.nn.Linear(2, 1)
    opt = tfl.optim.SGD(0.1)

    def step(x):
        loss = tfl.reduce_mean(layer(x))
        opt.minimize(loss)
        return loss
    with pytest.raises(tfl.TinyflowError, match="must not change state"):
        tfl.jit.save(step, tmp_path / "step", input_spec=[InputSpec([None, 2])])
