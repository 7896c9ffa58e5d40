#!/usr/bin/env bash
# What hierarchy buys across hosts, measured and modelled: the scenario runs
# as 4 processes on two "hosts" (two network namespaces joined by a veth
# pair, scripts/two_hosts_netns.sh) whose link the kernel shapes to the
# scenario's inter-node bandwidth, and on the simulator with the same
# network. Real TCP over a real (virtual) NIC and its token-bucket queue on
# one side, gradex's NIC model on the other. TCP does not get the whole
# link (headers, acknowledgements, its own pacing), so one bulk TCP stream
# is timed over the shaped link first, and the simulator runs twice: at the
# link's nominal rate and at that measured goodput.
#
# Writes OUT/measured.csv, OUT/simulated.csv, OUT/simulated_goodput.csv
# (gradex result files), OUT/measured.txt (rank 0's table) and
# OUT/comparison.md.
#
# Usage: bash bench/two_hosts_netns.sh [BUILD_FOLDER] [OUT_FOLDER] [SCENARIO]
#   defaults: build/default results/two_hosts_netns scenarios/two_hosts.json
# Needs root (network namespaces).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${1:-build/default}"
out="${2:-results/two_hosts_netns}"
scenario="${3:-scenarios/two_hosts.json}"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "two_hosts_netns: $gradex not built" >&2; exit 2; }

# The scenario's inter-node rate in bits per second, for tc. (tc's "mbps"
# are megabytes per second, gradex's "Mbps" megabits: pass plain bits.)
bits=$(/usr/bin/python3 bench/two_hosts_report.py --link-bits "$scenario")

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
echo "two_hosts_netns: the link between the hosts shaped to ${bits} bit/s each way" >&2
bash scripts/two_hosts_netns.sh --build "$build" --rate "${bits}bit" --goodput --check \
  "$scenario" -- -o "$scratch/measured" > "$scratch/measured.txt" 2> "$scratch/netns.err" ||
  { cat "$scratch/netns.err" >&2; exit 1; }
cat "$scratch/netns.err" >&2
goodput=$(sed -n 's/^two_hosts_netns: bulk TCP from A to B: \([0-9]*\) bytes\/s$/\1/p' "$scratch/netns.err")
[ -n "$goodput" ] || { echo "two_hosts_netns: no goodput measured" >&2; exit 1; }
"$gradex" simulate "$scenario" -o "$scratch/simulated" > /dev/null
/usr/bin/python3 bench/two_hosts_report.py --with-rate "$scenario" "$goodput" > "$scratch/goodput.json"
"$gradex" simulate "$scratch/goodput.json" -o "$scratch/simulated_goodput" > /dev/null

mkdir -p "$out.tmp"
cp "$scratch/measured/results.csv" "$out.tmp/measured.csv"
cp "$scratch/simulated/results.csv" "$out.tmp/simulated.csv"
cp "$scratch/simulated_goodput/results.csv" "$out.tmp/simulated_goodput.csv"
cp "$scratch/measured.txt" "$out.tmp/measured.txt"
/usr/bin/python3 bench/two_hosts_report.py "$out.tmp" "$bits" "$goodput" > "$out.tmp/comparison.md"
rm -rf "$out"
mv "$out.tmp" "$out"
cat "$out/comparison.md"
