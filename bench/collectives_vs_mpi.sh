#!/usr/bin/env bash
# gradex's reduce-scatter, all-gather and broadcast over its TCP transport
# against the MPI library's MPI_Reduce_scatter, MPI_Allgatherv and
# MPI_Bcast (scenarios/bench_collectives.json: 4 workers, 64 KiB to 16
# MiB, unshaped on loopback). ROUNDS rounds (default 4), each one mpirun
# per collective running its gradex providers and mpi one after the
# other, the order reversed every round: on a shared 2-core machine which run goes
# first, and when, moves times by more than they differ. MPI is held to its
# TCP transport over loopback (--mca btl tcp,self), as gradex's are.
#
# Writes OUT/rounds.csv (every round's times) and OUT/ratios.md (per
# collective, scheme and size: the median busbw ratio to MPI over the
# rounds, its range, and the rounds gradex was at least as fast).
#
# Usage: bash bench/collectives_vs_mpi.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/bench_collectives
#   environment: ROUNDS (default 4)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/bench_collectives}"

cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "collectives_vs_mpi: $gradex not built" >&2; exit 2; }
command -v mpirun > /dev/null || { echo "collectives_vs_mpi: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
"$gradex" list | grep '^ *mpi ' > /dev/null || { echo "collectives_vs_mpi: $gradex was built without MPI" >&2; exit 2; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# mpirun refuses root unless told; the container's user is root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

rounds="${ROUNDS:-4}"
workers=4
# Each collective's gradex providers (gradex list).
declare -A providers=([reduce_scatter]=ring,halving_doubling [all_gather]=ring,halving_doubling
                      [broadcast]=ring,tree)
for (( k = 1; k <= rounds; k++ )); do
  for collective in reduce_scatter all_gather broadcast; do
    order="${providers[$collective]},mpi"
    (( k % 2 == 0 )) && order="mpi,$(echo "${providers[$collective]}" | tr ',' '\n' | tac | paste -sd,)"
    port=$(( 29000 + RANDOM % 20000 ))
    echo "collectives_vs_mpi: round $k of $rounds, $collective ($order)" >&2
    timeout 900 mpirun -n "$workers" --oversubscribe --bind-to none \
      --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo \
      -x GRADEX_RENDEZVOUS="127.0.0.1:$port" -x GRADEX_TOKEN="bench$port" \
      "$gradex" launch scenarios/bench_collectives.json --transport tcp --collective "$collective" \
      --workers "$workers" --schemes "$order" -q -o "$scratch/round_${k}_$collective" > /dev/null
  done
done

mkdir -p "$out.tmp"
/usr/bin/python3 bench/versus_baseline_report.py "$scratch" "$out.tmp" mpi \
  "gradex's collectives over tcp against MPI_Reduce_scatter, MPI_Allgatherv and MPI_Bcast" \
  "4 workers, unshaped on loopback, every process on one 2-core machine (oversubscribed: 4 processes on 2 cores)."
rm -rf "$out"
mv "$out.tmp" "$out"
echo "collectives_vs_mpi: wrote $out" >&2
