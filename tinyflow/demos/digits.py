"""`tinyflow demo digits`: a small convnet on the 8x8 handwritten digits."""
import os

import numpy as np

import tinyflow as tfl


def main(epochs=30, batch_size=64, backend=None, seed=0, out="digits-demo", verbose=1):
    """Train conv(1→16, 3x3) → max-pool → dense 64 → 10 on a fixed 80/20 split; print test accuracy."""
    tfl.set_seed(seed)
    X, y = tfl.data.load_digits()
    X = (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    X_train, X_test, y_train, y_test = tfl.data.train_test_split(X, y, test_size=0.2, seed=seed)
    print(f"digits: {len(X_train)} training images, {len(X_test)} test images, "
          f"backend {tfl.backends.get_backend(backend).name}")
    with tfl.Graph().as_default():
        net = tfl.nn.Sequential(tfl.nn.Conv2D(1, 16, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2),
                                tfl.nn.Flatten(), tfl.nn.Linear(16 * 4 * 4, 64, act="relu"), tfl.nn.Linear(64, 10))
        model = tfl.Model(net, "softmax_cross_entropy", tfl.optim.Adam(3e-3), metrics=["accuracy"], backend=backend)
        history = model.fit(X_train, y_train, epochs=epochs, batch_size=batch_size,
                            validation_data=(X_test, y_test), verbose=verbose)
        accuracy = model.evaluate(X_test, y_test)["accuracy"]
        print(f"test accuracy: {accuracy:.4f}")
        os.makedirs(out, exist_ok=True)
        tfl.plot.training_curves(history, os.path.join(out, "curves.png"), title="digits convnet")
        tfl.plot.confusion_matrix(y_test, model.predict(X_test), os.path.join(out, "confusion.png"))
        print(f"wrote {os.path.join(out, 'curves.png')}, {os.path.join(out, 'confusion.png')}")
    return accuracy
