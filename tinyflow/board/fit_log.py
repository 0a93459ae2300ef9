"""What `Model.fit(..., log_dir=...)` writes: each epoch's logs, learning rate (`lr`) and duration (`epoch_time`),
and the explorer page of the model's loss on the first batch, at the start and again with the trained weights."""
import os
import time
import warnings

import numpy as np

from ..errors import TinyflowError
from ..nodes import Constant, Node, Variable
from .runlog import GRAPH_PAGE, ScalarWriter, fs_path

EXAMPLES_SHOWN = 32  # rows of the first batch the page's values are computed on


class FitLog:
    """One fit's log, a watcher of `fit`; a part that cannot be written (a file in the way, a full disk) never stops
    training: its first failure warns once, and that part (scalars or page) is left out from then on."""

    def __init__(self, log_dir, model, X, y, first_epoch):
        self.log_dir, self.model, self.warned, self._started = fs_path(log_dir, "fit(log_dir=...)"), model, False, None
        self.feed = {model.x: X[:EXAMPLES_SHOWN], model.target: y[:EXAMPLES_SHOWN]}
        self.writer = self._attempt("the scalar log", lambda: ScalarWriter(self.log_dir))
        # a second fit on the same log continues its curves; a resumed fit numbers epochs itself
        self.offset = 0 if first_epoch > 1 or self.writer is None else self.writer.last_epoch
        if self.writer is not None:
            self.writer = self._attempt("the scalar log", lambda: self.writer.header(first_epoch + self.offset))
        self.page = self._attempt("the model's graph page", self._draw)  # the untrained model's values

    def _attempt(self, what, step):
        """step()'s result, or None when it fails: the first failure warns (at the fit call), later ones not."""
        try:
            return step()
        except (OSError, TinyflowError) as err:
            if not self.warned:
                warnings.warn(f"fit(log_dir={self.log_dir!r}): {what} could not be written ({err}); training goes "
                              "on without it", RuntimeWarning, stacklevel=4)  # _attempt, a FitLog method, fit
            self.warned = True
            return None

    def _draw(self):
        """Write the explorer page of the model's loss (returns the page)."""
        from ..viz.explorer import explore
        return explore(self.model.loss, self.feed, os.path.join(self.log_dir, GRAPH_PAGE), backend=self.model.backend,
                       title=f"model graph ({os.path.basename(os.path.normpath(self.log_dir))})")

    def start_epoch(self, epoch):
        """Note when the epoch starts."""
        self._started = time.perf_counter()

    def end_epoch(self, epoch, logs):
        """Append this epoch's logs, learning rate and duration."""
        scalars = dict(logs, lr=learning_rate(self.model.optimizer), epoch_time=time.perf_counter() - self._started)
        if self.writer is not None:
            self.writer = self._attempt("the scalar log", lambda: self.writer.write(epoch + self.offset, scalars))

    def close(self):
        """Rewrite the page with the weights training left and close the log."""
        if self.page is not None:
            self._attempt("the model's graph page", self._draw)
        if self.writer is not None:
            self._attempt("the scalar log", self.writer.close)


def learning_rate(optimizer):
    """The optimizer's learning rate as a number, or None when it is computed by the graph."""
    lr = getattr(optimizer, "lr", None)
    if isinstance(lr, Node):
        lr = lr.value if isinstance(lr, (Variable, Constant)) else None  # other nodes compute it at run time
    try:
        array = np.asarray(lr, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return float(array) if lr is not None and array.size == 1 else None
