#!/usr/bin/env bash
# auto, tuned, against the fastest single scheme and MPI_Allreduce over tcp
# processes (scenarios/bench_auto.json: 4 workers, 4 KiB to 64 MiB).
#   1. gradex tune --processes measures auto's candidates over tcp, one
#      process per rank as gradex launch runs them, and writes tuned.json;
#   2. ROUNDS rounds (default 9), each one mpirun running auto with that
#      table, every candidate and MPI_Allreduce one after the other, the
#      order rotated by one every round: the first and the last run of a
#      process are not like the others (start-up, then the machine's state
#      after minutes of runs), and over 9 rounds each of the 9 takes every
#      place once. MPI is held to its TCP transport over loopback
#      (--mca btl tcp,self), as gradex's transports are.
#
# Writes OUT/tuned.json (the table) and tune.txt (what tune printed),
# OUT/rounds.csv (every round's median time of every scheme) and
# OUT/ratios.md (per size: auto against the best single scheme and each
# round's fastest, and MPI_Allreduce's time over auto's).
#
# Usage: bash bench/auto_vs_mpi.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/bench_auto
#   environment: ROUNDS (default 9)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/bench_auto}"

cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "auto_vs_mpi: $gradex not built" >&2; exit 2; }
command -v mpirun > /dev/null || { echo "auto_vs_mpi: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
"$gradex" list | grep '^ *mpi ' > /dev/null || { echo "auto_vs_mpi: $gradex was built without MPI" >&2; exit 2; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "auto_vs_mpi: tuning" >&2
"$gradex" tune scenarios/bench_auto.json --processes -o "$scratch/tuned" > "$scratch/tune.txt"
# The candidates, as tune measured them; the scenario with the table.
candidates=$(/usr/bin/python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
print(",".join(sorted(t["choices"][0]["seconds"])))' "$scratch/tuned/tuned.json")
/usr/bin/python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
s["auto"] = {"table": sys.argv[2]}
json.dump(s, open(sys.argv[3], "w"))' scenarios/bench_auto.json "$scratch/tuned/tuned.json" \
  "$scratch/bench_auto_tuned.json"

rounds="${ROUNDS:-9}"
workers=4
IFS=, read -r -a schemes <<< "auto,$candidates,mpi"
for (( k = 1; k <= rounds; k++ )); do
  # Round k starts at the k-th scheme and wraps around.
  order=$(for (( i = 0; i < ${#schemes[@]}; i++ )); do
            echo "${schemes[(i + k - 1) % ${#schemes[@]}]}"
          done | paste -sd,)
  port=$(( 29000 + RANDOM % 20000 ))
  echo "auto_vs_mpi: round $k of $rounds ($order)" >&2
  timeout 1800 mpirun -n "$workers" --oversubscribe --bind-to none \
    --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo \
    -x GRADEX_RENDEZVOUS="127.0.0.1:$port" -x GRADEX_TOKEN="bench$port" \
    "$gradex" launch "$scratch/bench_auto_tuned.json" --transport tcp \
    --workers "$workers" --schemes "$order" -q -o "$scratch/round_$k" > /dev/null
done

mkdir -p "$out.tmp"
cp "$scratch/tuned/tuned.json" "$scratch/tune.txt" "$out.tmp/"
/usr/bin/python3 bench/auto_vs_mpi_report.py "$scratch" "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "auto_vs_mpi: wrote $out" >&2
