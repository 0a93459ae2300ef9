"""Fuzzing load_variables with damaged and crafted checkpoint bytes (hypothesis, bounded time).

Whatever the bytes, loading either succeeds or raises a CheckpointError that names the
file, and a failed load leaves every Variable exactly as it was.
"""
import io
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tinyflow as tfl

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

DESCRS = ["<f4", ">f4", "<f8", "<f2", "<i4", "<i8", ">i8", "|u1", "|b1", "<U3", "|S2", "|O", "<c8",
          "<M8[s]", "<m8[D]", "|V4", [("a", "<f4")], ("<f4", (2,)), "not a dtype", 7]
SHAPES = st.one_of(st.sampled_from([(2, 3), (4,), (), (3, 2), (0,), (2 ** 40,), (2 ** 31, 2 ** 31), (-1,)]),
                   st.lists(st.integers(-2, 2 ** 62), max_size=3).map(tuple))
NAME_CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")  # what zip can store


def build_graph():
    """Three Variables of different dtypes and ranks, and their values as a reference."""
    graph = tfl.Graph()
    with graph.as_default():
        with tfl.name_scope("dense"):
            tfl.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        tfl.Variable(np.array([1, 2, 3, 4], np.int32), name="count")
        tfl.Variable(np.array(0.5), name="lr")
    return graph


def checkpoint_bytes(graph, tmp_path):
    return open(tfl.save_variables(tmp_path / "good.npz", graph), "rb").read()


def member(descr, shape, fortran_order, payload):
    buffer = io.BytesIO()
    header = {"descr": descr, "fortran_order": fortran_order, "shape": shape}
    header_text = repr(header).encode("latin1")
    header_text += b" " * (-(len(header_text) + 11) % 64) + b"\n"
    buffer.write(b"\x93NUMPY\x01\x00" + len(header_text).to_bytes(2, "little") + header_text + payload)
    return buffer.getvalue()


def assert_fails_cleanly_or_loads(graph, path):
    before = {v.name: v.value.copy() for v in graph.variables()}
    try:
        tfl.load_variables(path, graph)
    except tfl.CheckpointError as err:
        assert str(path) in str(err), str(err)
        for var in graph.variables():
            np.testing.assert_array_equal(var.value, before[var.name], err_msg=var.name)
            assert var.value.dtype == before[var.name].dtype
        return False
    for var in graph.variables():  # a successful load keeps every Variable's shape and dtype
        assert var.value.shape == before[var.name].shape and var.value.dtype == before[var.name].dtype
    return True


@FUZZ
@given(cut=st.integers(0, 10_000))
def test_truncated_files(tmp_path, cut):
    graph = build_graph()
    good = checkpoint_bytes(graph, tmp_path)
    path = tmp_path / "cut.npz"
    path.write_bytes(good[:cut % len(good)])
    assert not assert_fails_cleanly_or_loads(graph, path)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), min_size=1, max_size=8))
def test_bit_flips(tmp_path, flips):
    graph = build_graph()
    data = bytearray(checkpoint_bytes(graph, tmp_path))
    for position, bit in flips:
        data[position % len(data)] ^= 1 << bit
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(data))
    assert_fails_cleanly_or_loads(graph, path)


@FUZZ
@given(name=st.sampled_from(["dense/w", "count", "lr"]), descr=st.sampled_from(DESCRS), shape=SHAPES,
       fortran_order=st.sampled_from([False, True, "yes"]), payload=st.binary(max_size=64),
       stored=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
def test_crafted_headers(tmp_path, name, descr, shape, fortran_order, payload, stored):
    graph = build_graph()
    path = tmp_path / "crafted.npz"
    with zipfile.ZipFile(path, "w", stored) as archive:
        for var in graph.variables():
            if var.name == name:
                archive.writestr(f"{name}.npy", member(descr, shape, fortran_order, payload))
            else:
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, var.value + 1)
                archive.writestr(f"{var.name}.npy", buffer.getvalue())
    loaded = assert_fails_cleanly_or_loads(graph, path)
    if loaded:  # only a header and payload that describe exactly this Variable can load
        var = next(v for v in graph.variables() if v.name == name)
        assert tuple(shape) == var.shape and fortran_order in (False, True)


@FUZZ
@given(members=st.lists(st.tuples(st.text(NAME_CHARACTERS, max_size=12), st.binary(max_size=200)), max_size=5),
       keep=st.lists(st.booleans(), min_size=3, max_size=3))
def test_random_members(tmp_path, members, keep):
    graph = build_graph()
    path = tmp_path / "random.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for var, kept in zip(graph.variables(), keep):
            if kept:
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, var.value)
                archive.writestr(f"{var.name}.npy", buffer.getvalue())
        with warnings.catch_warnings():  # duplicate names are part of the fuzzing
            warnings.simplefilter("ignore", UserWarning)
            for name, data in members:
                archive.writestr(name or "x", data)
    loaded = assert_fails_cleanly_or_loads(graph, path)
    assert loaded == (all(keep) and not members)


@FUZZ
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                                 st.integers(-2 ** 63, 2 ** 63 - 1)), min_size=4, max_size=4),
       as_float=st.booleans())
def test_values_out_of_the_variables_range(tmp_path, values, as_float):
    graph = build_graph()
    stored = np.array(values, np.float64 if as_float or any(isinstance(v, float) for v in values) else np.int64)
    arrays = {v.name: v.value for v in graph.variables()}
    arrays["count"] = stored
    path = tmp_path / "range.npz"
    np.savez(path, **arrays)
    loaded = assert_fails_cleanly_or_loads(graph, path)
    with np.errstate(all="ignore"):
        exact = np.array_equal(stored.astype(np.int32).astype(stored.dtype), stored)
    assert loaded == exact
    if loaded:
        np.testing.assert_array_equal(graph.get_node("count").value, stored.astype(np.int32))


def test_the_fuzzer_starts_from_a_checkpoint_that_loads(tmp_path):
    graph = build_graph()
    path = tmp_path / "good.npz"
    path.write_bytes(checkpoint_bytes(graph, tmp_path))
    assert assert_fails_cleanly_or_loads(graph, path)
    with pytest.raises(tfl.CheckpointError):
        tfl.load_variables(tmp_path / "good.npz", tfl.Graph())  # an empty graph: every member is extra
