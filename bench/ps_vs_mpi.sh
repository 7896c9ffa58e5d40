#!/usr/bin/env bash
# The parameter server over gradex's TCP transport against the MPI
# library's central-server pattern, MPI_Reduce + MPI_Bcast
# (scenarios/bench_ps_vs_mpi.json): the pipelined PS with one dedicated
# server and with one per worker, and BytePS's hybrid placement, 1 to 64
# MiB, 4 workers, unshaped on loopback. ROUNDS rounds (default 6), each two
# mpiruns (one per placement) running the schemes and MPI one after the
# other, the order reversed every round: on a shared 2-core machine which
# run goes first, and when, moves times by more than they
# differ. MPI is held to its TCP transport over loopback (--mca btl
# tcp,self), as gradex's transports are.
#
# Writes OUT/rounds.csv (every round's times) and OUT/ratios.md (per scheme
# and size: the median busbw ratio to MPI_Reduce+Bcast over the rounds,
# its range, and the rounds gradex was at least as fast).
#
# Usage: bash bench/ps_vs_mpi.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/bench_ps_vs_mpi
#   environment: ROUNDS (default 6)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/bench_ps_vs_mpi}"

cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "ps_vs_mpi: $gradex not built" >&2; exit 2; }
command -v mpirun > /dev/null || { echo "ps_vs_mpi: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
"$gradex" list | grep '^ *mpi_reduce_bcast ' > /dev/null || { echo "ps_vs_mpi: $gradex was built without MPI" >&2; exit 2; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# mpirun refuses root unless told; the container's user is root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

rounds="${ROUNDS:-6}"
workers=4
# Two placements, each in an mpirun of its own with MPI beside it: one
# dedicated server (the pipelined PS and the hybrid's extra server), and
# as many dedicated servers as workers, BytePS's placement at which its
# Theorem 1 gives S/B (the hybrid then holds no keys on its workers, so
# only the pipelined PS runs there).
for (( k = 1; k <= rounds; k++ )); do
  placements="1 $workers"
  (( k % 2 == 0 )) && placements="$workers 1"
  for servers in $placements; do
    order=ps_pipelined,ps_hybrid,mpi_reduce_bcast
    (( servers > 1 )) && order=ps_pipelined,mpi_reduce_bcast
    (( k % 2 == 0 )) && order=$(echo "$order" | tr ',' '\n' | tac | paste -sd,)
    port=$(( 29000 + RANDOM % 20000 ))
    echo "ps_vs_mpi: round $k of $rounds, $servers dedicated server(s) ($order)" >&2
    # The PS's dedicated servers idle while MPI runs.
    timeout 900 mpirun -n $(( workers + servers )) --oversubscribe --bind-to none \
      --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo \
      -x GRADEX_RENDEZVOUS="127.0.0.1:$port" -x GRADEX_TOKEN="bench$port" \
      "$gradex" launch scenarios/bench_ps_vs_mpi.json --transport tcp \
      --workers "$workers" --servers "$servers" --schemes "$order" -q \
      -o "$scratch/round_${k}_servers$servers" > /dev/null
  done
done

mkdir -p "$out.tmp"
/usr/bin/python3 bench/versus_baseline_report.py "$scratch" "$out.tmp" mpi_reduce_bcast \
  "The parameter server over tcp against MPI_Reduce + MPI_Bcast" \
  "4 workers, unshaped on loopback, every process on one 2-core machine (oversubscribed: 5 or 8 processes)."
rm -rf "$out"
mv "$out.tmp" "$out"
echo "ps_vs_mpi: wrote $out" >&2
