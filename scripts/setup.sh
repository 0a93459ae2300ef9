#!/usr/bin/env bash
# Install what tinyflow needs on this machine, for one of two jobs:
#   setup.sh demo   the package (it builds the C kernels in ckernels/ through cffi) and what the demo uses:
#                   numpy, cffi, graphviz, matplotlib, tqdm, threadpoolctl; graphviz's `dot` (apt, as root)
#   setup.sh test   (the default) all of that, plus what the tests use: the dev, opencl and mpi extras (pytest,
#                   onnx, selenium, jupyter, pyopencl and pocl, mpi4py and Open MPI), torch, Chromium and its driver
# `--print` lists what the job installs (apt packages and pip requirements) and installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

job=test print=0
for arg in "$@"; do
    case $arg in
        demo|test) job=$arg ;;
        --print) print=1 ;;
        *) echo "usage: scripts/setup.sh [demo|test] [--print]" >&2; exit 2 ;;
    esac
done

# the command that shows a system package is there
command_of() {
    case $1 in graphviz) echo dot ;; chromium-driver) echo chromedriver ;; *) echo "$1" ;; esac
}
if [ "$job" = demo ]; then
    apt_packages=(graphviz)   # `dot` draws the demo's graph picture
    pip_target="." pip_note="builds the C kernels"
else
    # headless Chromium and its WebDriver: the explorer's and the board's browser tests (they skip without)
    apt_packages=(graphviz chromium chromium-driver)
    pip_target=".[dev,opencl,mpi]" pip_note="builds the C kernels; pyopencl with pocl's CPU driver; mpi4py and Open MPI"
fi

if [ "$print" = 1 ]; then
    echo "apt: ${apt_packages[*]}"
    echo "pip: -e $pip_target"
    if [ "$job" = test ]; then
        echo "pip: torch==2.13.0 (when its wheel is on this machine)"
        echo "apt: pocl-opencl-icd ocl-icd-libopencl1 (when no OpenCL device compiles kernels)"
    fi
    exit 0
fi

apt_updated=0
# apt-get install as root, with one `apt-get update` before the first install of the run
apt_install() {
    if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
for package in "${apt_packages[@]}"; do
    command -v "$(command_of "$package")" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing system packages: ${missing[*]}"
        apt_install "${missing[@]}"
    else
        echo "setup: NOTE: missing system packages, not installed (that needs root and apt-get): ${missing[*]}." >&2
        echo "setup: install them with 'sudo apt-get install ${missing[*]}' (or brew, conda); until then what" \
             "needs them says so (the demo skips its graph picture, the browser tests skip)." >&2
    fi
fi

echo "setup: pip install -e $pip_target ($pip_note)"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e "$pip_target"
if [ "$job" = demo ]; then exit 0; fi

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
