#!/usr/bin/env bash
# Installs what gradex needs, builds it and runs the test suites.
#   bash scripts/test.sh               # release build (preset "default")
#   bash scripts/test.sh asan-ubsan    # the same tests under ASan + UBSan
#   bash scripts/test.sh tsan          # the same tests under ThreadSanitizer
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
jobs="$(nproc)"

bash scripts/setup.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
