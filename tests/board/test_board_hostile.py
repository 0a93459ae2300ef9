"""The board against hostile log folders and hostile web pages: links out of the folder, FIFOs, DNS rebinding,
huge unfinished lines and names that are not UTF-8."""
import http.client
import json
import os

import pytest

from tinyflow.board import Board
from tinyflow.board.runlog import FILE_NAME, MAX_LINE, ScalarLog, ScalarWriter

BACKEND_INDEPENDENT = True


def request(board, path, host=None):
    """(status, body) of GET path, with the Host header given (default: the board's own address)."""
    connection = http.client.HTTPConnection(board.host, board.port, timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def runs_of(board):
    status, body = request(board, "/api/runs")
    assert status == 200
    return json.loads(body)


@pytest.fixture
def logdir(tmp_path):
    with ScalarWriter(tmp_path / "runs" / "exp") as writer:
        writer.write(1, {"loss": 0.5})
    return tmp_path / "runs"


@pytest.fixture
def board(logdir):
    board = Board(logdir, port=0).start()
    yield board
    board.close()


def test_a_graph_page_linked_to_a_file_outside_the_folder_is_not_served(tmp_path, logdir, board):
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's private key")
    os.symlink(secret, logdir / "exp" / "graph.html")
    status, body = request(board, "/graph?run=exp")
    assert status == 404 and b"private" not in body
    assert runs_of(board)["runs"][0]["graph"] is False


def test_a_scalar_log_linked_elsewhere_is_not_read(tmp_path, logdir, board):
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text('{"epoch": 1, "scalars": {"secret": 42}}\n')
    (logdir / "linked").mkdir()
    os.symlink(elsewhere, logdir / "linked" / FILE_NAME)
    runs = {r["name"]: r for r in runs_of(board)["runs"]}
    assert runs["linked"]["scalars"] == {} and runs["exp"]["scalars"] == {"loss": [[1, 0.5]]}


def test_fifos_in_place_of_the_log_or_the_page_do_not_hang_the_board(logdir, board):
    (logdir / "pipes").mkdir()
    os.mkfifo(logdir / "pipes" / FILE_NAME)
    os.mkfifo(logdir / "pipes" / "graph.html")
    runs = {r["name"]: r for r in runs_of(board)["runs"]}  # opening a FIFO to read would wait for a writer
    assert runs["pipes"]["scalars"] == {} and runs["pipes"]["graph"] is False
    assert request(board, "/graph?run=pipes")[0] == 404


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost.evil.example:{port}",
                                  "localhost:1", "127.0.0.1:{port}0", "localhost:port", ""])
def test_a_host_header_naming_another_site_is_refused(board, host):
    status, body = request(board, "/api/runs", host=host.format(port=board.port))
    assert status == 403 and b"this board answers requests to" in body and b"exp" not in body


@pytest.mark.parametrize("host", ["localhost:{port}", "LOCALHOST:{port}", "127.0.0.1:{port}", "127.0.0.1",
                                  "[::1]:{port}", "192.168.1.20:{port}"])
def test_the_boards_own_addresses_are_answered(board, host):
    status, body = request(board, "/api/runs", host=host.format(port=board.port))
    assert status == 200 and json.loads(body)["runs"][0]["name"] == "exp"


def test_an_unfinished_last_line_is_read_once_and_only_its_start_is_kept(tmp_path):
    path = tmp_path / FILE_NAME
    line = b'{"epoch": 1, "scalars": {"loss": 1}}\n'
    path.write_bytes(line + b'{"epoch": 2, "pad": "' + b"x" * (32 << 20))  # 32 MiB still being written
    log = ScalarLog(path).poll()
    assert log.last_epoch == 1 and log._offset == path.stat().st_size  # nothing left to read again
    assert len(log._line) <= MAX_LINE + 1  # the start of the unfinished line, not 32 MiB of it
    with open(path, "ab") as f:
        f.write(b'"}\n{"epoch": 3, "scalars": {"loss": 0.25}}\n')
    log.poll()
    assert log.curves() == {"loss": [[1, 1.0], [3, 0.25]]} and log.skipped == 1  # the overlong line


def test_a_line_split_across_polls_and_chunks_reads_whole(tmp_path, monkeypatch):
    import tinyflow.board.runlog as runlog
    monkeypatch.setattr(runlog, "READ_CHUNK", 7)
    path = tmp_path / FILE_NAME
    text = b'{"epoch": 1, "scalars": {"loss": 1}}\n{"epoch": 2, "scalars": {"loss": 0.5}}\n'
    log = ScalarLog(path)
    for cut in list(range(5, len(text), 11)) + [len(text)]:
        path.write_bytes(text[:cut])
        log.poll()
    assert log.curves() == {"loss": [[1, 1.0], [2, 0.5]]} and log.skipped == 0


def test_a_scalar_named_by_a_lone_surrogate_is_skipped_and_counted(logdir, board):
    with open(logdir / "exp" / FILE_NAME, "ab") as f:
        f.write(b'{"epoch": 2, "scalars": {"\\ud800": 1, "loss": 0.25}}\n{"epoch": 3, "scalars": {"loss": 0.1}}\n')
    (run,) = runs_of(board)["runs"]
    assert run["scalars"] == {"loss": [[1, 0.5], [3, 0.1]]} and run["skipped"] == 1


def test_a_run_folder_whose_name_is_not_utf8_is_skipped_and_counted(logdir, board):
    bad = os.path.join(logdir, os.fsdecode(b"bad\xff"))  # the name as Python gives it: with a lone surrogate
    try:
        os.mkdir(bad)
    except OSError:
        pytest.skip("this file system refuses file names that are not UTF-8")
    with ScalarWriter(bad) as writer:
        writer.write(1, {"loss": 1.0})
    answer = runs_of(board)
    assert [r["name"] for r in answer["runs"]] == ["exp"] and answer["skipped_runs"] == 1


def test_the_writer_replaces_a_lone_surrogate_in_a_scalar_name(tmp_path):
    with ScalarWriter(tmp_path) as writer:
        writer.write(1, {"acc\ud800": 1.0})
    assert ScalarLog(tmp_path / FILE_NAME).poll().curves() == {"acc?": [[1, 1.0]]}
