"""Training runs, live: the scalar log `Model.fit(log_dir=...)` writes, and `tinyflow board` that shows it.

    model.fit(X, y, epochs=50, log_dir="runs/exp1")    # runs/exp1/scalars.jsonl and runs/exp1/graph.html
    $ tinyflow board runs/                              # http://127.0.0.1:6006/: curves of every run, live

The log format is documented in runlog.py; the server in server.py.
"""
from .runlog import ScalarLog, ScalarWriter, find_runs
from .server import Board, BoardError

__all__ = ["Board", "BoardError", "ScalarLog", "ScalarWriter", "find_runs"]
