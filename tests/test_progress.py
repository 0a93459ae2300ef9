"""Training progress: a bar redrawn a few times a second on a terminal, a few plain lines in a log."""
import io
import os
import subprocess
import sys

import numpy as np

import tinyflow as tfl
from tinyflow.progress import Progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Terminal(io.StringIO):
    def isatty(self):
        return True


def simulate(stream, epochs=200, steps=13, verbose=1, stop_at=None):
    progress = Progress(epochs, steps, verbose, stream=stream)
    for epoch in range(1, epochs + 1):
        progress.start_epoch(epoch)
        for step in range(steps):
            progress.batch(1.0 / (step + 1))
        progress.end_epoch(epoch, {"loss": 1.0 / epoch, "val_loss": 2.0 / epoch})
        if epoch == stop_at:
            break
    progress.close()
    return stream.getvalue()


def test_off_a_terminal_a_long_run_prints_a_dozen_plain_lines():
    text = simulate(io.StringIO())
    lines = text.splitlines()
    assert "\r" not in text and len(lines) == 11
    assert lines[0] == "epoch 1/200  loss 1.0000  val_loss 2.0000"
    assert lines[-1] == "epoch 200/200  loss 0.0050  val_loss 0.0100"


def test_early_stopping_still_prints_the_last_epoch():
    lines = simulate(io.StringIO(), stop_at=37).splitlines()
    assert lines[-1].startswith("epoch 37/200  loss 0.0270") and len(lines) == 3  # 1, 20, 37


def test_on_a_terminal_the_bar_is_not_redrawn_per_batch():
    text = simulate(Terminal())
    assert 0 < text.count("\r") < 20  # 2,600 batches, redrawn at most twice a second
    assert "epoch 200/200" in text and "loss=0.0050" in text


def test_verbose_2_prints_every_epoch_and_0_nothing():
    assert len(simulate(Terminal(), epochs=7, verbose=2).splitlines()) == 7
    assert simulate(Terminal(), verbose=0) == "" and simulate(io.StringIO(), verbose=0) == ""


def test_fit_prints_plain_lines_when_stdout_is_captured(capsys):
    X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    model = tfl.Model(tfl.nn.Linear(3, 1), "mse", tfl.optim.SGD(0.1))
    model.fit(X, X.sum(1), epochs=30, batch_size=4)
    captured = capsys.readouterr()
    assert captured.err == "" and "\r" not in captured.out
    assert [line.split()[1] for line in captured.out.splitlines()] == ["1/30"] + [f"{e}/30" for e in range(3, 31, 3)]


def test_the_boston_demo_piped_into_a_log_stays_short(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "tinyflow", "demo", "boston", "--epochs", "40", "--out",
                             str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stdout + result.stderr and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) <= 30 and "epoch 40/40" in result.stdout, lines
