"""Variable values saved as .npz files (one .npy member per Variable, never pickle), atomically, and restored
all-or-nothing from an untrusted file; and the checkpoint folder of `Model.fit(checkpoint_dir=...)`."""
import json
import math
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from .errors import CheckpointError
from .graph import get_default_graph

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
STATE_FILE = "fit_state.json"
STATE_TYPES = {"epoch": int, "seed": int, "variables": str, "random_states": dict, "history": dict,
               "history_epochs": list}


def write_atomically(path, write):
    """write(f) into a temporary file beside `path`, synced, then renamed into place (returns the path): a crash
    mid-save leaves any previous file intact, and a reader sees the old file or the new one, never half."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".tinyflow-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def save_variables(path, graph=None):
    """Write every Variable of the graph (trainable or not) to `path` as .npz, atomically; returns the path."""
    arrays = {var.name: var.value for var in (graph if graph is not None else get_default_graph()).variables()}

    def write(f):
        # members written one by one (not np.savez(**arrays)): any Variable name works, even `file`
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
            for name, value in arrays.items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
    return write_atomically(path, write)


def load_variables(path, graph=None):
    """Set every Variable of the graph from a .npz written by save_variables, or change none (CheckpointError)."""
    variables = {var.name: var for var in (graph if graph is not None else get_default_graph()).variables()}
    path = os.fspath(path)
    try:
        with zipfile.ZipFile(path) as archive:
            values = _read_members(archive, variables, path)
    except CheckpointError:
        raise
    except Exception as err:  # anything a damaged or crafted file makes zipfile or numpy raise
        raise CheckpointError(f"cannot read checkpoint '{path}': {type(err).__name__}: {err}. "
                              "It is not a checkpoint written by save_variables, or it is damaged; "
                              "nothing was changed.") from None
    for name, var in variables.items():  # every member checked and read: only now change anything
        var.value = values[name]


def _read_members(archive, variables, path):
    """{variable name: value in its dtype} once names, headers, dtypes, shapes, sizes and values all fit the graph."""
    infos, problems, values = {}, [], {}
    for info in archive.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        if name is None:
            problems.append(f"member '{info.filename}' is not a .npy array")
        elif name in infos:
            problems.append(f"member '{info.filename}' appears twice")
        else:
            infos[name] = info
    missing, extra = sorted(set(variables) - set(infos)), sorted(set(infos) - set(variables))
    if missing:
        problems.append(f"missing from the file: {missing}")
    if extra:
        problems.append(f"in the file but not in the graph: {extra}")
    for name in sorted(set(variables) & set(infos)):
        values[name], problem = _read_member(archive, infos[name], variables[name])
        if problem:
            problems.append(f"'{name}' {problem}")
    if problems:
        raise CheckpointError(f"checkpoint '{path}' does not match the graph's variables: " + "; ".join(problems)
                              + ". Build the same model (same names, scopes, shapes and dtypes) before loading; "
                              "nothing was changed.")
    return values


def _read_member(archive, info, var):
    """(the member's array in the Variable's dtype, None) or (None, what is wrong): header before data, then CRC."""
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _HEADER_READERS:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, fortran_order, dtype = _HEADER_READERS[version](member)
        if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
            return None, f"holds {dtype} values; a checkpoint holds only bool, integer and float arrays"
        if shape != var.shape:
            return None, f"has shape {shape} in the file but {var.shape} in the graph"
        count = math.prod(shape)
        expected = member.tell() + count * dtype.itemsize
        if info.file_size != expected:
            return None, (f"is {info.file_size} bytes long but its header announces {expected} "
                          "(a truncated or padded member)")
        data = member.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize or member.read(1):  # reading to the end checks the CRC
            raise ValueError(f"member '{info.filename}' does not hold exactly the data its header announces")
    stored = np.frombuffer(data, dtype=dtype, count=count)
    stored = stored.reshape(shape[::-1]).T if fortran_order else stored.reshape(shape)
    with np.errstate(all="ignore"):
        value = stored.astype(var.dtype)
        if var.dtype.kind == "f":  # float64 → float32 may round, but must not overflow to inf
            fits = np.isfinite(value) | ~np.isfinite(stored)
        else:  # integers and bools must come back exactly
            fits = value.astype(dtype) == stored
    if not fits.all():
        index = tuple(int(i) for i in np.argwhere(~fits)[0])
        return None, f"holds {stored[index]!r} at index {index}, which does not fit the Variable's dtype {var.dtype}"
    return value, None


def _plain(value):
    """JSON for the numpy values in generator states (MT19937's key is an array; setting the state takes a list)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError(f"cannot save {type(value).__name__} in a fit checkpoint")


class FitCheckpoint:
    """One fit's checkpoint folder: `variables-<epoch>.npz`, then `fit_state.json` naming it (epoch, seed, dropout
    generators' states, history), so a run killed at any moment leaves a consistent checkpoint to resume from."""

    def __init__(self, folder, graph):
        self.folder, self.graph = Path(folder), graph

    def _generators(self):
        """{node name: numpy Generator} for the graph's ops that draw random numbers (dropout masks)."""
        return {n.name: n.rng for n in self.graph.nodes if isinstance(getattr(n, "rng", None), np.random.Generator)}

    def save(self, epoch, seed, history):
        """Record that `epoch` finished: variables first, then the state naming them (atomically)."""
        variables = f"variables-{epoch:06d}.npz"
        save_variables(self.folder / variables, self.graph)
        state = {"epoch": epoch, "seed": seed, "variables": variables,
                 "random_states": {name: rng.bit_generator.state for name, rng in self._generators().items()},
                 "history": history.history, "history_epochs": history.epochs}
        text = json.dumps(state, default=_plain).encode("utf-8")
        write_atomically(self.folder / STATE_FILE, lambda f: f.write(text))
        for old in self.folder.glob("variables-*.npz"):
            if old.name != variables:
                old.unlink()

    def load_state(self):
        """The saved state dict (None when the folder holds no checkpoint); loads the variables too."""
        path = self.folder / STATE_FILE
        if not path.exists():
            return None
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            bad = [k for k, kind in STATE_TYPES.items() if not isinstance(state.get(k), kind)]
            if bad or os.path.basename(state["variables"]) != state["variables"]:
                raise ValueError(f"its entries {bad or ['variables']} are missing or malformed")
        except (OSError, ValueError, AttributeError, RecursionError) as err:  # AttributeError: not a JSON object
            raise CheckpointError(f"cannot read the fit checkpoint '{path}': {err}. Delete the folder "
                                  f"{self.folder} to start training from scratch.") from None
        load_variables(self.folder / state["variables"], self.graph)
        return state

    def restore_random_states(self, state):
        """Put the dropout generators back where the checkpointed run left them."""
        generators = self._generators()
        for name, saved in state["random_states"].items():
            if name not in generators:
                raise CheckpointError(f"the fit checkpoint in {self.folder} has a random op '{name}' this model "
                                      "lacks: build the same model before resuming")
            try:
                generators[name].bit_generator.state = saved
            except (TypeError, ValueError, KeyError) as err:
                raise CheckpointError(f"the fit checkpoint in {self.folder} holds a malformed random state for "
                                      f"'{name}' ({err}); delete the folder to start training from scratch") from None
