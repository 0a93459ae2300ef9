"""Model: a network, a loss and an optimizer, trained with `fit` (tinynn's layered API); and its numpy metrics."""
import numpy as np

from .checkpoint import FitCheckpoint, load_variables, save_variables
from .data import batches
from .errors import ArgumentError, GraphError, ShapeError
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


def _aligned(pred, target):
    """Float64 arrays of one shape: (N, 1) predictions against (N,) targets must not broadcast to (N, N)."""
    pred, target = np.asarray(pred, np.float64), np.asarray(target, np.float64)
    if pred.shape != target.shape:
        if pred.size != target.size:
            raise ShapeError(f"predictions of shape {pred.shape} do not match targets of shape {target.shape}")
        pred = pred.reshape(target.shape)
    return pred, target


def mse(pred, target):
    """Mean squared error."""
    pred, target = _aligned(pred, target)
    return float(np.mean((pred - target) ** 2))


def rmse(pred, target):
    """Root mean squared error."""
    return float(np.sqrt(mse(pred, target)))


def mae(pred, target):
    """Mean absolute error."""
    pred, target = _aligned(pred, target)
    return float(np.mean(np.abs(pred - target)))


def accuracy(pred, target):
    """Share of correct classes: argmax of (N, C) scores, or logits > 0 for one binary column."""
    pred, target = np.asarray(pred), np.asarray(target)
    two_columns_or_more = pred.ndim == 2 and pred.shape[1] > 1
    classes = pred.argmax(axis=1) if two_columns_or_more else (pred.reshape(len(pred)) > 0).astype(np.int64)
    return float(np.mean(classes == target.reshape(len(target))))


METRICS = {"mse": mse, "rmse": rmse, "mae": mae, "accuracy": accuracy}


def get_metric(name):
    """A metric function by name (or a callable `fn(pred, target) -> float` as is)."""
    if callable(name):
        return name
    try:
        return METRICS[name]
    except KeyError:
        raise ArgumentError(f"unknown metric {name!r}; known metrics: {sorted(METRICS)}") from None


