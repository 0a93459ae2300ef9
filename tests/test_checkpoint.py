"""save_variables / load_variables: round trip, strict matching, atomic writes, no pickle."""
import os

import numpy as np
import pytest

import tinyflow as tfl


def make_vars():
    with tfl.name_scope("layer1"):
        w = tfl.Variable(np.arange(6.0).reshape(2, 3), name="w")
    s = tfl.Variable(np.array(3, np.int64), trainable=False, name="step")
    return w, s


def test_round_trip_restores_every_variable(tmp_path):
    w, s = make_vars()
    path = tfl.save_variables(tmp_path / "ckpt.npz")
    w.value = np.zeros((2, 3))
    s.value = np.array(0)
    tfl.load_variables(path)
    np.testing.assert_array_equal(w.value, np.arange(6.0).reshape(2, 3))
    assert s.value == 3 and s.value.dtype == np.int64


def test_missing_extra_and_misshaped_variables_are_named(tmp_path):
    make_vars()
    path = tfl.save_variables(tmp_path / "ckpt.npz")
    with tfl.Graph().as_default() as g:
        with tfl.name_scope("layer1"):
            tfl.Variable(np.zeros((3, 3)), name="w")
        tfl.Variable(np.zeros(1), name="bias")
        with pytest.raises(tfl.CheckpointError) as err:
            tfl.load_variables(path, graph=g)
    message = str(err.value)
    assert "missing from the file: ['bias']" in message
    assert "not in the graph: ['step']" in message
    assert "'layer1/w' has shape (2, 3) in the file but (3, 3)" in message


