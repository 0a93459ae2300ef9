"""Training runs, live: the scalar log `Model.fit(log_dir=...)` writes (runlog.py), and `tinyflow board`
that shows the curves of every run in the browser (server.py)."""
from .runlog import BoardError, ScalarLog, ScalarWriter, find_runs
from .server import Board

__all__ = ["Board", "BoardError", "ScalarLog", "ScalarWriter", "find_runs"]
