#!/usr/bin/env bash
# What a small message costs on each process transport: the ring's 4 KiB
# all-reduce on 4 processes (`gradex launch -n 4`, loopback, unshaped:
# scenarios/ring_small_messages.json), over tcp and over zmq, in ROUNDS
# rounds (default 6) whose order alternates (tcp first in odd rounds, zmq
# first in even ones): on a shared 2-core machine which run goes first, and
# when, moves single runs more than the transports differ. With BASELINE set
# to another gradex binary, each round also runs zmq on it, to set a change
# against what it replaced.
#
# Writes OUT/rounds.csv (every run's median time), OUT/summary.md (per
# transport: the median of the rounds' medians and their range, and the
# zmq/tcp ratio per round) and OUT/message_latency.txt: one 1 KiB message
# between two processes over raw TCP and over libzmq, sleeping and polling
# (bench/message_latency.cpp), which says what ZeroMQ itself costs.
#
# Usage: bash bench/small_messages.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/small_messages
#   environment: ROUNDS (default 6), BASELINE (a gradex binary; optional)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/small_messages}"
rounds="${ROUNDS:-6}"
cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "small_messages: $gradex not built" >&2; exit 2; }
[ -x "$build/bench/gradex_message_latency" ] || { echo "small_messages: $build/bench/gradex_message_latency not built" >&2; exit 2; }
if [ -n "${BASELINE:-}" ] && [ ! -x "$BASELINE" ]; then
  echo "small_messages: BASELINE=$BASELINE is not an executable" >&2
  exit 2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# One run: the median time of the ring at 4 KiB, in microseconds.
run_one() {  # binary transport
  local dir="$scratch/run"
  rm -rf "$dir"
  "$1" launch -n 4 scenarios/ring_small_messages.json --transport "$2" -q -o "$dir" > /dev/null
  /usr/bin/python3 -c 'import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print("%.1f" % (float(row["time_s"]) * 1e6))' "$dir/results.csv"
}

mkdir -p "$scratch/out"
echo "round,order,binary,transport,median_us" > "$scratch/out/rounds.csv"
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then order=(tcp zmq); else order=(zmq tcp); fi
  for t in "${order[@]}"; do
    us=$(run_one "$gradex" "$t")
    echo "$round,${order[0]}-first,current,$t,$us" >> "$scratch/out/rounds.csv"
    echo "small_messages: round $round $t ${us} us" >&2
  done
  if [ -n "${BASELINE:-}" ]; then
    us=$(run_one "$BASELINE" zmq)
    echo "$round,${order[0]}-first,baseline,zmq,$us" >> "$scratch/out/rounds.csv"
    echo "small_messages: round $round baseline zmq ${us} us" >&2
  fi
done

/usr/bin/python3 - "$scratch/out" "$rounds" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(f"{out}/rounds.csv")))
def series(binary, transport):
    return [float(r["median_us"]) for r in rows if r["binary"] == binary and r["transport"] == transport]
lines = ["# ring, 4 KiB, 4 processes over loopback: median time per run (us)", "",
         "| binary | transport | median of rounds | range | rounds |", "| --- | --- | --- | --- | --- |"]
for binary, transport in [("current", "tcp"), ("current", "zmq"), ("baseline", "zmq")]:
    s = series(binary, transport)
    if s:
        lines.append(f"| {binary} | {transport} | {statistics.median(s):.1f} | {min(s):.1f}-{max(s):.1f} | {len(s)} |")
tcp, zmq = series("current", "tcp"), series("current", "zmq")
ratios = [z / t for z, t in zip(zmq, tcp)]
lines += ["", f"zmq / tcp per round: {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"median {statistics.median(ratios):.2f}"]
base = series("baseline", "zmq")
if base:
    change = [b / z for b, z in zip(base, zmq)]
    lines.append(f"baseline zmq / current zmq per round: {', '.join(f'{c:.2f}' for c in change)}; "
                 f"median {statistics.median(change):.2f}")
open(f"{out}/summary.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
"$build/bench/gradex_message_latency" 2000 | tee "$scratch/out/message_latency.txt"
mkdir -p "$out"
cp "$scratch/out/rounds.csv" "$scratch/out/summary.md" "$scratch/out/message_latency.txt" "$out/"
echo "small_messages: wrote $out/rounds.csv, summary.md and message_latency.txt" >&2