def test_a_failed_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    w, _ = make_vars()
    path = tfl.save_variables(tmp_path / "ckpt.npz")
    before = open(path, "rb").read()
    w.value = np.ones((2, 3))

    def crash(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        tfl.save_variables(path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["ckpt.npz"]  # no temporary file left behind


class Trap:
    """Unpickling this creates the file `marker`: proof that pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def test_pickled_objects_are_refused_without_unpickling(tmp_path):
    tfl.Variable(np.zeros(2), name="w")
    path, marker = tmp_path / "evil.npz", tmp_path / "pickle-ran"
    np.savez(path, w=np.array([Trap(str(marker)), 1], dtype=object))
    with pytest.raises(tfl.CheckpointError, match="'w' holds object values"):
        tfl.load_variables(path)
    assert not marker.exists()


def values(graph=None):
    return {v.name: v.value.copy() for v in (graph or tfl.get_default_graph()).variables()}


def assert_unchanged(before):
    after = values()
    assert after.keys() == before.keys()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
        assert after[name].dtype == before[name].dtype


def test_a_bad_member_changes_no_variable_even_when_others_are_fine(tmp_path):
    make_vars()
    path = tmp_path / "ckpt.npz"
    np.savez(path, **{"layer1/w": np.full((2, 3), 7.0), "step": np.array(["seven"])})
    before = values()
    with pytest.raises(tfl.CheckpointError, match=r"'step' holds <U5 values"):
        tfl.load_variables(path)
    assert_unchanged(before)


@pytest.mark.parametrize("stored, message", [
    (np.array(["a"]), "<U1 values"), (np.array([b"a"]), "|S1 values"), (np.array([1 + 2j]), "complex128 values"),
    (np.array(["2020-01-01"], "datetime64[D]"), "datetime64"), (np.array([1], "timedelta64[s]"), "timedelta64"),
    (np.zeros(1, [("a", "f4")]), "holds"), (np.array([1e300]), "does not fit the Variable's dtype float32"),
    (np.array([2 ** 40]), "does not fit the Variable's dtype int32"), (np.array([1.5]), "dtype int32"),
    (np.array([np.nan]), "dtype int32")])
def test_values_of_the_wrong_kind_or_out_of_range_are_refused(tmp_path, stored, message):
    tfl.Variable(np.zeros(1, np.float32), name="f")
    tfl.Variable(np.zeros(1, np.int32), name="i")
    target = "i" if "int32" in message else "f"
    other = "f" if target == "i" else "i"
    path = tmp_path / "ckpt.npz"
    np.savez(path, **{target: stored, other: np.ones(1)})
    before = values()
    with pytest.raises(tfl.CheckpointError, match=message) as err:
        tfl.load_variables(path)
    assert str(path) in str(err.value)
    assert_unchanged(before)


def test_representable_values_of_another_dtype_are_converted(tmp_path):
    f = tfl.Variable(np.zeros(2, np.float32), name="f")
    i = tfl.Variable(np.zeros(2, np.int32), name="i")
    path = tmp_path / "ckpt.npz"
    np.savez(path, f=np.array([0.1, np.inf]), i=np.array([3.0, -4.0]))
    tfl.load_variables(path)
    np.testing.assert_array_equal(f.value, np.array([0.1, np.inf], np.float32))
    np.testing.assert_array_equal(i.value, [3, -4])
    assert (f.value.dtype, i.value.dtype) == (np.float32, np.int32)


def test_damaged_files_are_checkpoint_errors_naming_the_file(tmp_path):
    make_vars()
    good = open(tfl.save_variables(tmp_path / "good.npz"), "rb").read()
    damaged = {"empty": b"", "not-a-zip": b"hello, world" * 10, "truncated": good[: len(good) // 2],
               "crc": good.replace(np.arange(6.0).tobytes(), np.arange(1.0, 7.0).tobytes())}
    assert damaged["crc"] != good
    before = values()
    for label, data in damaged.items():
        path = tmp_path / f"{label}.npz"
        path.write_bytes(data)
        with pytest.raises(tfl.CheckpointError, match=f"checkpoint '{path}'"):
            tfl.load_variables(path)
        assert_unchanged(before)
    with pytest.raises(tfl.CheckpointError, match="cannot read checkpoint"):
        tfl.load_variables(tmp_path / "no-such-file.npz")


def test_a_header_asking_for_terabytes_is_refused_before_reading(tmp_path):
    import zipfile
    tfl.Variable(np.zeros(1), name="w")
    header = {"descr": "<f8", "fortran_order": False, "shape": (2 ** 40,)}
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as archive, archive.open("w.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(b"\0" * 64)
    with pytest.raises(tfl.CheckpointError, match=r"has shape \(1099511627776,\) in the file but \(1,\)"):
        tfl.load_variables(path)
    header["shape"] = (1,)  # right shape, but the member is too long for it
    with zipfile.ZipFile(path, "w") as archive, archive.open("w.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(b"\0" * 64)
    with pytest.raises(tfl.CheckpointError, match="truncated or padded"):
        tfl.load_variables(path)


def test_variables_named_like_savez_arguments_round_trip(tmp_path):
    file = tfl.Variable(np.array([1.0, 2.0]), name="file")
    allow = tfl.Variable(np.array(3), name="allow_pickle")
    path = tfl.save_variables(tmp_path / "ckpt.npz")
    file.value, allow.value = np.zeros(2), np.array(0)
    tfl.load_variables(path)
    np.testing.assert_array_equal(file.value, [1.0, 2.0])
    assert allow.value == 3
    with np.load(path) as data:  # still a plain .npz for numpy
        assert sorted(data.files) == ["allow_pickle", "file"]


@pytest.mark.parametrize("state, message", [
    ("[" * 100000 + "]" * 100000, "cannot read the fit checkpoint"),
    ('["a", "list"]', "cannot read the fit checkpoint"),
    ('{"epoch": "2", "seed": 1, "variables": "v.npz", "random_states": {}, "history": {}, "history_epochs": []}',
     r"entries \['epoch'\] are missing or malformed"),
    ('{"epoch": 1, "seed": 1, "variables": "../../v.npz", "random_states": {}, "history": {}, "history_epochs": []}',
     r"entries \['variables'\] are missing or malformed"),
    ("keep-variables", "malformed random state for 'dropout/"),
], ids=["deeply-nested", "not-an-object", "wrong-type", "path", "random-state"])
def test_a_damaged_fit_state_is_a_checkpoint_error_saying_how_to_start_over(tmp_path, state, message):
    import json

    def model():
        tfl.reset_default_graph()
        net = tfl.nn.Sequential(tfl.nn.Linear(2, 4), tfl.nn.Dropout(0.5, name="dropout"), tfl.nn.Linear(4, 1))
        return tfl.Model(net, "mse", tfl.optim.SGD(0.1))
    X, y = np.ones((8, 2), np.float32), np.ones((8, 1), np.float32)
    model().fit(X, y, epochs=1, verbose=0, checkpoint_dir=tmp_path)
    path = tmp_path / "fit_state.json"
    if state == "keep-variables":
        saved = json.loads(path.read_text())
        saved["random_states"] = {name: {"bit_generator": "nothing"} for name in saved["random_states"]}
        state = json.dumps(saved)
    path.write_text(state)
    with pytest.raises(tfl.CheckpointError, match=message):
        model().fit(X, y, epochs=2, verbose=0, checkpoint_dir=tmp_path)
