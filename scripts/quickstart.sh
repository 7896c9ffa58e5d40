#!/usr/bin/env bash
# Installs what gradex needs, builds it, and runs the main job: every scheme
# on in-process ranks over a shaped network (scenarios/quickstart.json).
# Extra arguments go to `gradex run` (e.g. --workers 4, --no-output).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake --preset default
cmake --build --preset default -j "$(nproc)"
./build/default/gradex run scenarios/quickstart.json "$@"
