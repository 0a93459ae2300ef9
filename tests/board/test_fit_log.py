"""Model.fit(log_dir=...): one line per epoch with loss, metrics, learning rate and time; the model's page."""
import json
import re

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.board.runlog import FILE_NAME, ScalarLog



def regression(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = (X @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
    tfl.set_seed(seed)
    net = tfl.nn.Sequential(tfl.nn.Linear(3, 8, act="tanh"), tfl.nn.Linear(8, 1))
    return tfl.Model(net, "mse", tfl.optim.SGD(0.05), metrics=["rmse"]), X, y


def test_each_epoch_logs_the_history_lr_and_its_duration(tmp_path):
    model, X, y = regression()
    history = model.fit(X, y, epochs=4, batch_size=16, verbose=0, validation_data=(X[:16], y[:16]),
                        log_dir=tmp_path / "run")
    curves = ScalarLog(tmp_path / "run" / FILE_NAME).poll().curves()
    assert set(curves) == {"loss", "rmse", "val_loss", "val_rmse", "lr", "epoch_time"}
    for name in ("loss", "rmse", "val_loss", "val_rmse"):
        assert curves[name] == [[e, pytest.approx(v)] for e, v in zip(range(1, 5), history[name])]
    assert curves["lr"] == [[e, 0.05] for e in range(1, 5)]
    assert all(0 < t < 10 for _, t in curves["epoch_time"])


def test_the_run_folder_holds_the_models_explorer_page_with_trained_values(tmp_path):
    model, X, y = regression()
    model.fit(X, y, epochs=2, batch_size=16, verbose=0, log_dir=tmp_path)
    text = (tmp_path / "graph.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="tinyflow-data">(.*?)</script>', text, re.S).group(1))
    weight = next(n for n in data["nodes"] if n["name"] == "Linear/weight")
    trained = model.variables[0].value
    assert weight["value"]["mean"] == pytest.approx(float(trained.mean()), rel=1e-5)  # the end of training
    assert weight["grad"] is not None and data["backprop_order"][0] == model.loss.name
    assert not any(n["name"].startswith("gradients/") for n in data["nodes"] if n["name"] not in
                   [m.name for m in model.graph.nodes])  # scratch gradients were removed


def test_a_second_fit_continues_the_curves_and_a_resumed_fit_keeps_its_epochs(tmp_path):
    model, X, y = regression()
    model.fit(X, y, epochs=2, verbose=0, log_dir=tmp_path / "run")
    model.fit(X, y, epochs=3, verbose=0, log_dir=tmp_path / "run")
    assert [e for e, _ in ScalarLog(tmp_path / "run" / FILE_NAME).poll().curves()["loss"]] == [1, 2, 3, 4, 5]
    with tfl.Graph().as_default():
        model, X, y = regression()
        model.fit(X, y, epochs=2, verbose=0, checkpoint_dir=tmp_path / "ckpt", log_dir=tmp_path / "resumed")
    with tfl.Graph().as_default():
        model, X, y = regression()
        model.fit(X, y, epochs=4, verbose=0, checkpoint_dir=tmp_path / "ckpt", log_dir=tmp_path / "resumed")
    log = ScalarLog(tmp_path / "resumed" / FILE_NAME).poll()
    assert [e for e, _ in log.curves()["loss"]] == [1, 2, 3, 4] and log.skipped == 0


def test_a_learning_rate_the_graph_computes_is_left_out():
    from tinyflow.board.runlog import learning_rate
    assert learning_rate(tfl.optim.Adam(lr=0.003)) == 0.003
    assert learning_rate(tfl.optim.SGD(tfl.Variable(np.float32(0.5)))) == 0.5
    graph = tfl.get_default_graph()
    size = len(graph.nodes)
    assert learning_rate(tfl.optim.SGD(tfl.Placeholder((), name="lr"))) is None and len(graph.nodes) == size + 1


@pytest.mark.parametrize("blocker", ["a file in place of the folder", "a folder under a file",
                                     "graph.html is a folder", "scalars.jsonl is a folder"])
def test_a_log_folder_that_cannot_be_written_warns_once_and_training_goes_on(tmp_path, blocker, monkeypatch):
    import gc
    import sys
    import warnings
    (tmp_path / "file").write_text("in the way")
    log_dir = {"a file in place of the folder": tmp_path / "file", "a folder under a file": tmp_path / "file" / "run",
               "graph.html is a folder": tmp_path / "page", "scalars.jsonl is a folder": tmp_path / "log"}[blocker]
    if blocker.endswith("is a folder"):
        (log_dir / blocker.split()[0]).mkdir(parents=True)
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)  # errors in __del__ land here
    model, X, y = regression()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(X, y, epochs=3, batch_size=16, verbose=0, log_dir=log_dir)
        gc.collect()
    assert len(history["loss"]) == 3 and history["loss"][-1] < history["loss"][0]
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "could not be written" in messages[0] and "training goes on" in messages[0]
    assert caught[0].filename == __file__  # the warning points at the fit call
    assert unraisable == []


def test_a_log_dir_that_is_not_a_path_raises_board_error():
    model, X, y = regression()
    with pytest.raises(tfl.board.BoardError, match=r"fit\(log_dir=...\) must be a path .*got 123"):
        model.fit(X, y, epochs=1, verbose=0, log_dir=123)
