"""The scalar log of a run, `scalars.jsonl`: append-only JSON Lines that a killed run leaves readable, read without
executing anything (docs/explorer_and_board.md); and what `Model.fit(log_dir=...)` writes there: each epoch's logs,
`lr` and `epoch_time`, and the explorer page of the model's loss on the first batch, untrained and trained."""
import json
import math
import os
import stat
import time
import warnings

import numpy as np

from ..errors import TinyflowError
from ..nodes import Constant, Node, Variable
from ..viz.explorer.data import json_number

FILE_NAME = "scalars.jsonl"
GRAPH_PAGE = "graph.html"  # the explorer page of the run's model, beside its scalars
MAX_LINE = 64 * 1024  # bytes: longer lines are skipped unread
READ_CHUNK = 1 << 20  # bytes read at a time
MAX_TAG = 200         # characters of a scalar's name
SYNC_SECONDS = 1.0    # the longest a written line waits to be flushed to the disk
EXAMPLES_SHOWN = 32   # rows of the first batch the page's values are computed on
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class BoardError(TinyflowError):
    """The board cannot start or read its logs (a port in use, a log folder that is a file, ...)."""


def fs_path(path, what):
    """`path` (a str, bytes or os.PathLike) as a str or bytes; BoardError naming `what` otherwise."""
    try:
        return os.fspath(path)
    except TypeError:
        raise BoardError(f"{what} must be a path (a str or pathlib.Path), got {path!r}") from None


def is_text(name):
    """True when `name` is Unicode text that UTF-8 can encode (no lone surrogate, as a non-UTF-8 file name gives)."""
    return not any("\ud800" <= c <= "\udfff" for c in name)


def open_regular(path):
    """`path` opened for reading when it is a regular file reached without a symbolic link, else None."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # a FIFO would block
    try:
        f = os.fdopen(os.open(path, flags), "rb")
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        return None
    return f


class ScalarWriter:
    """Appends epochs to `log_dir/scalars.jsonl`; creates the folder; continues an existing log."""

    _fd = None  # until the file is open (a failed __init__ leaves nothing to close)

    def __init__(self, log_dir):
        log_dir = fs_path(log_dir, "the log folder")
        os.makedirs(log_dir, exist_ok=True)
        self.path = os.path.join(log_dir, FILE_NAME)
        log = ScalarLog(self.path).poll()
        self.last_epoch = log.last_epoch
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._synced = time.monotonic()
        if log._line:  # a line cut by a crash stays alone on its line (and is skipped)
            os.write(self._fd, b"\n")

    def header(self, first_epoch):
        """Mark the start of a fit; returns the writer."""
        return self._append({"tinyflow_scalars": 1, "time": time.time(), "first_epoch": int(first_epoch)})

    def write(self, epoch, scalars):
        """Append one epoch's scalars (name -> number; None left out); returns the writer."""
        values = {str(k)[:MAX_TAG].encode("utf-8", "replace").decode("utf-8"): json_number(v)
                  for k, v in scalars.items() if v is not None}
        return self._append({"epoch": int(epoch), "time": time.time(), "scalars": values})

    def _append(self, record):
        """Append a record as one JSON line; flushed to the disk at most SYNC_SECONDS later."""
        view = memoryview((json.dumps(record, allow_nan=False, ensure_ascii=False) + "\n").encode("utf-8"))
        while view:  # one call writes it all for a regular file; the loop only guards against a short write
            view = view[os.write(self._fd, view):]
        if time.monotonic() - self._synced >= SYNC_SECONDS:
            os.fsync(self._fd)
            self._synced = time.monotonic()
        return self

    def close(self):
        """Flush to disk and close the file."""
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        if self._fd is not None:  # a writer dropped after a failure: closed without the fsync that may fail again
            os.close(self._fd)


class ScalarLog:
    """What a scalar log says so far; `poll()` reads the lines appended since the last call."""

    def __init__(self, path):
        self.path = fs_path(path, "the scalar log")
        self.scalars = {}       # name -> {epoch: value}
        self.skipped = 0        # lines that were not valid records
        self.last_epoch = 0
        self.updated = None     # time of the last record read
        self._offset = 0        # bytes read so far
        self._line = b""        # the start of the line being written (at most MAX_LINE + 1 bytes of it)
        self._identity = None

    def poll(self):
        """Read complete lines appended since the last poll (from the start if the file was replaced)."""
        f = open_regular(self.path)
        if f is None:
            return self
        with f:
            info = os.fstat(f.fileno())
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self._offset:
                self.__init__(self.path)  # a new file under the same name: read it from the start
                self._identity = (info.st_dev, info.st_ino)
            f.seek(self._offset)
            while self._offset < info.st_size:
                chunk = f.read(min(READ_CHUNK, info.st_size - self._offset))
                if not chunk:
                    break
                self._offset += len(chunk)
                *lines, rest = chunk.split(b"\n")
                for piece in lines:
                    self._read_line(self._line + piece[:MAX_LINE + 1])
                    self._line = b""
                self._line = (self._line + rest)[:MAX_LINE + 1]  # kept until its newline comes
        return self

    def _read_line(self, line):
        if not line.strip():
            return
        record = _parse(line)
        if record is None:
            self.skipped += 1
        elif "tinyflow_scalars" not in record:  # not a fit's header
            for name, value in record["scalars"].items():
                number = _number(value)
                if number is not None and len(name) <= MAX_TAG:
                    self.scalars.setdefault(name, {})[record["epoch"]] = number
            self.last_epoch = max(self.last_epoch, record["epoch"])
            stamp = record.get("time")
            if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and math.isfinite(stamp):
                self.updated = float(stamp)

    def curves(self):
        """{name: [[epoch, value], ...]} by epoch, non-finite values as "NaN" / "Infinity" / "-Infinity"."""
        return {name: [[epoch, json_number(value)] for epoch, value in sorted(points.items())]
                for name, points in sorted(self.scalars.items())}


def _parse(line):
    """The record a line holds (a header, or an epoch with its scalars), or None for a line to skip."""
    if len(line) > MAX_LINE:
        return None
    try:
        record = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or numbers too long to convert
        return None
    if not isinstance(record, dict):
        return None
    if "tinyflow_scalars" in record:
        return record  # a fit's header
    epoch, scalars = record.get("epoch"), record.get("scalars")
    if type(epoch) is not int or not 0 < epoch < 10 ** 9 or not isinstance(scalars, dict):
        return None
    return record if all(is_text(name) for name in scalars) else None


def _number(value):
    """A scalar value as a float, or None for anything that is not a number."""
    if isinstance(value, str):
        return NON_FINITE.get(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer beyond float's range
        return math.inf if value > 0 else -math.inf


def find_runs(logdir, max_depth=4):
    """{run name: its folder} for every folder under `logdir` (itself included, as ".") holding a scalar log."""
    logdir = fs_path(logdir, "the log folder")
    runs = {}
    for folder, subfolders, files in os.walk(logdir):  # never follows symbolic links to folders
        depth = os.path.relpath(folder, logdir).count(os.sep) + (folder != logdir)
        if depth >= max_depth:
            subfolders[:] = []
        subfolders.sort()
        if FILE_NAME in files:
            runs[os.path.relpath(folder, logdir).replace(os.sep, "/")] = folder
    return runs


class FitLog:
    """One fit's log, a watcher of `fit`; a part that cannot be written (a file in the way, a full disk) warns once
    and is left out from then on: logging never stops training."""

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
