"""Model: a network, a loss and an optimizer, trained with `fit` (the layered API of tinynn)."""
import numpy as np

from .checkpoint import load_variables, save_variables
from .data.helpers import batches
from .metrics import get_metric
from .nn.layer import Layer, training_flag
from .nn.losses import mse_loss, sigmoid_cross_entropy, softmax_cross_entropy
from .nodes import Placeholder
from .ops.array_ops import reshape
from .ops.state_ops import group
from .progress import Progress
from .random import next_seed
from .session import Session

LOSSES = {"mse": mse_loss, "softmax_cross_entropy": softmax_cross_entropy,
          "cross_entropy": softmax_cross_entropy, "sigmoid_cross_entropy": sigmoid_cross_entropy}


class History:
    """Per-epoch values recorded by `fit`: `history["loss"]`, `history["val_rmse"]`, ..."""

    def __init__(self):
        self.history = {}
        self.epochs = []

    def record(self, epoch, values):
        """Append one epoch's values."""
        self.epochs.append(epoch)
        for key, value in values.items():
            self.history.setdefault(key, []).append(value)

    def __getitem__(self, key):
        return self.history[key]

    def __repr__(self):
        last = {k: round(v[-1], 4) for k, v in self.history.items()}
        return f"<History {len(self.epochs)} epochs, last {last}>"


class EarlyStopping:
    """Stop `fit` when `monitor` has not improved by `min_delta` for `patience` epochs; restore the best weights."""

    def __init__(self, monitor="val_loss", patience=10, min_delta=0.0, mode="auto", restore_best=True):
        self.monitor, self.patience, self.min_delta, self.restore_best = monitor, patience, min_delta, restore_best
        higher_is_better = mode == "max" or (mode == "auto" and "accuracy" in monitor)
        self.sign = -1.0 if higher_is_better else 1.0

    def start(self):
        """Reset before a fit."""
        self.best, self.best_epoch, self.best_values, self.wait = np.inf, None, None, 0

    def should_stop(self, epoch, logs, variables):
        """Record this epoch; True when training should stop."""
        if self.monitor not in logs:
            raise ValueError(f"EarlyStopping monitors {self.monitor!r} but fit records {sorted(logs)}; "
                             "pass validation_data for val_* values")
        score = self.sign * logs[self.monitor]
        if score < self.best - self.min_delta:
            self.best, self.best_epoch, self.wait = score, epoch, 0
            self.best_values = [v.value.copy() for v in variables]
            return False
        self.wait += 1
        return self.wait >= self.patience

    def finish(self, variables):
        """Put back the weights of the best epoch."""
        if self.restore_best and self.best_values is not None:
            for var, value in zip(variables, self.best_values):
                var.value = value


