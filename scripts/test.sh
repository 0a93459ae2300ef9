#!/usr/bin/env bash
# Set up, run the kernel tests under the sanitizers, smoke-test an installed wheel, then the whole
# test suite on every available backend (extra arguments go to the last pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/sanitize.sh
bash scripts/wheel_smoke.sh
exec "${PYTHON:-python3}" -m pytest -q "$@"
