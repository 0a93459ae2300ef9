"""Demos runnable from the command line: `tinyflow demo boston` (a linear model and an MLP on the Boston
housing table, with pictures) and `tinyflow demo digits` (a small convnet on the 8x8 handwritten digits)."""
import os

import numpy as np

import tinyflow as tfl


def train(name, layers, loss, metric, lr, data, backend, **fit):
    """A Model of `layers()` in a graph of its own, trained with Adam(lr) on data: (model, history, test `metric`)."""
    X_train, X_test, y_train, y_test = data
    print(f"training the {name} on {len(X_train)} rows (testing on {len(X_test)}), backend "
          f"{tfl.backends.get_backend(backend).name}")
    with tfl.Graph().as_default():
        model = tfl.Model(tfl.nn.Sequential(*layers()), loss, tfl.optim.Adam(lr), metrics=[metric], backend=backend)
        history = model.fit(X_train, y_train, validation_data=(X_test, y_test), **fit)
    return model, history, model.evaluate(X_test, y_test)[metric]


def export_model(net, scaler, folder):
    """Write the trained MLP, standardisation included, as tfl.jit files and ONNX: raw 13 features in, price out."""
    mean, scale = (np.asarray(v, np.float32) for v in (scaler.mean, scaler.std))

    def predict_price(features):
        """Standardise the raw features with the training statistics, then run the MLP."""
        return net((features - mean) / scale)

    spec = [tfl.jit.InputSpec([None, 13], "float32", "features")]
    with net.graph.as_default():  # the traced program shares the trained Variables (jit.save makes the folder)
        jit_files = tfl.jit.save(predict_price, os.path.join(folder, "boston_mlp"), input_spec=spec)
        onnx_file = os.path.join(folder, "boston_mlp.onnx")
        tfl.onnx.export(predict_price, onnx_file, input_spec=spec)
    return list(jit_files) + [onnx_file]


def boston(epochs=200, batch_size=32, backend=None, seed=0, out="boston-demo", verbose=1, export=None):
    """Train both models, print their test RMSEs, and write the pictures into `out` (and the MLP into `export`)."""
    tfl.set_seed(seed)
    X_train, X_test, y_train, y_test = tfl.data.train_test_split(*tfl.data.load_boston(), test_size=0.2, seed=seed)
    scaler = tfl.data.Standardizer().fit(X_train)  # the statistics of the training rows
    data = [np.asarray(a, np.float32) for a in (scaler.transform(X_train), scaler.transform(X_test), y_train, y_test)]
    fit = dict(epochs=epochs, batch_size=batch_size, verbose=verbose)
    linear_rmse = train("linear model", lambda: [tfl.nn.Linear(13, 1)], "mse", "rmse", 0.05, data, backend, **fit)[2]
    mlp, history, mlp_rmse = train("MLP 13-64-64-1 model", lambda: [
        tfl.nn.Linear(13, 64, act="relu"), tfl.nn.Linear(64, 64, act="relu"), tfl.nn.Linear(64, 1)], "mse", "rmse",
        0.003, data, backend, **fit)
    print(f"test RMSE  linear: {linear_rmse:.3f}   MLP: {mlp_rmse:.3f}  (in $1000s)")
    os.makedirs(out, exist_ok=True)
    written = [os.path.join(out, "loss_curves.png"), os.path.join(out, "predicted_vs_actual.png")]
    tfl.plot.training_curves(history, written[0], title="Boston MLP")
    tfl.plot.predicted_vs_actual(data[3], mlp.predict(data[1]), written[1], title="Boston MLP, test rows",
                                 unit=" ($1000s)")
    if tfl.viz.dot_available():
        written.append(tfl.viz.render(mlp.graph, os.path.join(out, "graph.png")))
    else:
        print("graph picture skipped: graphviz's `dot` is not installed "
              "(sudo apt-get install graphviz, or brew install graphviz)")
    if export:
        written += export_model(mlp.net, scaler, export)
    print("wrote " + ", ".join(written))
    return {"linear": linear_rmse, "mlp": mlp_rmse}


def digits(epochs=30, batch_size=64, backend=None, seed=0, out="digits-demo", verbose=1):
    """Train conv(1→16, 3x3) → max-pool → dense 64 → 10 on a fixed 80/20 split; print test accuracy."""
    tfl.set_seed(seed)
    X, y = tfl.data.load_digits()
    data = tfl.data.train_test_split((X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), y, test_size=0.2, seed=seed)
    model, history, accuracy = train("convnet", lambda: [
        tfl.nn.Conv2D(1, 16, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2), tfl.nn.Flatten(),
        tfl.nn.Linear(16 * 4 * 4, 64, act="relu"), tfl.nn.Linear(64, 10)], "softmax_cross_entropy", "accuracy", 3e-3,
        data, backend, epochs=epochs, batch_size=batch_size, verbose=verbose)
    print(f"test accuracy: {accuracy:.4f}")
    os.makedirs(out, exist_ok=True)
    curves, confusion = os.path.join(out, "curves.png"), os.path.join(out, "confusion.png")
    tfl.plot.training_curves(history, curves, title="digits convnet")
    tfl.plot.confusion_matrix(data[3], model.predict(data[1]), confusion)
    print(f"wrote {curves}, {confusion}")
    return accuracy
