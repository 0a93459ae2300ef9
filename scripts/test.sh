#!/usr/bin/env bash
# Install everything the tests use (scripts/setup.sh test), run the kernel tests under the sanitizers,
# smoke-test an installed wheel, then the whole test suite on every available backend (extra arguments go to
# the last pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
bash scripts/sanitize.sh
bash scripts/wheel_smoke.sh
exec "${PYTHON:-python3}" -m pytest -q "$@"
