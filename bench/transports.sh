#!/usr/bin/env bash
# gradex's schemes over real processes against the MPI library, in one run:
# ring, tree, halving-doubling, hierarchical and PS over tcp and over zmq,
# and MPI_Allreduce (scheme mpi) and MPI_Reduce + MPI_Bcast beside them,
# at 2, 4 and 8 workers and 4 KiB to 64 MiB (scenarios/bench_transports.json).
# Every run is started by mpirun, so the MPI baselines share the processes,
# the machine and the moment with gradex's schemes. MPI is held to its TCP
# transport over loopback (--mca btl tcp,self), as gradex's transports are.
#
# Then, at each worker count, the ring over tcp and MPI_Allreduce head to
# head (scenarios/bench_head_to_head.json: 4 KiB, 16 and 64 MiB) for
# ROUNDS rounds (default 6), the two in one mpirun each round, the order
# swapped every round: in the sweep above MPI always runs last, minutes
# after the ring, and on a shared 2-core machine which of two runs goes
# first, and when, moves their times by more than they differ.
#
# Writes OUT/results.csv (every row, with a transport column), OUT/ratios.md
# (ring over tcp against MPI_Allreduce, per size, from the sweep and head
# to head), OUT/head_to_head.csv (every round) and OUT/busbw_4_workers.png.
#
# Usage: bash bench/transports.sh [BUILD_FOLDER] [OUT_FOLDER] [WORKERS...]
#   defaults: build/default results/bench_transports 2 4 8
#   environment: ROUNDS (head-to-head rounds, default 6)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/bench_transports}"
shift $(( $# < 2 ? $# : 2 ))
workers=("$@")
[ ${#workers[@]} -gt 0 ] || workers=(2 4 8)

cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "transports: $gradex not built" >&2; exit 2; }
command -v mpirun > /dev/null || { echo "transports: mpirun not found (scripts/setup.sh installs Open MPI)" >&2; exit 2; }
"$gradex" list | grep '^ *mpi ' > /dev/null || { echo "transports: $gradex was built without MPI" >&2; exit 2; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# mpirun refuses root unless told; the container's user is root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

schemes_gradex="ring,tree,halving_doubling,recursive_doubling,hierarchical,ps"
for n in "${workers[@]}"; do
  for transport in tcp zmq; do
    schemes="$schemes_gradex"
    # The MPI baselines ignore gradex's transport: measure them once.
    [ "$transport" = tcp ] && schemes="$schemes,mpi,mpi_reduce_bcast"
    port=$(( 29000 + RANDOM % 20000 ))
    echo "transports: $n workers over $transport" >&2
    # n workers + the PS's dedicated server.
    timeout 1800 mpirun -n $(( n + 1 )) --oversubscribe --bind-to none \
      --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo \
      -x GRADEX_RENDEZVOUS="127.0.0.1:$port" -x GRADEX_TOKEN="bench$port" \
      "$gradex" launch scenarios/bench_transports.json --transport "$transport" \
      --workers "$n" --schemes "$schemes" -q -o "$scratch/${transport}_$n" \
      > "$scratch/${transport}_$n.txt"
  done
done

rounds="${ROUNDS:-6}"
for n in "${workers[@]}"; do
  for (( k = 1; k <= rounds; k++ )); do
    order=ring,mpi
    (( k % 2 == 0 )) && order=mpi,ring
    port=$(( 29000 + RANDOM % 20000 ))
    echo "transports: $n workers, head to head, round $k of $rounds ($order)" >&2
    timeout 600 mpirun -n "$n" --oversubscribe --bind-to none \
      --mca btl tcp,self --mca pml ob1 --mca btl_tcp_if_include lo \
      -x GRADEX_RENDEZVOUS="127.0.0.1:$port" -x GRADEX_TOKEN="bench$port" \
      "$gradex" launch scenarios/bench_head_to_head.json --transport tcp \
      --workers "$n" --schemes "$order" -q -o "$scratch/head_to_head/${n}_$k" > /dev/null
  done
done

mkdir -p "$out.tmp"
/usr/bin/python3 bench/transports_report.py "$scratch" "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
cat "$out/ratios.md"
