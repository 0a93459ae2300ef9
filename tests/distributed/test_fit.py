"""Model.fit(distributed=True) and Model.fit(checkpoint_dir=...): sharding, rank-0 duties, averaged logs, resume."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tinyflow as tfl
from launching import environment, launch
from problems import boston_model, boston_rows, parameters

EPOCHS, BATCH = 3, 8

WORKER = """
import json, sys
import numpy as np
import tinyflow as tfl
from problems import batchnorm_model, boston_model, boston_rows, parameters
d = tfl.distributed
d.init()
r, out, mode = d.rank(), sys.argv[1], sys.argv[2]
X, y = boston_rows()
sys.stdout = sys.stderr = open(f"{out}/stderr-{mode}{r}.txt", "w")  # where progress goes (plain lines)
def fit(seed, epochs, folder):
    with tfl.Graph().as_default():
        model = boston_model(seed)
        history = model.fit(X, y, epochs=epochs, batch_size=BATCH, distributed=True, verbose=1,
                            validation_data=(X[:30], y[:30]), checkpoint_dir=f"{out}/{folder}/rank{r}")
        np.savez(f"{out}/{folder}{r}.npz", **parameters(model))
        with open(f"{out}/{folder}{r}.json", "w") as f:
            json.dump(history.history, f)
if mode == "first":
    with tfl.Graph().as_default():     # batch norm: moving statistics averaged over processes
        bn_model = batchnorm_model()
        bn_model.fit(X, y, epochs=2, batch_size=BATCH, distributed=True, verbose=0)
        np.savez(f"{out}/bn{r}.npz", **parameters(bn_model))
    fit(7, EPOCHS, "whole")            # uninterrupted
    fit(7, 2, "resumed")               # stopped after epoch 2 ...
else:
    fit(99, EPOCHS, "resumed")         # ... resumed by new processes, from other initial weights
""".replace("EPOCHS", str(EPOCHS)).replace("BATCH", str(BATCH))


def single_process_fit(batch_size):
    """Parameters and history of one process training on all rows."""
    X, y = boston_rows()
    with tfl.Graph().as_default():
        model = boston_model(7)
        history = model.fit(X, y, epochs=EPOCHS, batch_size=batch_size, validation_data=(X[:30], y[:30]), verbose=0)
        return parameters(model), history.history


@pytest.mark.slow
def test_distributed_fit_equals_one_process_with_the_global_batch_and_resumes_exactly(tmp_path):
    n = 2
    launch(tmp_path, WORKER, n, tmp_path, "first")
    launch(tmp_path, WORKER, n, tmp_path, "resume")
    expected_params, expected_history = single_process_fit(BATCH * n)
    for r in range(n):
        whole = dict(np.load(tmp_path / f"whole{r}.npz"))
        history = json.loads((tmp_path / f"whole{r}.json").read_text())
        # shards dealt as order[rank::world]: together the k-th batches are one process's k-th batch
        for name, value in expected_params.items():
            np.testing.assert_allclose(whole[name], value, rtol=0, atol=1e-12, err_msg=name)
        # loss, metrics and validation values averaged over processes: those of the whole data
        assert sorted(history) == sorted(expected_history) == ["loss", "mae", "val_loss", "val_mae"]
        for key, values in expected_history.items():
            np.testing.assert_allclose(history[key], values, rtol=1e-12, err_msg=key)
        # stopped after epoch 2 and resumed by other processes: the very same final parameters
        resumed = dict(np.load(tmp_path / f"resumed{r}.npz"))
        for name, value in whole.items():
            np.testing.assert_array_equal(resumed[name], value, err_msg=name)
        assert json.loads((tmp_path / f"resumed{r}.json").read_text()) == history
    # moving statistics (each process's own batches) averaged after every epoch: the same on every process
    bn = [dict(np.load(tmp_path / f"bn{r}.npz")) for r in range(n)]
    names = [name for name in bn[0] if "running" in name]
    assert len(names) == 2
    for name in names:
        np.testing.assert_array_equal(bn[1][name], bn[0][name])
        assert not np.allclose(bn[0][name], 0.0 if "mean" in name else 1.0), "the statistics never moved"
    # rank 0 alone shows progress and writes checkpoints
    assert "epoch 3/3" in (tmp_path / "stderr-first0.txt").read_text()
    assert (tmp_path / "stderr-first1.txt").read_text() == ""
    assert sorted(os.listdir(tmp_path / "whole" / "rank0")) == ["fit_state.json", "variables-000003.npz"]
    assert not (tmp_path / "whole" / "rank1").exists()


KILLED = """
import os, signal, sys
import tinyflow as tfl
from problems import boston_model, boston_rows

class KillAfterEpoch2:                      # a crash right after the checkpoint of epoch 2
    def start(self): pass
    def should_stop(self, epoch, logs, variables):
        if epoch == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return False

X, y = boston_rows()
boston_model(7, dropout=0.3).fit(X, y, epochs=4, batch_size=16, verbose=0, checkpoint_dir=sys.argv[1],
                                 early_stopping=KillAfterEpoch2())
"""


def test_a_killed_run_resumes_from_its_checkpoint_with_the_same_final_parameters(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    folder = tmp_path / "checkpoint"
    result = subprocess.run([sys.executable, str(script), str(folder)], env=environment(), timeout=120,
                            capture_output=True, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert json.loads((folder / "fit_state.json").read_text())["epoch"] == 2
    X, y = boston_rows()
    with tfl.Graph().as_default():  # other initial weights and seeds: only the checkpoint can give the answer
        resumed = boston_model(1234, dropout=0.3)
        history = resumed.fit(X, y, epochs=4, batch_size=16, verbose=0, checkpoint_dir=folder)
    with tfl.Graph().as_default():
        whole = boston_model(7, dropout=0.3)
        expected = whole.fit(X, y, epochs=4, batch_size=16, verbose=0)
    assert history.epochs == [1, 2, 3, 4] and history["loss"] == expected["loss"]
    for name, value in parameters(whole).items():
        np.testing.assert_array_equal(parameters(resumed)[name], value, err_msg=name)


def test_a_finished_checkpoint_is_not_trained_again_and_a_corrupt_one_is_named(tmp_path):
    X, y = boston_rows()
    model = boston_model(3)
    model.fit(X, y, epochs=2, batch_size=32, verbose=0, checkpoint_dir=tmp_path)
    before = parameters(model)
    history = model.fit(X, y, epochs=2, batch_size=32, verbose=0, checkpoint_dir=tmp_path)
    assert history.epochs == [1, 2]
    for name, value in parameters(model).items():
        np.testing.assert_array_equal(value, before[name])
    (tmp_path / "fit_state.json").write_text("{not json")
    with pytest.raises(tfl.CheckpointError, match="fit_state.json"):
        model.fit(X, y, epochs=3, verbose=0, checkpoint_dir=tmp_path)
