"""Saving and restoring Variable values as .npz files (never pickle), atomically and all-or-nothing.

A checkpoint is a zip with one .npy member per Variable, as `np.savez` writes
it. Loading treats the file as untrusted: every member is checked (name, .npy
header, dtype, shape, size, CRC, values that fit the Variable's dtype) before
any Variable changes, and whatever is wrong is a CheckpointError naming the file.
"""
import math
import os
import tempfile
import zipfile

import numpy as np

from .errors import CheckpointError
from .graph import get_default_graph

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


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
            # members written one by one (not np.savez(**arrays)): any Variable name works, even `file`
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name, value in arrays.items():
                    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)
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
    their shapes and values their dtypes can hold; otherwise CheckpointError
    names the file and the culprits.
    """
    graph = graph if graph is not None else get_default_graph()
    variables = {var.name: var for var in graph.variables()}
    path = os.fspath(path)
    try:
        with zipfile.ZipFile(path) as archive:
            members = _check_members(archive, variables, path)
            values = {name: _read_value(archive, info, variables[name], path) for name, info in members.items()}
    except CheckpointError:
        raise
    except Exception as err:  # anything a damaged or crafted file makes zipfile or numpy raise
        raise CheckpointError(f"cannot read checkpoint '{path}': {type(err).__name__}: {err}. "
                              "It is not a checkpoint written by save_variables, or it is damaged; "
                              "nothing was changed.") from None
    for name, var in variables.items():  # every member checked and read: only now change anything
        var.value = values[name]


def _check_members(archive, variables, path):
    """{variable name: ZipInfo} once names, headers, dtypes, shapes and sizes all match the graph."""
    infos, problems = {}, []
    for info in archive.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        if name is None:
            problems.append(f"member '{info.filename}' is not a .npy array")
        elif name in infos:
            problems.append(f"member '{info.filename}' appears twice")
        else:
            infos[name] = info
    missing = sorted(set(variables) - set(infos))
    extra = sorted(set(infos) - set(variables))
    if missing:
        problems.append(f"missing from the file: {missing}")
    if extra:
        problems.append(f"in the file but not in the graph: {extra}")
    for name in sorted(set(variables) & set(infos)):
        problem = _header_problem(archive, infos[name], variables[name])
        if problem:
            problems.append(f"'{name}' {problem}")
    if problems:
        raise CheckpointError(f"checkpoint '{path}' does not match the graph's variables: "
                              + "; ".join(problems)
                              + ". Build the same model (same names, scopes and shapes) before loading; "
                              "nothing was changed.")
    return {name: infos[name] for name in variables}


def _read_header(member):
    """(shape, fortran_order, dtype, data offset) of a .npy stream; only numpy's bounded header parser."""
    version = np.lib.format.read_magic(member)
    if version not in _HEADER_READERS:
        raise ValueError(f"unsupported .npy format version {version}")
    shape, fortran_order, dtype = _HEADER_READERS[version](member)
    return shape, fortran_order, dtype, member.tell()


def _header_problem(archive, info, var):
    """What is wrong with one member's .npy header for `var` (read before any data), or None."""
    with archive.open(info) as member:
        shape, _, dtype, offset = _read_header(member)
    if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        return f"holds {dtype} values; a checkpoint holds only bool, integer and float arrays"
    if shape != var.shape:
        return f"has shape {shape} in the file but {var.shape} in the graph"
    expected = offset + math.prod(shape) * dtype.itemsize
    if info.file_size != expected:
        return (f"is {info.file_size} bytes long but its header announces {expected} "
                "(a truncated or padded member)")
    return None


def _read_value(archive, info, var, path):
    """The member's array, converted to the Variable's dtype, after its CRC and range checks."""
    with archive.open(info) as member:
        shape, fortran_order, dtype, _ = _read_header(member)
        count = math.prod(shape)
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
        raise CheckpointError(f"checkpoint '{path}': '{var.name}' holds {stored[index]!r} at index {index}, which "
                              f"does not fit the Variable's dtype {var.dtype}; nothing was changed.")
    return value
