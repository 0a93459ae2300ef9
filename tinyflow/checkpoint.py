"""Saving and restoring Variable values as .npz files (never pickle), atomically."""
import os
import tempfile

import numpy as np

from .errors import CheckpointError
from .graph import get_default_graph


def save_variables(path, graph=None):
    """Write every Variable of the graph (trainable or not) to `path` as .npz; returns the path.

    The file is written to a temporary name and renamed into place, so a crash
    mid-save leaves any previous checkpoint intact.
    """
    graph = graph if graph is not None else get_default_graph()
    arrays = {var.name: var.value for var in graph.variables()}
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tinyflow-", suffix=".npz.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_variables(path, graph=None):
    """Set every Variable of the graph from a .npz written by save_variables.

    Nothing is changed unless the file holds exactly the graph's Variables with
    their shapes; otherwise CheckpointError names the culprits.
    """
    graph = graph if graph is not None else get_default_graph()
    variables = {var.name: var for var in graph.variables()}
    try:
        with np.load(os.fspath(path), allow_pickle=False) as data:
            stored = {name: data[name] for name in data.files}
    except (OSError, ValueError) as err:
        raise CheckpointError(f"cannot read checkpoint '{path}': {err}") from None
    missing = sorted(set(variables) - set(stored))
    extra = sorted(set(stored) - set(variables))
    problems = []
    if missing:
        problems.append(f"missing from the file: {missing}")
    if extra:
        problems.append(f"in the file but not in the graph: {extra}")
    for name in sorted(set(variables) & set(stored)):
        if stored[name].shape != variables[name].shape:
            problems.append(f"'{name}' has shape {stored[name].shape} in the file but "
                            f"{variables[name].shape} in the graph")
    if problems:
        raise CheckpointError(f"checkpoint '{path}' does not match the graph's variables: "
                              + "; ".join(problems)
                              + ". Build the same model (same names, scopes and shapes) before loading.")
    for name, var in variables.items():
        var.value = stored[name]
