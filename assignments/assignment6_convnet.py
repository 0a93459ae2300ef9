"""Assignment 6 — a convnet in graph mode, from the convolution up.

First the arithmetic of a convolution (its output size, and a slow but obvious numpy version
checked against tinyflow's conv2d), then a small network of tinyflow layers, its training graph
(loss, optimizer, accuracy: all graph nodes) and a mini-batch training loop with a Session, on
the 8×8 digits shipped with tinyflow. Check yourself with `pytest tests -m assignment6`.
"""
import numpy as np

import tinyflow as tfl


def conv_output_size(n, kernel, stride=1, padding=0):
    """Output length of a convolution along an axis of length n."""
    # BEGIN SOLUTION
    # HINT: (n + 2·padding - kernel) // stride + 1
    return (n + 2 * padding - kernel) // stride + 1
    # END SOLUTION


def conv2d_naive(x, w, stride=1, padding=0):
    """Cross-correlation, NCHW: x (N, C, H, W), w (F, C, kH, kW) -> (N, F, H', W'), with loops, in float64."""
    # BEGIN SOLUTION
    # HINT: pad x with np.pad on the two spatial axes only; for each output row i and column j take the window
    #   x[:, :, i*stride:i*stride+kH, j*stride:j*stride+kW] and contract it with w over (C, kH, kW)
    #   (np.tensordot with axes=([1, 2, 3], [1, 2, 3]))
    n, _, height, width = x.shape
    filters, _, kh, kw = w.shape
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    rows, cols = conv_output_size(height, kh, stride, padding), conv_output_size(width, kw, stride, padding)
    out = np.zeros((n, filters, rows, cols))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            window = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(window, w, axes=([1, 2, 3], [1, 2, 3]))
    return out
    # END SOLUTION


def build_convnet():
    """Digits (N, 1, 8, 8) -> 10 logits: Conv2D(1→8, 3×3, padding 1, relu), MaxPool2D(2), Flatten, Linear(→10)."""
    # BEGIN SOLUTION
    # HINT: tfl.nn.Sequential of tfl.nn.Conv2D(1, 8, 3, padding=1, act="relu"), tfl.nn.MaxPool2D(2),
    #   tfl.nn.Flatten() and tfl.nn.Linear(8 * 4 * 4, 10): work out why 8 * 4 * 4 with conv_output_size
    return tfl.nn.Sequential(tfl.nn.Conv2D(1, 8, 3, padding=1, act="relu", name="conv"),
                             tfl.nn.MaxPool2D(2, name="pool"), tfl.nn.Flatten(name="flatten"),
                             tfl.nn.Linear(8 * 4 * 4, 10, name="logits"))
    # END SOLUTION


def build_training_graph(net, lr=0.01):
    """The graph to train `net`: a dict with the placeholders "images" (None, 1, 8, 8) float32 and "labels"
    (None,) int64, and the nodes "logits", "loss" (mean softmax cross-entropy), "train" (Adam(lr) step)
    and "accuracy" (fraction of argmax(logits) equal to the labels)."""
    # BEGIN SOLUTION
    # HINT: images = tfl.Placeholder((None, 1, 8, 8), "float32", name="images"); logits = net(images);
    #   tfl.nn.softmax_cross_entropy(logits, labels); tfl.optim.Adam(lr).minimize(loss); accuracy from
    #   tfl.equal(tfl.argmax(logits, axis=1), labels) cast to float32 and averaged
    images = tfl.Placeholder((None, 1, 8, 8), "float32", name="images")
    labels = tfl.Placeholder((None,), "int64", name="labels")
    logits = net(images)
    loss = tfl.nn.softmax_cross_entropy(logits, labels)
    train = tfl.optim.Adam(lr).minimize(loss)
    accuracy = tfl.reduce_mean(tfl.cast(tfl.equal(tfl.argmax(logits, axis=1), labels), "float32"))
    return dict(images=images, labels=labels, logits=logits, loss=loss, train=train, accuracy=accuracy)
    # END SOLUTION


def train(parts, X, y, epochs=5, batch_size=32, seed=0):
    """Mini-batch training: each epoch visits the rows of X in a new random order (np.random.default_rng(seed)),
    in batches of `batch_size`, running parts["train"]. Returns the mean training loss of each epoch."""
    # BEGIN SOLUTION
    # HINT: one tfl.Session for the whole loop; rng.permutation(len(X)) per epoch; sess.run([parts["train"],
    #   parts["loss"]], {parts["images"]: X[idx], parts["labels"]: y[idx]}) per batch
    rng = np.random.default_rng(seed)
    history = []
    with tfl.Session() as sess:
        for _ in range(epochs):
            order, losses = rng.permutation(len(X)), []
            for start in range(0, len(X), batch_size):
                batch = order[start:start + batch_size]
                _, loss = sess.run([parts["train"], parts["loss"]],
                                   {parts["images"]: X[batch], parts["labels"]: y[batch]})
                losses.append(loss)
            history.append(float(np.mean(losses)))
    return history
    # END SOLUTION