class Model:
    """Train, evaluate and use a network: `Model(net, loss, optimizer).fit(X, y, epochs, batch_size)`.

    `net` is a Layer (or any function node -> node); `loss` a name ("mse",
    "softmax_cross_entropy", "sigmoid_cross_entropy") or `fn(pred, target) -> node`.
    The graph is built on the first call, from the shapes of the data.
    """

    def __init__(self, net, loss, optimizer, metrics=(), backend=None):
        self.net, self.optimizer, self.backend = net, optimizer, backend
        self.loss_fn = LOSSES.get(loss, loss) if isinstance(loss, str) else loss
        if not callable(self.loss_fn):
            raise ValueError(f"unknown loss {loss!r}; known losses: {sorted(LOSSES)}")
        self.metrics = {m if isinstance(m, str) else m.__name__: get_metric(m) for m in metrics}
        self.graph = net.graph if isinstance(net, Layer) else None
        self.session = None

    # ------------------------------------------------------------ building
    def _build(self, X, y):
        from .graph import get_default_graph
        self.graph = self.graph or get_default_graph()
        with self.graph.as_default():
            x_dtype = X.dtype if X.dtype.kind == "f" else np.dtype(np.float32)
            self.x = Placeholder((None,) + X.shape[1:], x_dtype, name="x")
            self.pred = self.net(self.x)
            classification = self.loss_fn is softmax_cross_entropy
            y_dtype = np.int64 if classification else self.pred.dtype
            self.target = Placeholder((None,) + y.shape[1:], y_dtype, name="target")
            target = self.target
            if not classification and len(y.shape) == 1 and self.pred.shape[1:] == (1,):
                target = reshape(target, (-1, 1))  # a vector of targets against one output column
            self.loss = self.loss_fn(self.pred, target)
            variables = self.net.parameters() if isinstance(self.net, Layer) else None
            step = self.optimizer.minimize(self.loss, var_list=variables)
            self.train_op = group(step, *self.graph.update_ops, name="train_step")
            self.training = training_flag(self.graph)
        self.session = Session(self.graph, backend=self.backend)

    def _ensure_built(self, X, y):
        if self.session is None:
            self._build(np.asarray(X), np.asarray(y))

    @property
    def variables(self):
        """Every Variable the model's graph holds (weights, moving statistics, optimizer slots)."""
        return self.graph.variables()

    # ------------------------------------------------------------ training
    def fit(self, X, y, epochs=1, batch_size=32, validation_data=None, shuffle=True, verbose=1,
            early_stopping=None):
        """Train for `epochs` over mini-batches; returns a History of per-epoch loss and metrics."""
        X, y = np.asarray(X), np.asarray(y)
        self._ensure_built(X, y)
        history, seed = History(), next_seed()
        if early_stopping is not None:
            early_stopping.start()
        steps_per_epoch = -(-len(X) // batch_size)
        progress = Progress(epochs, steps_per_epoch, verbose)
        for epoch in range(1, epochs + 1):
            total, seen = 0.0, 0
            progress.start_epoch(epoch)
            for xb, yb in batches(X, y, batch_size=batch_size, shuffle=shuffle, seed=seed + epoch):
                _, loss = self.session.run([self.train_op, self.loss],
                                           {self.x: xb, self.target: yb, self.training: True})
                total, seen = total + float(loss) * len(xb), seen + len(xb)
                progress.batch(total / seen)
            logs = {"loss": total / seen}
            if self.metrics:
                logs.update(self._metric_values(self.predict(X), y))
            if validation_data is not None:
                logs.update({f"val_{k}": v for k, v in self.evaluate(*validation_data).items()})
            history.record(epoch, logs)
            progress.end_epoch(epoch, logs)
            if early_stopping is not None and early_stopping.should_stop(epoch, logs, self.variables):
                break
        progress.close()
        if early_stopping is not None:
            early_stopping.finish(self.variables)
        return history

    def _metric_values(self, pred, y):
        return {name: fn(pred, y) for name, fn in self.metrics.items()}

    # ------------------------------------------------------------ using
    def predict(self, X, batch_size=1024):
        """The network's outputs for X, in evaluation mode (no dropout, moving statistics)."""
        if self.session is None:
            raise RuntimeError("predict before fit: train the model (or load it after one fit) first")
        X = np.asarray(X)
        outputs = [self.session.run(self.pred, {self.x: X[i:i + batch_size]}) for i in range(0, len(X), batch_size)]
        return np.concatenate(outputs) if outputs else np.empty((0,) + self.pred.shape[1:])

    def evaluate(self, X, y, batch_size=1024):
        """{"loss": ..., metric: ...} on (X, y) in evaluation mode."""
        X, y = np.asarray(X), np.asarray(y)
        self._ensure_built(X, y)
        total = 0.0
        for i in range(0, len(X), batch_size):
            rows = slice(i, i + batch_size)
            total += float(self.session.run(self.loss, {self.x: X[rows], self.target: y[rows]})) * len(X[rows])
        results = {"loss": total / max(len(X), 1)}
        results.update(self._metric_values(self.predict(X, batch_size), y))
        return results

    def save(self, path):
        """Write every variable (weights, moving statistics, optimizer state) to a .npz file."""
        if self.session is None:
            raise RuntimeError("nothing to save: the model has not been built (fit it first)")
        return save_variables(path, self.graph)

    def load(self, path, X=None, y=None):
        """Restore variables saved by `save`; an unbuilt model needs example data (X, y) to build first."""
        if self.session is None:
            if X is None or y is None:
                raise RuntimeError("load into an unbuilt model needs example X and y to build its graph")
            self._ensure_built(np.asarray(X), np.asarray(y))
        load_variables(path, self.graph)
        return self
