#!/usr/bin/env bash
# Set up, then run the main job: the Boston housing demo (extra arguments go to the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m tinyflow demo boston "$@"
