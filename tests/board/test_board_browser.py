"""The board in headless Chromium: curves that grow while a fit runs in another process, several runs, hostile logs.

Each test saves a screenshot into the artefact folder (see tests/browser.py).
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import browser
from tinyflow.board import Board
from tinyflow.board.runlog import FILE_NAME, ScalarLog, ScalarWriter


pytestmark = pytest.mark.usefixtures("chromium")

FIT = textwrap.dedent("""
    import sys
    import numpy as np
    import tinyflow as tfl
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 8)).astype(np.float32)
    y = (X @ rng.normal(size=8)).astype(np.float32)
    tfl.set_seed(0)
    model = tfl.Model(tfl.nn.Sequential(tfl.nn.Linear(8, 16, act="relu"), tfl.nn.Linear(16, 1)), "mse",
                      tfl.optim.SGD(0.01), metrics=["rmse"])
    model.fit(X, y, epochs=100000, batch_size=4, verbose=0, log_dir=sys.argv[1])
""")


def curve_points(driver, tag, run):
    """How many points the chart of `tag` draws for `run` (0 while there is no such curve)."""
    return driver.execute_script(
        "var tag = arguments[0], run = arguments[1];"
        "var c = Array.from(document.querySelectorAll('.chart .curve')).find(function (e) {"
        "  return e.getAttribute('data-run') === run && e.closest('.chart').getAttribute('data-tag') === tag; });"
        "return c ? Number(c.getAttribute('data-points')) : 0;", tag, run)


def test_curves_grow_while_a_fit_runs_in_another_process_and_a_killed_run_stays_readable(chromium, tmp_path):
    board = Board(tmp_path, port=0).start()
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    fit = subprocess.Popen([sys.executable, "-c", FIT, str(tmp_path / "live")], env=env)
    try:
        browser.goto(chromium, board.url)
        first = browser.wait_for(lambda: curve_points(chromium, "loss", "live"), timeout=60,
                                 what="the first epoch of the running fit on the board")
        later = browser.wait_for(lambda: curve_points(chromium, "loss", "live") > first and
                                 curve_points(chromium, "loss", "live"), timeout=30,
                                 what="more epochs on the board while the fit runs")
        assert fit.poll() is None, "the fit was still running while its curve grew"
        assert later > first
        for tag in ("rmse", "lr", "epoch_time"):
            assert curve_points(chromium, tag, "live") >= first
        browser.screenshot(chromium, "board_live_fit")
        fit.send_signal(signal.SIGKILL)  # a crash in the middle of training
        fit.wait(timeout=30)
        written = ScalarLog(tmp_path / "live" / FILE_NAME).poll()
        assert written.skipped == 0 and written.last_epoch >= later
        browser.wait_for(lambda: curve_points(chromium, "loss", "live") == written.last_epoch,
                         what="the board to show every epoch the killed run wrote")
        chromium.find_element("css selector", '.run[data-run="live"] .graph-button').click()
        chromium.switch_to.frame(chromium.find_element("id", "graph-frame"))
        browser.wait_for(lambda: chromium.execute_script("return document.body.getAttribute('data-ready')"),
                         what="the run's explorer page inside the board")
        assert chromium.find_elements("css selector", ".node")
        chromium.switch_to.default_content()
        browser.screenshot(chromium, "board_run_graph")
        assert not browser.severe_console_errors(chromium)
    finally:
        if fit.poll() is None:
            fit.kill()
            fit.wait()
        chromium.switch_to.default_content()
        chromium.get("about:blank")  # stop the page polling before its server goes
        board.close()


def test_several_runs_side_by_side_and_hostile_logs_shown_as_text(chromium, tmp_path):
    for name, rate in (("lr_0.1", 0.1), ("lr_0.01", 0.01)):
        with ScalarWriter(tmp_path / "sweep" / name) as writer:
            for epoch in range(1, 6):
                writer.write(epoch, {"loss": rate * 10 / epoch, "lr": rate})
    evil = '<img src=x onerror="window.pwned=1">'
    (tmp_path / evil).mkdir()
    (tmp_path / evil / FILE_NAME).write_bytes(
        b'{"epoch": 1, "scalars": {"loss": 1e308, "<script>window.pwned=2</script>": 1}}\n'
        b'{"epoch": 2, "scalars": {"loss": -1e308}}\n{"epoch": 3, "scalars": {"loss": "NaN"}}\n'
        b'{"epoch": 4, "scalars": {"loss": "Infinity"}}\nthis is not json\n{"epoch": 5, "scal')
    board = Board(tmp_path, port=0).start()
    try:
        browser.goto(chromium, board.url)
        browser.wait_for(lambda: curve_points(chromium, "loss", "sweep/lr_0.01") == 5, what="the sweep's curves")
        assert curve_points(chromium, "loss", "sweep/lr_0.1") == 5 and curve_points(chromium, "lr", "sweep/lr_0.1") == 5
        colours = chromium.execute_script(
            "return Array.from(document.querySelectorAll('.chart[data-tag=\"loss\"] .curve')).map("
            "function (e) { return e.getAttribute('stroke'); })")
        assert len(set(colours)) == 3
        assert curve_points(chromium, "loss", evil) == 2  # the finite ones; NaN and infinity are named below the chart
        names = [e.text for e in chromium.find_elements("css selector", ".run .name")]
        assert evil in names
        notes = chromium.find_element("css selector", '.chart[data-tag="loss"]').text
        assert f"{evil}: NaN at epoch 3" in notes and f"{evil}: Infinity at epoch 4" in notes
        evil_run = next(e for e in chromium.find_elements("css selector", ".run") if e.get_attribute("data-run") == evil)
        assert evil_run.find_element("css selector", ".warn").text.startswith("1 unreadable")
        assert any(e.text == "<script>window.pwned=2</script>" for e in chromium.find_elements("css selector", ".chart h3"))
        assert chromium.execute_script("return window.pwned") is None
        browser.screenshot(chromium, "board_runs_and_hostile_log")
        assert not browser.severe_console_errors(chromium)
    finally:
        chromium.get("about:blank")
        board.close()
