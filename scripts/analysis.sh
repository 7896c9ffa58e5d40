#!/usr/bin/env bash
# Regenerates results/analysis/: claims A1-A17 (docs/architecture.md) with the
# document's figure, the cost model, the simulation and a verdict, plus the
# shaped-real-run vs simulation check. Builds gradex first if needed.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${GRADEX_BUILD:-build/default}"
if [ ! -x "$build/gradex" ]; then
  cmake --preset default
  cmake --build --preset default
fi
rm -rf results/analysis/runs
/usr/bin/python3 scripts/analysis.py "$build/gradex" results/analysis
