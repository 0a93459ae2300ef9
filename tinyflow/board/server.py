"""`tinyflow board LOGDIR`: a small local web server (http.server) showing the runs' curves live, and their graphs.

    GET /              the board page (its script and styles inline)
    GET /api/runs      {"runs": [{"name", "scalars": {"loss": [[epoch, value], ...], ...}, "graph", "skipped",
                        "updated"}], "skipped_runs", "logdir"}
    GET /graph?run=N   the explorer page Model.fit wrote for run N (graph.html in its folder)
It only reads and serves nothing else (a run name is looked up among the runs found, never joined into a path),
forbids its pages any network access beyond itself, and refuses another site's Host header (DNS rebinding)."""
import errno
import functools
import html
import ipaddress
import json
import os
import pathlib
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ..viz.explorer import fill_page
from .runlog import FILE_NAME, GRAPH_PAGE, BoardError, ScalarLog, find_runs, fs_path, is_text, open_regular

DEFAULT_PORT = 6006
PORTS_TRIED = 20  # without --port: 6006, or the next free one of these
STATIC = pathlib.Path(__file__).with_name("static")
HTML = "text/html; charset=utf-8"
BOARD_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
             "frame-src 'self'; img-src data:; base-uri 'none'; form-action 'none'")
GRAPH_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
             "base-uri 'none'; form-action 'none'; sandbox allow-scripts")


class RunCatalog:
    """The runs under a log folder, each log read incrementally as it grows (thread-safe)."""

    def __init__(self, logdir):
        self.logdir = os.fspath(logdir)
        self._logs, self._lock = {}, threading.Lock()

    def snapshot(self):
        """The JSON of /api/runs."""
        found = find_runs(self.logdir)
        result = []
        with self._lock:
            for name, folder in found.items():
                if not is_text(name):
                    continue  # a folder name that is not UTF-8 cannot be shown (counted in skipped_runs)
                log = self._logs.setdefault(folder, ScalarLog(os.path.join(folder, FILE_NAME))).poll()
                page = os.path.join(folder, GRAPH_PAGE)  # a regular file, not a link: what graph_page serves
                result.append({"name": name, "scalars": log.curves(), "skipped": log.skipped, "updated": log.updated,
                               "graph": os.path.isfile(page) and not os.path.islink(page)})
        return {"runs": result, "skipped_runs": len(found) - len(result),
                "logdir": os.fsencode(self.logdir).decode("utf-8", "replace")}

    def graph_page(self, name):
        """The bytes of run `name`'s explorer page, or None."""
        folder = find_runs(self.logdir).get(name)
        page = None if folder is None else open_regular(os.path.join(folder, GRAPH_PAGE))
        if page is None:
            return None
        with page:
            return page.read()


@functools.lru_cache(maxsize=None)
def board_page():
    """The board's HTML (static/board.html), its script and styles inline."""
    return fill_page(STATIC, "board").encode("utf-8")


class BoardHandler(BaseHTTPRequestHandler):
    """Answers the three routes; everything else is 404 (or 405 for methods other than GET)."""

    server_version = "tinyflow-board"
    catalog = None  # set per server (see Board)
    hosts = frozenset()  # the names the board answers to (see Board)

    def do_GET(self):  # noqa: N802 - the name http.server calls
        url = urlsplit(self.path)
        if not self._addressed_to_us():
            self._send(403, f"this board answers requests to {', '.join(sorted(self.hosts))} on port "
                       f"{self.server.server_address[1]} only, not to Host {self.headers.get('Host')!r}; open it at "
                       "one of those addresses")
        elif url.path == "/":
            self._send(200, board_page(), HTML, BOARD_CSP)
        elif url.path == "/api/runs":
            self._send(200, json.dumps(self.catalog.snapshot(), allow_nan=False, ensure_ascii=False),
                       "application/json; charset=utf-8")
        elif url.path == "/graph":
            name = parse_qs(url.query).get("run", [""])[0]
            page = self.catalog.graph_page(name)
            if page is None:
                self._send(404, f"no graph page for run {html.escape(name)!r}")
            else:
                self._send(200, page, HTML, GRAPH_CSP)
        else:
            self._send(404, "not found")

    def _addressed_to_us(self):
        """Whether the Host header names this board: a name it answers to, or an IP address, and its port."""
        try:
            url = urlsplit("//" + (self.headers.get("Host") or ""))
            host, port = url.hostname, url.port
        except ValueError:  # a port that is not a number
            return False
        if not host or port not in (None, self.server.server_address[1]):
            return False
        try:
            ipaddress.ip_address(host)  # a page served from an IP address has that address as its origin:
            return True                 # only a name can be pointed at this machine afterwards (DNS rebinding)
        except ValueError:
            return host in self.hosts

    def do_POST(self):  # noqa: N802
        self._send(405, "the board only reads")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _send(self, status, body, content_type="text/plain; charset=utf-8", csp=None):
        body = body.encode("utf-8", "replace") if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        if csp:
            self.send_header("Content-Security-Policy", csp)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - http.server's signature
        pass  # the board polls every second: a line per request would drown the terminal


