"""`tinyflow demo boston`: a linear model and an MLP on the Boston housing table, with pictures."""
import os

import numpy as np

import tinyflow as tfl


def load_split(seed):
    """Standardised float32 train/test arrays on a fixed 80/20 split (statistics of the training rows)."""
    X, y = tfl.data.load_boston()
    X_train, X_test, y_train, y_test = tfl.data.train_test_split(X, y, test_size=0.2, seed=seed)
    scaler = tfl.data.Standardizer().fit(X_train)
    as32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    return as32(scaler.transform(X_train)), as32(scaler.transform(X_test)), as32(y_train), as32(y_test)


def train(name, layers, data, epochs, batch_size, lr, backend, verbose):
    """Build a model in its own graph, train it, and return (model, history, test RMSE)."""
    X_train, X_test, y_train, y_test = data
    with tfl.Graph().as_default():
        model = tfl.Model(tfl.nn.Sequential(*layers()), "mse", tfl.optim.Adam(lr), metrics=["rmse"],
                          backend=backend)
        print(f"training the {name} model")
        history = model.fit(X_train, y_train, epochs=epochs, batch_size=batch_size,
                            validation_data=(X_test, y_test), verbose=verbose)
    return model, history, model.evaluate(X_test, y_test)["rmse"]


def export_model(model, seed, folder):
    """Write the trained MLP, standardisation included, as tfl.jit files and ONNX: raw 13 features in, price out."""
    X, y = tfl.data.load_boston()
    X_train, _, _, _ = tfl.data.train_test_split(X, y, test_size=0.2, seed=seed)
    scaler = tfl.data.Standardizer().fit(X_train)
    mean, scale = (np.asarray(v, np.float32) for v in (scaler.mean, scaler.std))
    net = model.net

    def predict_price(features):
        """Standardise the raw features with the training statistics, then run the MLP."""
        return net((features - mean) / scale)

    spec = [tfl.jit.InputSpec([None, 13], "float32", "features")]
    os.makedirs(folder, exist_ok=True)
    with net.graph.as_default():  # the traced program shares the trained Variables
        jit_files = tfl.jit.save(predict_price, os.path.join(folder, "boston_mlp"), input_spec=spec)
        onnx_file = os.path.join(folder, "boston_mlp.onnx")
        tfl.onnx.export(predict_price, onnx_file, input_spec=spec)
    return list(jit_files) + [onnx_file]


def main(epochs=200, batch_size=32, backend=None, seed=0, out="boston-demo", verbose=1, export=None):
    """Train both models, print their test RMSEs, and write the pictures into `out` (and the MLP into `export`)."""
    tfl.set_seed(seed)
    data = load_split(seed)
    print(f"Boston housing: {len(data[0])} training rows, {len(data[1])} test rows, "
          f"backend {tfl.backends.get_backend(backend).name}")
    _, _, linear_rmse = train("linear", lambda: [tfl.nn.Linear(13, 1)], data, epochs, batch_size, 0.05,
                              backend, verbose)
    mlp, history, mlp_rmse = train(
        "MLP 13-64-64-1", lambda: [tfl.nn.Linear(13, 64, act="relu"), tfl.nn.Linear(64, 64, act="relu"),
                                   tfl.nn.Linear(64, 1)], data, epochs, batch_size, 0.003, backend, verbose)
    print(f"test RMSE  linear: {linear_rmse:.3f}   MLP: {mlp_rmse:.3f}  (in $1000s)")

    os.makedirs(out, exist_ok=True)
    written = [tfl.plot.training_curves(history, os.path.join(out, "loss_curves.png"), title="Boston MLP") and
               os.path.join(out, "loss_curves.png")]
    tfl.plot.predicted_vs_actual(data[3], mlp.predict(data[1]), os.path.join(out, "predicted_vs_actual.png"),
                                 title="Boston MLP, test rows", unit=" ($1000s)")
    written.append(os.path.join(out, "predicted_vs_actual.png"))
    if tfl.viz.dot_available():
        written.append(tfl.viz.render(mlp.graph, os.path.join(out, "graph.png")))
    else:
        print("graph picture skipped: graphviz's `dot` is not installed "
              "(sudo apt-get install graphviz, or brew install graphviz)")
    if export:
        written += export_model(mlp, seed, export)
    print("wrote " + ", ".join(written))
    return {"linear": linear_rmse, "mlp": mlp_rmse}
