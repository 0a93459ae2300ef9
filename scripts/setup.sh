#!/usr/bin/env bash
# Install everything tinyflow needs on this machine: system packages (when root) and the
# Python package with its dev extras, which builds the C kernels in ckernels/ through cffi.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)   # graph pictures
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing system packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "setup: NOTE: system packages missing: ${missing[*]}." >&2
        echo "setup: install them with 'sudo apt-get install ${missing[*]}' (features needing them say so)." >&2
    fi
fi

echo "setup: pip install -e .[dev] (builds the C kernels)"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e ".[dev]"
