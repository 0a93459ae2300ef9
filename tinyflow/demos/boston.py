"""Boston housing: a linear model and a small MLP trained with tinyflow; prints both test RMSEs."""
import numpy as np

import tinyflow as tfl


def split(X, y, test_fraction, seed):
    """A shuffled train/test split of the rows."""
    order = np.random.default_rng(seed).permutation(len(X))
    n_test = int(round(len(X) * test_fraction))
    return X[order[n_test:]], X[order[:n_test]], y[order[n_test:]], y[order[:n_test]]


def build_model(hidden, seed):
    """Placeholders, prediction and loss of a regression model; hidden=0 means linear."""
    rng = np.random.default_rng(seed)
    x = tfl.Placeholder((None, 13), name="x")
    t = tfl.Placeholder((None, 1), name="t")
    h, width = x, 13
    for i, size in enumerate(hidden):
        with tfl.name_scope(f"hidden{i + 1}"):
            w = tfl.Variable(rng.normal(0, np.sqrt(2 / width), (width, size)).astype(np.float32), name="w")
            b = tfl.Variable(np.zeros(size, np.float32), name="b")
            h, width = tfl.relu(h @ w + b), size
    with tfl.name_scope("output"):
        w = tfl.Variable(rng.normal(0, np.sqrt(1 / width), (width, 1)).astype(np.float32), name="w")
        b = tfl.Variable(np.zeros(1, np.float32), name="b")
        pred = h @ w + b
    return x, t, pred, tfl.nn.mse_loss(pred, t)


def train(name, hidden, data, epochs, batch_size, lr, backend, seed):
    """Train one model with Adam on mini-batches; returns its test RMSE."""
    X_train, X_test, y_train, y_test = data
    with tfl.Graph().as_default() as graph:
        x, t, pred, loss = build_model(hidden, seed)
        step = tfl.optim.Adam(lr=lr).minimize(loss)
        graph.finalize()
        rng = np.random.default_rng(seed)
        with tfl.Session(graph, backend=backend) as sess:
            for epoch in range(1, epochs + 1):
                order = rng.permutation(len(X_train))
                for start in range(0, len(order), batch_size):
                    rows = order[start:start + batch_size]
                    sess.run(step, {x: X_train[rows], t: y_train[rows]})
                if epoch % max(epochs // 5, 1) == 0 or epoch == epochs:
                    train_mse = sess.run(loss, {x: X_train, t: y_train})
                    print(f"  {name:6s} epoch {epoch:4d}/{epochs}  train RMSE {np.sqrt(train_mse):6.3f}")
            test_mse = sess.run(loss, {x: X_test, t: y_test})
    return float(np.sqrt(test_mse))


def main(epochs=200, batch_size=32, backend=None, seed=0):
    """Train both models on a fixed 80/20 split and print their test RMSEs."""
    X, y = tfl.data.load_boston()
    X_train, X_test, y_train, y_test = split(X, y, 0.2, seed)
    mean, std = X_train.mean(0), X_train.std(0)  # statistics of the training rows only
    data = (((X_train - mean) / std).astype(np.float32), ((X_test - mean) / std).astype(np.float32),
            y_train[:, None].astype(np.float32), y_test[:, None].astype(np.float32))
    print(f"Boston housing: {len(X_train)} training rows, {len(X_test)} test rows, backend "
          f"{tfl.backends.get_backend(backend).name}")
    linear = train("linear", (), data, epochs, batch_size, 0.05, backend, seed)
    mlp = train("mlp", (64, 64), data, epochs, batch_size, 0.003, backend, seed)
    print(f"test RMSE  linear: {linear:.3f}   MLP 13-64-64-1: {mlp:.3f}  (in $1000s)")
    return {"linear": linear, "mlp": mlp}
