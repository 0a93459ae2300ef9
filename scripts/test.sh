#!/usr/bin/env bash
# Set up, run the kernel tests under the sanitizers, then the whole test suite on every
# available backend (extra arguments go to the last pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/sanitize.sh
exec "${PYTHON:-python3}" -m pytest -q "$@"
