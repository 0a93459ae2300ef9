#!/usr/bin/env bash
# Build a wheel of this checkout, install it into a temporary virtual environment (no network:
# the build and runtime dependencies come from the system site-packages) and, from outside the
# checkout, train a small model on every backend the checkout itself can run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# backends the checkout runs: the installed wheel must run the same ones
expected=$(PYTHONPATH="$PWD" "$PYTHON" -c "import tinyflow as t; print(' '.join(t.backends.available()))")

echo "wheel: building from a copy of the checkout"
mkdir "$work/src"
tar --exclude=./build --exclude=./dist --exclude='*.egg-info' --exclude=.git --exclude='__pycache__' \
    --exclude='*.so' --exclude=.hypothesis --exclude=.pytest_cache -cf - . | tar -xf - -C "$work/src"
(cd "$work/src" && env -u PYTHONPATH "$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation \
    --disable-pip-version-check -w "$work/dist" . >"$work/build.log" 2>&1) || { cat "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/tinyflow-*.whl)
kernels=$("$PYTHON" -c "import sys, zipfile; print(sum(n.endswith('.cl') for n in zipfile.ZipFile(sys.argv[1]).namelist()))" "$wheel")
echo "wheel: $(basename "$wheel"): $kernels OpenCL kernel files"
# the explorer inlines the vendored dagre: the wheel ships it with its licence
"$PYTHON" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
needed = {f"tinyflow/viz/explorer/static/{n}" for n in ("dagre.min.js", "dagre.LICENSE", "explorer.js", "explorer.css")}
needed |= {"tinyflow/board/static/board.js", "tinyflow/board/static/board.css"}
assert needed <= names, f"the wheel lacks {sorted(needed - names)}"
PY

"$PYTHON" -m venv --system-site-packages "$work/venv"
env -u PYTHONPATH "$work/venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation \
    --disable-pip-version-check "$wheel"

echo "wheel: smoke test on the backends: $expected"
cd "$work"  # outside the checkout: nothing can be found there by accident
env -u PYTHONPATH TINYFLOW_EXPECTED_BACKENDS="$expected" "$work/venv/bin/python" - "$work/venv" <<'PY'
import os
import sys

import numpy as np

import tinyflow as tfl

venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(tfl.__file__).startswith(venv), f"tinyflow imported from {tfl.__file__}, not the wheel"
backends = tfl.backends.available()
expected = os.environ["TINYFLOW_EXPECTED_BACKENDS"].split()
assert backends == expected, f"the wheel runs {backends}, the checkout {expected}"
rng = np.random.default_rng(0)
X = rng.normal(size=(64, 3)).astype(np.float32)
y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)
losses = {}
for backend in backends:
    with tfl.Graph().as_default():
        tfl.set_seed(0)
        model = tfl.Model(tfl.nn.Linear(3, 1), "mse", tfl.optim.SGD(0.1), backend=backend)
        history = model.fit(X, y, epochs=20, batch_size=16, verbose=0)
        losses[backend] = history["loss"][-1]
        assert history["loss"][-1] < history["loss"][0] / 10, (backend, history["loss"])
        assert model.session.backend.name.split(":")[0] == backend
    print(f"  {backend}: loss {history['loss'][0]:.4f} -> {history['loss'][-1]:.5f}")
# the explorer's and board's pages are built from package data: the wheel must ship it
with tfl.Graph().as_default():
    model = tfl.Model(tfl.nn.Linear(3, 1), "mse", tfl.optim.SGD(0.1))
    model.fit(X, y, epochs=2, verbose=0, log_dir="runs/smoke")
page = open("runs/smoke/graph.html", encoding="utf-8").read()
assert "tinyflow-data" in page and "dagre.graphlib" in page and "Chris Pettitt" in page
from tinyflow.board.server import board_page
assert b"/api/runs" in board_page()
print("  explorer page and board page: built from the wheel's package data")
reference = losses["numpy"]
for backend, loss in losses.items():
    assert abs(loss - reference) <= 1e-3 * max(1.0, reference), (backend, loss, reference)
print("wheel: ok")
PY
