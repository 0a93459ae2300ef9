"""Demos runnable from the command line: `tinyflow demo boston`."""
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