class Board:
    """The board's server for `logdir` (port None: 6006 or the next free one; 0: any): `.url`, `.serve_forever()`."""

    def __init__(self, logdir, host="127.0.0.1", port=None):
        logdir = fs_path(logdir, "the board's log folder")
        if not isinstance(host, str):
            raise BoardError(f"the board's host must be a string such as '127.0.0.1', got {host!r}")
        if os.path.exists(logdir) and not os.path.isdir(logdir):
            raise BoardError(f"the log folder {logdir!r} is a file; pass the folder holding the runs "
                             "(the parent of each fit's log_dir)")
        # the host names it answers to: localhost, the host, and on every address this machine's names
        hosts = {"localhost", host.strip("[]").lower()}
        if host in ("", "0.0.0.0", "::"):
            hosts |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        handler = type("Handler", (BoardHandler,), {"catalog": RunCatalog(logdir), "hosts": frozenset(hosts)})
        self.server = _bind(host, port, handler)
        self.host, self.port = host, self.server.server_address[1]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{self.port}/"
        self._thread = None

    def serve_forever(self):
        """Serve until interrupted (Ctrl+C)."""
        try:
            self.server.serve_forever(poll_interval=0.2)
        finally:
            self.server.server_close()

    def start(self):
        """Serve in a background thread; returns self."""
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def close(self):
        """Stop serving and free the port."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join()
            self._thread = None
        self.server.server_close()


def _bind(host, port, handler):
    """A server on (host, port); port None tries DEFAULT_PORT and the PORTS_TRIED after it."""
    # SO_REUSEADDR (http.server's default) lets a restarted board take its port back at once; it never lets
    # two servers listen on one port, and SO_REUSEPORT, which would, stays off
    server_class = type("BoardServer", (ThreadingHTTPServer,), {
        "allow_reuse_port": False, "daemon_threads": True,
        "address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
    candidates = [port] if port is not None else list(range(DEFAULT_PORT, DEFAULT_PORT + PORTS_TRIED))
    for candidate in candidates:
        try:
            return server_class((host, candidate), handler)  # closes its socket if it cannot bind
        except (OverflowError, TypeError):
            raise BoardError(f"--port {candidate!r} is not a port number: use 0-65535") from None
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                raise BoardError(f"cannot listen on {host}:{candidate}: {err.strerror}. Check --host (an address of "
                                 "this machine, e.g. 127.0.0.1) and --port (1024-65535 without root).") from None
            if port is not None:
                raise BoardError(f"port {port} on {host} is already in use (another tinyflow board, or "
                                 "TensorBoard?). Pass another --port, leave --port out to take the next free port "
                                 f"after {DEFAULT_PORT}, or pass --port 0 to let the system choose one.") from None
    raise BoardError(f"ports {candidates[0]}-{candidates[-1]} on {host} are all in use; pass --port N (or --port 0 "
                     "for any free port)")


def main(logdir, host="127.0.0.1", port=None, out=sys.stdout):
    """What `tinyflow board` runs: print the address, serve until Ctrl+C."""
    board = Board(logdir, host, port)
    print(f"tinyflow board: serving the runs in {os.fspath(logdir)} at {board.url}  (Ctrl+C to stop)", file=out)
    if not os.path.isdir(logdir):
        print(f"  {os.fspath(logdir)} does not exist yet: runs appear as soon as Model.fit(log_dir="
              f"'{os.path.join(os.fspath(logdir), 'NAME')}') writes them", file=out)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"  note: listening on {host}: other machines on the network can read these logs", file=out)
    out.flush()
    try:
        board.serve_forever()
    except KeyboardInterrupt:
        print("tinyflow board: stopped", file=out)
    return 0
