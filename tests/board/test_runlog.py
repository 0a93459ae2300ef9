"""The scalar log: append-only, readable after a crash at any byte, tolerant of hostile content."""
import json
import math
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tinyflow.board.runlog import FILE_NAME, MAX_LINE, ScalarLog, ScalarWriter, find_runs



def test_written_epochs_read_back_with_non_finite_values(tmp_path):
    with ScalarWriter(tmp_path / "run") as writer:
        writer.header(1)
        writer.write(1, {"loss": 2.5, "accuracy": 0.5})
        writer.write(2, {"loss": float("nan"), "lr": float("inf"), "skipped": None})
    lines = (tmp_path / "run" / FILE_NAME).read_text().splitlines()
    assert all(json.loads(line) for line in lines) and "NaN" in lines[2] and "nan" not in lines[2]
    log = ScalarLog(tmp_path / "run" / FILE_NAME).poll()
    assert log.curves() == {"accuracy": [[1, 0.5]], "loss": [[1, 2.5], [2, "NaN"]], "lr": [[2, "Infinity"]]}
    assert log.last_epoch == 2 and log.skipped == 0


def test_a_log_cut_at_every_byte_reads_the_complete_lines(tmp_path):
    path = tmp_path / FILE_NAME
    with ScalarWriter(tmp_path) as writer:
        for epoch in range(1, 4):
            writer.write(epoch, {"loss": 1.0 / epoch})
    full = path.read_bytes()
    for cut in range(len(full) + 1):
        path.write_bytes(full[:cut])
        log = ScalarLog(path).poll()
        complete = full[:cut].count(b"\n")
        assert log.last_epoch == complete and log.skipped == 0, cut
    # a writer continuing a cut log starts a fresh line: the cut one is skipped, the new ones read
    path.write_bytes(full[:-5])
    with ScalarWriter(tmp_path) as writer:
        assert writer.last_epoch == 2
        writer.write(3, {"loss": 0.25})
    log = ScalarLog(path).poll()
    assert log.curves()["loss"][-1] == [3, 0.25] and log.skipped == 1


def test_polling_reads_only_what_was_appended_and_waits_for_unfinished_lines(tmp_path):
    path = tmp_path / FILE_NAME
    log = ScalarLog(path)
    assert log.poll().curves() == {}  # no file yet
    with open(path, "wb") as f:
        f.write(b'{"epoch": 1, "scalars": {"loss": 1}}\n{"epoch": 2, "scal')
    assert log.poll().last_epoch == 1
    with open(path, "ab") as f:
        f.write(b'ars": {"loss": 0.5}}\n')
    assert log.poll().curves() == {"loss": [[1, 1.0], [2, 0.5]]}
    path.write_bytes(b'{"epoch": 7, "scalars": {"loss": 3}}\n')  # replaced by a new run: read from the start
    os.utime(path)
    assert log.poll().curves() == {"loss": [[7, 3.0]]}


HOSTILE_LINES = [
    b"not json at all",
    b'["a", "list"]',
    b'{"epoch": "1", "scalars": {"loss": 1}}',
    b'{"epoch": true, "scalars": {"loss": 1}}',
    b'{"epoch": -3, "scalars": {"loss": 1}}',
    b'{"epoch": 1.5, "scalars": {"loss": 1}}',
    b'{"epoch": 2, "scalars": "__import__(\'os\').system(\'touch PWNED\')"}',
    b'{"epoch": 3, "scalars": {"loss": ' + b"9" * 5000 + b"}}",          # an integer too long to convert
    b"[" * 100000 + b"]" * 100000,                                          # nesting beyond the parser's depth
    b'{"epoch": 4, "scalars": {"loss": 1}, "pad": "' + b"x" * MAX_LINE + b'"}',
    b"\xff\xfe invalid utf-8",
]


def test_hostile_lines_are_skipped_and_counted_never_run(tmp_path):
    good = [b'{"epoch": 10, "scalars": {"loss": 1e999, "big": 1e308, "int": ' + b"9" * 400 + b', "<script>": 1,'
            b' "text": "hello", "list": [1], "flag": true, "nan": "NaN", "obj": {"__class__": 1},'
            b' "bare_nan": NaN, "tiny": -1e999}}']
    (tmp_path / FILE_NAME).write_bytes(b"\n".join(HOSTILE_LINES + good) + b"\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        log = ScalarLog(tmp_path / FILE_NAME).poll()
    finally:
        os.chdir(cwd)
    assert not (tmp_path / "PWNED").exists()
    assert log.skipped == len(HOSTILE_LINES) and log.last_epoch == 10
    curves = log.curves()
    assert curves["loss"] == [[10, "Infinity"]] and curves["big"] == [[10, 1e308]] and curves["nan"] == [[10, "NaN"]]
    assert curves["int"] == [[10, "Infinity"]] and curves["<script>"] == [[10, 1.0]]
    assert curves["bare_nan"] == [[10, "NaN"]] and curves["tiny"] == [[10, "-Infinity"]]  # JSON's literals too
    assert set(curves) == {"loss", "big", "int", "<script>", "nan", "bare_nan", "tiny"}  # text, lists, booleans, objects: not numbers


def test_a_killed_writer_leaves_a_readable_log(tmp_path):
    """A process killed (SIGKILL) while it logs: every epoch it finished is there, the log reads cleanly."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from tinyflow.board.runlog import ScalarWriter
        writer = ScalarWriter({str(tmp_path)!r})
        epoch = 0
        while True:
            epoch += 1
            writer.write(epoch, {{"loss": 1.0 / epoch, "pad": epoch}})
            if epoch == 50:
                print("50", flush=True)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "50"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    log = ScalarLog(tmp_path / FILE_NAME).poll()
    assert log.last_epoch >= 50 and log.skipped == 0
    assert [e for e, _ in log.curves()["loss"]] == list(range(1, log.last_epoch + 1))
    assert math.isclose(log.curves()["loss"][-1][1], 1.0 / log.last_epoch)


def test_runs_are_the_folders_holding_a_log(tmp_path):
    for name in ["exp1", "sweep/lr_0.1", "sweep/lr_0.01", "empty", "a/b/c/d/e/too_deep"]:
        (tmp_path / name).mkdir(parents=True)
        if name != "empty":
            (tmp_path / name / FILE_NAME).write_text("")
    (tmp_path / FILE_NAME).write_text("")
    os.symlink(tmp_path, tmp_path / "loop")  # links are not followed: no endless walk
    assert sorted(find_runs(tmp_path)) == [".", "exp1", "sweep/lr_0.01", "sweep/lr_0.1"]
    assert find_runs(tmp_path / "missing") == {}
