#!/usr/bin/env bash
# How in-process waits should wait: scenarios/inproc_waits.json (the ring,
# 4 ranks, 16 MiB) with "spin_us" 0, where a wait sleeps on its condition
# variable at once, and 100, where it first polls for up to 100 us,
# yielding the core between polls. The two alternate, ROUNDS times each,
# so both see the same moments of a noisy machine. Prints per run the
# median all-reduce time and busbw (from results.csv) and the CPU time
# (user + sys) of the whole gradex process, which also fills and checks
# every buffer.
#
# Usage: bash bench/inproc_waits.sh [BUILD_FOLDER] [ROUNDS]   (defaults: build/default 3)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
rounds="${2:-3}"
cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "inproc_waits: $gradex not built" >&2; exit 2; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

printf '%-8s %8s %12s %12s %10s\n' spin_us round median_ms busbw_GB/s cpu_s
for round in $(seq 1 "$rounds"); do
  for spin in 0 100; do
    sed "s/\"spin_us\": [0-9]*/\"spin_us\": $spin/" scenarios/inproc_waits.json > "$scratch/s.json"
    TIMEFORMAT='%U %S'
    cpu=$( { time "$gradex" run "$scratch/s.json" -q -o "$scratch/out" > /dev/null; } 2>&1 )
    row=$(awk -F, 'NR == 2 { printf "%.3f %.2f", $8 * 1e3, $12 / 1e9 }' "$scratch/out/results.csv")
    read -r user sys <<< "$cpu"
    read -r median busbw <<< "$row"
    printf '%-8s %8s %12s %12s %10.2f\n' "$spin" "$round" "$median" "$busbw" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"
  done
done