class History:
    """Per-epoch values recorded by `fit`: `history["loss"]`, `history["val_rmse"]`, ..."""

    def __init__(self):
        self.history, self.epochs = {}, []

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
            raise ArgumentError(f"EarlyStopping monitors {self.monitor!r} but fit records {sorted(logs)}; "
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
    """Train, evaluate and use a network (a Layer or any function node -> node) with a loss (a name of LOSSES or
    `fn(pred, target) -> node`): the graph is built on the first call, from the shapes of the data."""

    def __init__(self, net, loss, optimizer, metrics=(), backend=None):
        self.net, self.optimizer, self.backend = net, optimizer, backend
        self.loss_fn = LOSSES.get(loss, loss) if isinstance(loss, str) else loss
        if not callable(self.loss_fn):
            raise ArgumentError(f"unknown loss {loss!r}; known losses: {sorted(LOSSES)}")
        self.metrics = {m if isinstance(m, str) else m.__name__: get_metric(m) for m in metrics}
        self.graph = net.graph if isinstance(net, Layer) else None
        self.session = None

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

    def _ensure_built(self, X, y, distributed=False):
        from .distributed import DistributedError, DistributedOptimizer
        if self.session is None:
            if distributed and not isinstance(self.optimizer, DistributedOptimizer):
                self.optimizer = DistributedOptimizer(self.optimizer)  # average gradients over processes
            self._build(np.asarray(X), np.asarray(y))
        if distributed and not isinstance(self.optimizer, DistributedOptimizer):
            raise DistributedError("fit(distributed=True) on a Model built for one process: pass distributed=True "
                                   "to its first fit, or give the Model a tfl.distributed.DistributedOptimizer")

    @property
    def variables(self):
        """Every Variable the model's graph holds (weights, moving statistics, optimizer slots)."""
        return self.graph.variables()

    def fit(self, X, y, epochs=1, batch_size=32, validation_data=None, shuffle=True, verbose=1,
            early_stopping=None, distributed=False, checkpoint_dir=None, log_dir=None):
        """Train for `epochs` over mini-batches; returns a History. distributed=True: data parallelism over MPI, rank
        0 showing progress and writing files; checkpoint_dir: save after every epoch and resume (`epochs` is the
        total); log_dir: the scalar log and explorer page `tinyflow board` shows."""
        from .distributed.training import DataParallel
        X, y = np.asarray(X), np.asarray(y)
        parallel = DataParallel(distributed)
        self._ensure_built(X, y, distributed)
        history, seed, first_epoch = History(), parallel.agree(next_seed()), 1
        checkpoint = FitCheckpoint(checkpoint_dir, self.graph) if checkpoint_dir is not None else None
        state = parallel.agree(checkpoint.load_state() if checkpoint is not None and parallel.is_chief else None)
        if state is not None:
            checkpoint.restore_random_states(state)
            seed, first_epoch = state["seed"], state["epoch"] + 1
            history.history, history.epochs = state["history"], state["history_epochs"]
        if distributed:
            from .distributed import broadcast_variables
            broadcast_variables(self.graph)  # every process starts from rank 0's (restored) weights
        if early_stopping is not None:
            early_stopping.start()
        steps_per_epoch = -(-len(parallel.shard(np.arange(len(X)))) // batch_size)
        progress = Progress(epochs, steps_per_epoch, verbose if parallel.is_chief else 0, first_epoch=first_epoch)
        watchers = [progress]  # each sees start_epoch(epoch), end_epoch(epoch, logs) and close()
        if log_dir is not None and parallel.is_chief:
            from .board.runlog import FitLog
            watchers.append(FitLog(log_dir, self, X, y, first_epoch))
        for epoch in range(first_epoch, epochs + 1):
            for watcher in watchers:
                watcher.start_epoch(epoch)
            total, seen = 0.0, 0
            rows = parallel.shard(np.random.default_rng(seed + epoch).permutation(len(X)) if shuffle
                                  else np.arange(len(X)))
            for xb, yb in batches(X[rows], y[rows], batch_size=batch_size, shuffle=False):
                _, loss = self.session.run([self.train_op, self.loss],
                                           {self.x: xb, self.target: yb, self.training: True})
                total, seen = total + float(loss) * len(xb), seen + len(xb)
                progress.batch(total / seen)
            total, seen = parallel.total([total, seen])
            parallel.average_statistics(self.graph)
            logs = {"loss": total / seen, **parallel.mean_logs(self._epoch_metrics(X, y, validation_data, parallel))}
            history.record(epoch, logs)
            for watcher in watchers:
                watcher.end_epoch(epoch, logs)
            if checkpoint is not None and parallel.is_chief:
                checkpoint.save(epoch, seed, history)
            if early_stopping is not None and parallel.agree(early_stopping.should_stop(epoch, logs, self.variables)):
                break
        if early_stopping is not None:
            early_stopping.finish(self.variables)
        for watcher in watchers:  # the log's page shows the weights fit leaves (the best epoch's, when stopped)
            watcher.close()
        return history

    def _epoch_metrics(self, X, y, validation_data, parallel):
        """Metrics on the training data and validation values, on this process's shard of each."""
        logs = {}
        if self.metrics:
            rows = parallel.shard(np.arange(len(X)))
            pred = self.predict(X[rows])
            logs.update({name: fn(pred, y[rows]) for name, fn in self.metrics.items()})
        if validation_data is not None:
            X_val, y_val = (np.asarray(a) for a in validation_data)
            rows = parallel.shard(np.arange(len(X_val)))
            logs.update({f"val_{k}": v for k, v in self.evaluate(X_val[rows], y_val[rows]).items()})
        return logs

    def predict(self, X, batch_size=1024):
        """The network's outputs for X, in evaluation mode (no dropout, moving statistics)."""
        if self.session is None:
            raise GraphError("Model.predict before the model was built: call model.fit(X, y) or "
                             "model.load(path, X, y) first")
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
        pred = self.predict(X, batch_size) if self.metrics else None
        return {"loss": total / max(len(X), 1), **{name: fn(pred, y) for name, fn in self.metrics.items()}}

    def save(self, path):
        """Write every variable (weights, moving statistics, optimizer state) to a .npz file."""
        if self.session is None:
            raise GraphError("Model.save: nothing to save, the model has not been built; call model.fit(X, y) first")
        return save_variables(path, self.graph)

    def load(self, path, X=None, y=None):
        """Restore variables saved by `save`; an unbuilt model needs example data (X, y) to build first."""
        if self.session is None:
            if X is None or y is None:
                raise GraphError("Model.load into an unbuilt model needs example data to build its graph from: "
                                 "pass model.load(path, X, y)")
            self._ensure_built(X, y)
        load_variables(path, self.graph)
        return self
