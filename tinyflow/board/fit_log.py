"""What `Model.fit(..., log_dir=...)` writes: the scalar log of each epoch and the explorer page of the model.

The scalars are the epoch's logs (loss, metrics, validation values), the learning rate (`lr`)
when it is a number or a Variable, and the seconds the epoch took (`epoch_time`). The page
(`graph.html`, see tfl.viz.explore) shows the model's loss graph with the values and gradients
of the first batch; it is written when training starts and again with the trained weights at the end.
A log that cannot be written (a file in the way, a full disk) never stops training: the first failure
warns once, and the part that failed (the scalars or the page) is left out from then on.
"""
import time
import warnings

import numpy as np

from ..errors import TinyflowError
from .runlog import ScalarWriter

GRAPH_PAGE = "graph.html"
EXAMPLES_SHOWN = 32  # rows of the first batch the page's values are computed on


class FitLog:
    """One fit's log: `start()`, then `epoch()` per epoch, then `finish()`."""

    def __init__(self, log_dir, model, X, y, resumed):
        self.log_dir, self.model = log_dir, model
        self.writer, self.page, self.warned = None, True, False
        try:
            self.writer = ScalarWriter(log_dir)
        except OSError as err:
            self._warn("the scalar log", err)
        # a second fit on the same log continues its curves; a resumed fit numbers epochs itself
        self.offset = 0 if resumed or self.writer is None else self.writer.last_epoch
        self.feed = {model.x: X[:EXAMPLES_SHOWN], model.target: y[:EXAMPLES_SHOWN]}
        self._started = None

    def _warn(self, what, err, stacklevel=4):
        if not self.warned:  # one warning: a log that cannot be written fails the same way every epoch
            warnings.warn(f"fit(log_dir={self.log_dir!r}): {what} could not be written ({err}); training goes on "
                          "without it", RuntimeWarning, stacklevel=stacklevel)
        self.warned = True

    def _write(self, step):
        """Run `step` (a call of the writer) unless the scalar log was dropped; a failure drops it, and warns."""
        if self.writer is None:
            return
        try:
            step()
        except OSError as err:
            self.writer = None
            self._warn("the scalar log", err)

    def start(self, first_epoch):
        """Write the header and the model's page (values of the untrained model)."""
        self._write(lambda: self.writer.header(first_epoch + self.offset))
        self.write_page()

    def start_epoch(self):
        self._started = time.perf_counter()

    def epoch(self, epoch, logs):
        """Append this epoch's logs, learning rate and duration."""
        scalars = dict(logs)
        lr = learning_rate(self.model.optimizer)
        if lr is not None:
            scalars["lr"] = lr
        scalars["epoch_time"] = time.perf_counter() - self._started
        self._write(lambda: self.writer.write(epoch + self.offset, scalars))

    def finish(self):
        """Rewrite the page with the trained weights and close the log."""
        self.write_page()
        self._write(lambda: self.writer.close())

    def write_page(self):
        """The explorer page of the model's loss (a failure to draw never stops training: it warns)."""
        import os

        from ..viz.explorer import explore
        if not self.page:
            return
        try:
            explore(self.model.loss, self.feed, os.path.join(self.log_dir, GRAPH_PAGE), backend=self.model.backend,
                    title=f"model graph ({os.path.basename(os.path.normpath(self.log_dir))})")
        except (OSError, TinyflowError) as err:
            self.page = False
            self._warn("the model's graph page", err, stacklevel=5)


def learning_rate(optimizer):
    """The optimizer's learning rate as a number, or None when it is computed by the graph."""
    from ..nodes import Constant, Node, Variable
    lr = getattr(optimizer, "lr", None)
    if isinstance(lr, Node):
        lr = lr.value if isinstance(lr, (Variable, Constant)) else None  # other nodes compute it at run time
    if lr is None:
        return None
    try:
        array = np.asarray(lr, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return float(array) if array.size == 1 else None
