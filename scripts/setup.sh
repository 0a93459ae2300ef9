#!/usr/bin/env bash
# Install everything tinyflow needs on this machine: system packages (when root) and the
# Python package with its dev extras, which builds the C kernels in ckernels/ through cffi.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

apt_updated=0
# apt-get install as root, with one `apt-get update` before the first install of the run
apt_install() {
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)   # graph pictures
# headless Chromium and its WebDriver: the explorer's and the board's browser tests (they skip without)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing system packages: ${missing[*]}"
        apt_install "${missing[@]}"
    else
        echo "setup: NOTE: system packages missing: ${missing[*]}." >&2
        echo "setup: install them with 'sudo apt-get install ${missing[*]}' (features needing them say so)." >&2
    fi
fi

echo "setup: pip install -e .[dev,opencl,mpi] (builds the C kernels; pyopencl with pocl's CPU driver; mpi4py and Open MPI)"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e ".[dev,opencl,mpi]"

# PyTorch 2.13.0 (CPU) is the oracle of the eager/optimizer tests and the benchmarks' reference. It is
# installed only when its wheel is on this machine (pip's find-links), never as a multi-GB download;
# without it the torch-oracle tests skip, naming torch.
if "$PYTHON" -m pip download --quiet --no-index --no-deps -d "$(mktemp -d)" torch==2.13.0 >/dev/null 2>&1; then
    echo "setup: pip install torch==2.13.0 (local CPU wheel; the tests' oracle)"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore torch==2.13.0
else
    echo "setup: NOTE: no local torch==2.13.0 wheel; tests that compare with PyTorch will be skipped." >&2
fi

# The pocl wheel gives OpenCL a CPU device without root; if no device shows up, or none compiles a kernel (the
# wheel's LLVM 14 fails on CPUs newer than it, e.g. AMD Zen 5: "unknown target CPU 'generic'"), Debian's pocl can.
if ! "$PYTHON" -c "from tinyflow.backends import opencl_runtime as r; raise SystemExit(bool(r.why_unavailable()))" 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: no OpenCL device that compiles kernels; installing Debian's pocl-opencl-icd"
        apt_install pocl-opencl-icd ocl-icd-libopencl1
    else
        echo "setup: NOTE: no OpenCL device; the OpenCL backend stays unavailable (sudo apt-get install pocl-opencl-icd)." >&2
    fi
fi
