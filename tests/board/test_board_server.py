"""The board's server without a browser: routes, JSON, escaping, ports, the command line."""
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tinyflow.board import Board, BoardError
from tinyflow.board.runlog import FILE_NAME, ScalarLog, ScalarWriter, find_runs



def get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers, response.read()


@pytest.fixture
def board(tmp_path):
    with ScalarWriter(tmp_path / "exp1") as writer:
        for epoch in (1, 2):
            writer.write(epoch, {"loss": 1.0 / epoch, "lr": 0.1})
    (tmp_path / "exp1" / "graph.html").write_text("<!doctype html><p>graph page</p>")
    (tmp_path / "exp2").mkdir()
    (tmp_path / "exp2" / FILE_NAME).write_bytes(b'{"epoch": 1, "scalars": {"loss": "NaN"}}\nbroken\n{"epo')
    board = Board(tmp_path, port=0).start()
    yield board
    board.close()


def test_api_runs_lists_every_run_with_its_curves(board):
    status, headers, body = get(board.url + "api/runs")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    runs = {r["name"]: r for r in json.loads(body)["runs"]}
    assert runs["exp1"]["scalars"] == {"loss": [[1, 1.0], [2, 0.5]], "lr": [[1, 0.1], [2, 0.1]]}
    assert runs["exp1"]["graph"] is True and runs["exp2"]["graph"] is False
    assert runs["exp2"]["scalars"] == {"loss": [[1, "NaN"]]} and runs["exp2"]["skipped"] == 1


def test_the_page_and_the_graph_are_served_with_a_policy_that_forbids_the_network(board):
    status, headers, body = get(board.url)
    assert status == 200 and b"/api/runs" in body and "connect-src 'self'" in headers["Content-Security-Policy"]
    status, headers, body = get(board.url + "graph?run=exp1")
    assert body == b"<!doctype html><p>graph page</p>" and "sandbox" in headers["Content-Security-Policy"]
    for path in ("graph?run=exp2", "graph?run=../exp1", "graph?run=%2Fetc%2Fpasswd", "exp1/graph.html", "nothing"):
        with pytest.raises(urllib.error.HTTPError) as caught:
            get(board.url + path)
        assert caught.value.code == 404, path
    request = urllib.request.Request(board.url + "api/runs", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 405


def test_a_port_in_use_is_an_error_when_asked_for_and_skipped_otherwise(tmp_path, monkeypatch):
    first = Board(tmp_path, port=0)
    try:
        with pytest.raises(BoardError, match=f"port {first.port} on 127.0.0.1 is already in use.*--port 0"):
            Board(tmp_path, port=first.port)
        import tinyflow.board.server as server
        monkeypatch.setattr(server, "DEFAULT_PORT", first.port)
        second = Board(tmp_path)  # no port given: the next free one
        assert second.port != first.port and first.port < second.port <= first.port + server.PORTS_TRIED
        second.close()
    finally:
        first.close()
    (tmp_path / "a_file").write_text("")
    with pytest.raises(BoardError, match="is a file"):
        Board(tmp_path / "a_file")
    with pytest.raises(BoardError, match="not a port number"):
        Board(tmp_path, port=70000)


def test_the_command_serves_and_a_busy_port_exits_with_a_clear_message(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        failed = subprocess.run([sys.executable, "-m", "tinyflow", "board", str(tmp_path), "--port", str(port)],
                                capture_output=True, text=True, env=env, timeout=60)
    assert failed.returncode == 2 and f"port {port} on 127.0.0.1 is already in use" in failed.stderr
    assert "Traceback" not in failed.stderr
    process = subprocess.Popen([sys.executable, "-m", "tinyflow", "board", str(tmp_path / "later"), "--port", "0"],
                               stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        assert "serving the runs in" in line and "http://127.0.0.1:" in line
        assert "does not exist yet" in process.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        assert json.loads(get(url + "api/runs")[2])["runs"] == []
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_log_folder_host_or_port_of_the_wrong_type_raises_board_error(tmp_path):
    with pytest.raises(BoardError, match=r"the board's log folder must be a path \(a str or pathlib.Path\), got 123"):
        Board(123)
    with pytest.raises(BoardError, match="the board's host must be a string such as '127.0.0.1', got 0"):
        Board(tmp_path, host=0)
    for bad in (lambda: ScalarWriter(None), lambda: ScalarLog(5), lambda: find_runs([tmp_path])):
        with pytest.raises(BoardError, match="must be a path"):
            bad()
    with pytest.raises(BoardError, match="--port 'a' is not a port number"):
        Board(tmp_path, port="a")
