#!/usr/bin/env bash
# Install the package and what the demo uses (scripts/setup.sh demo), then train the Boston housing demo
# (extra arguments go to the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
exec "${PYTHON:-python3}" -m tinyflow demo boston "$@"
