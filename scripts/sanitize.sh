#!/usr/bin/env bash
# Build the C kernels with AddressSanitizer and UndefinedBehaviorSanitizer into a scratch
# folder, then run the kernel tests against that build: any out-of-bounds access or UB aborts.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
build_dir=$(mktemp -d)
trap 'rm -rf "$build_dir"' EXIT

echo "sanitize: building the kernels with -fsanitize=address,undefined"
TINYFLOW_SANITIZE=1 TINYFLOW_CFLAGS="-fno-sanitize-recover=all" "$PYTHON" - "$build_dir" <<'PY' >/dev/null
import sys
sys.path.insert(0, "ckernels")
import build_ckernels
build_ckernels.make_builder(absolute_paths=True).compile(tmpdir=sys.argv[1])
PY
library=$(find "$build_dir" -name "_ckernels*.so" | head -n 1)
runtime="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"

echo "sanitize: running the kernel tests against $library"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
LD_PRELOAD="$runtime" TINYFLOW_CKERNELS_PATH="$library" TINYFLOW_EXPECT_SANITIZERS=1 \
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/backends/test_c_kernels.py tests/backends/test_native.py \
    tests/backends/test_numerics.py tests/fuzz/test_kernel_fuzz.py tests/ops/test_recurrent_cells.py \
    tests/ops/test_attention.py "$@"
