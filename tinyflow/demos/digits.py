"""`tinyflow demo digits`: a small convnet on the 8x8 handwritten digits."""
import os

import numpy as np

import tinyflow as tfl
from . import train


def main(epochs=30, batch_size=64, backend=None, seed=0, out="digits-demo", verbose=1):
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
