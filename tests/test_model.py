"""Model.fit and friends: convergence, reproducibility, save/load, early stopping, metrics, plots."""
import numpy as np
import pytest

import tinyflow as tfl


def boston(seed=0):
    X, y = tfl.data.load_boston()
    X_tr, X_te, y_tr, y_te = tfl.data.train_test_split(X, y, test_size=0.2, seed=seed)
    s = tfl.data.Standardizer().fit(X_tr)
    return [np.asarray(a, np.float32) for a in (s.transform(X_tr), s.transform(X_te), y_tr, y_te)]


def mlp_model(dropout=0.0):
    layers = [tfl.nn.Linear(13, 32, act="relu"), tfl.nn.BatchNorm1d(32)]
    if dropout:
        layers.append(tfl.nn.Dropout(dropout))
    layers.append(tfl.nn.Linear(32, 1))
    return tfl.Model(tfl.nn.Sequential(*layers), "mse", tfl.optim.Adam(1e-2), metrics=["rmse", "mae"])


def test_fit_returns_a_history_and_learns():
    X_tr, X_te, y_tr, y_te = boston()
    model = mlp_model()
    history = model.fit(X_tr, y_tr, epochs=15, batch_size=32, validation_data=(X_te, y_te), verbose=0)
    assert set(history.history) == {"loss", "rmse", "mae", "val_loss", "val_rmse", "val_mae"}
    assert history.epochs == list(range(1, 16)) and history["loss"][-1] < history["loss"][0] / 5
    assert model.evaluate(X_te, y_te)["rmse"] < 6.0
    assert model.predict(X_te).shape == (len(X_te), 1)


def test_fit_is_reproducible_bit_for_bit_with_the_same_seed():
    data = boston()
    results = []
    for _ in range(2):
        tfl.set_seed(123)
        with tfl.Graph().as_default():
            model = mlp_model(dropout=0.2)
            history = model.fit(data[0], data[2], epochs=3, batch_size=16, verbose=0)
            results.append((history["loss"], model.predict(data[1])))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_save_and_load_give_identical_predictions(tmp_path):
    X_tr, X_te, y_tr, _ = boston()
    model = mlp_model()
    model.fit(X_tr, y_tr, epochs=3, verbose=0)
    path = model.save(tmp_path / "model.npz")
    expected = model.predict(X_te)
    with tfl.Graph().as_default():
        restored = mlp_model().load(path, X_tr[:2], y_tr[:2])
        np.testing.assert_array_equal(restored.predict(X_te), expected)


def test_early_stopping_restores_the_best_epoch():
    X_tr, X_te, y_tr, y_te = boston()
    model = tfl.Model(tfl.nn.Sequential(tfl.nn.Linear(13, 1)), "mse", tfl.optim.SGD(0.3), metrics=["rmse"])
    stopper = tfl.EarlyStopping(monitor="val_rmse", patience=2)
    history = model.fit(X_tr, y_tr, epochs=200, batch_size=404, validation_data=(X_te, y_te), verbose=0,
                        early_stopping=stopper)
    assert len(history.epochs) < 200
    best = int(np.argmin(history["val_rmse"]))
    assert model.evaluate(X_te, y_te)["rmse"] == pytest.approx(history["val_rmse"][best], rel=1e-6)
    with pytest.raises(ValueError, match="monitors 'val_nope'"):
        model.fit(X_tr, y_tr, epochs=1, verbose=0, early_stopping=tfl.EarlyStopping("val_nope"))


def test_classification_metrics_and_bad_names():
    assert tfl.get_metric("accuracy")(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1])) == 0.5
    assert tfl.get_metric("rmse")(np.array([[1.0], [3.0]]), np.array([1.0, 1.0])) == pytest.approx(np.sqrt(2))
    with pytest.raises(ValueError, match="unknown metric"):
        tfl.get_metric("f7")
    with pytest.raises(ValueError, match="unknown loss"):
        tfl.Model(tfl.nn.Linear(1, 1), "hinge-ish", tfl.optim.SGD(0.1))


def test_plots_write_non_empty_pngs(tmp_path):
    X_tr, X_te, y_tr, y_te = boston()
    model = mlp_model()
    history = model.fit(X_tr, y_tr, epochs=2, validation_data=(X_te, y_te), verbose=0)
    files = [tmp_path / name for name in ("curves.png", "scatter.png", "confusion.png")]
    figures = [tfl.plot.training_curves(history, files[0]),
               tfl.plot.predicted_vs_actual(y_te, model.predict(X_te), files[1]),
               tfl.plot.confusion_matrix(np.array([0, 1, 2, 1]), np.array([0, 2, 2, 1]), files[2])]
    for fig, path in zip(figures, files):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        assert fig.axes


@pytest.mark.slow
def test_digits_demo_reaches_97_percent(tmp_path, capsys):
    from tinyflow.demos import digits
    accuracy = digits(verbose=0, out=str(tmp_path))
    assert accuracy >= 0.97
    assert (tmp_path / "confusion.png").stat().st_size > 5000


@pytest.mark.slow
def test_boston_demo_mlp_beats_linear_and_writes_its_files(tmp_path, capsys):
    from tinyflow.cli import main
    assert main(["demo", "boston", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "test RMSE  linear:" in out
    linear, mlp = (float(v) for v in out.split("linear:")[1].split("(in")[0].replace("MLP:", "").split())
    assert mlp < linear
    expected = {"loss_curves.png", "predicted_vs_actual.png"} | ({"graph.png"} if tfl.viz.dot_available() else set())
    assert expected <= {p.name for p in tmp_path.iterdir()}


def test_a_demo_with_an_unknown_backend_says_so_without_a_traceback(capsys):
    from tinyflow.cli import main
    assert main(["demo", "boston", "--backend", "nosuch", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown backend 'nosuch'") and "Traceback" not in err


def test_using_an_unbuilt_model_raises_a_graph_error_saying_how_to_build_it(tmp_path):
    model = tfl.Model(tfl.nn.Linear(2, 1), "mse", tfl.optim.SGD(0.1))
    with pytest.raises(tfl.GraphError, match=r"model.fit\(X, y\)"):
        model.predict(np.zeros((3, 2), np.float32))
    with pytest.raises(tfl.GraphError, match="nothing to save"):
        model.save(tmp_path / "weights.npz")
    with pytest.raises(tfl.GraphError, match=r"model.load\(path, X, y\)"):
        model.load(tmp_path / "weights.npz")


def test_bad_model_names_and_mismatched_metric_inputs_raise_tinyflow_errors():
    with pytest.raises(tfl.ArgumentError, match="unknown metric 'f7'"):
        tfl.get_metric("f7")
    with pytest.raises(tfl.ArgumentError, match="unknown loss"):
        tfl.Model(tfl.nn.Linear(1, 1), "hinge-ish", tfl.optim.SGD(0.1))
    with pytest.raises(tfl.ShapeError, match=r"predictions of shape \(3,\) do not match targets of shape \(2,\)"):
        tfl.get_metric("mse")(np.zeros(3), np.zeros(2))
