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
    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError, match="disk full"):
        tfl.save_variables(path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["ckpt.npz"]  # no temporary file left behind


def test_pickled_objects_are_refused(tmp_path):
    tfl.Variable(np.zeros(2), name="w")
    path = tmp_path / "evil.npz"
    np.savez(path, w=np.array([object()], dtype=object))
    with pytest.raises(tfl.CheckpointError, match="cannot read"):
        tfl.load_variables(path)
