#!/usr/bin/env bash
# How the simulator scales: wall time and peak memory of `gradex simulate`
# for a 1 GB all-reduce over the 200 Gbps InfiniBand preset (one NIC per
# rank, 1 MiB segments, one iteration, no warm-up), per scheme and rank
# count, as /usr/bin/time -v reports them. Simulated time does not depend
# on the machine; wall time does (say how loaded it was beside the table).
#
# Writes OUT/scale.csv: scheme, ranks, simulated_ranks, wall_s, peak_rss_mib,
# rss_per_rank_kib (per simulated rank), simulated_ms, and the engine's
# counts from results.json: messages (sends posted) and peak_operations
# (the most sends and receives open at once, world-wide), the same on every
# machine; then servers (ps.servers, empty for a scheme without).
#
# Usage: bash bench/sim_scale.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/sim_scale
#   environment: RUNS, a space-separated list of scheme:ranks, or
#   scheme:ranks:M for a symmetric subset of M simulated ranks standing for
#   all (--symmetric-subset), or scheme:ranks:M:K for K parameter servers
#   (M may be empty; a PS has 1 unless told: ps_colocated:4096::4096 is a
#   server on every worker). Default: the ring at 1,024, 2,048 and 4,096
#   ranks, the dedicated PS at 1,024 to 16,384, the tree and the pipelined
#   PS at 1,024, and the ring's 64-rank subset at 1,024 (to set beside the
#   full run) up to 65,536 ranks.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/sim_scale}"
runs="${RUNS:-ring:1024 ring:2048 ring:4096 ps:1024 ps:4096 ps:16384 tree:1024 ps_pipelined:1024 ring:1024:64 ring:4096:64 ring:16384:64 ring:65536:64}"
cd "$root"
# OpenBLAS's pthread build (Debian's default) starts a thread pool as it
# loads unless told one thread, and once a process has a second thread
# every std::shared_ptr reference is counted atomically. gradex opens the
# library only for the MLP (train/blas.h); a build that linked it started
# the pool before main, and this keeps such builds comparable
# (results/README.md, "sim_scale"). A value already set is kept.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "sim_scale: $gradex not built" >&2; exit 2; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# gradex refuses a flag no scheme of the run reads; `gradex list` names
# the schemes that read each.
readers() { "$gradex" list | sed -n "s/^  $1 *//p" | tr -d ' '; }
segment_readers=",$(readers 'segment_bytes (--segment)'),"
servers_readers=",$(readers 'ps.servers (--servers)'),"

echo "scheme,ranks,simulated_ranks,wall_s,peak_rss_mib,rss_per_rank_kib,simulated_ms,messages,peak_operations,servers" > "$scratch/scale.csv"
for run in $runs; do
  IFS=: read -r scheme ranks subset server_count <<< "$run"
  subset_flag=()
  simulated_ranks="$ranks"
  if [ -n "$subset" ]; then
    subset_flag=(--symmetric-subset "$subset")
    simulated_ranks="$subset"
  fi
  servers=()
  case "$servers_readers" in *",$scheme,"*) server_count="${server_count:-1}"; servers=(--servers "$server_count") ;; esac
  if [ -n "$server_count" ] && [ ${#servers[@]} -eq 0 ]; then
    echo "sim_scale: $scheme reads no ps.servers ($run)" >&2
    exit 2
  fi
  segment=()
  case "$segment_readers" in *",$scheme,"*) segment=(--segment 1MiB) ;; esac
  /usr/bin/time -f "%e %M" -o "$scratch/time" \
    "$gradex" simulate -s "$scheme" -n "$ranks" -b 1G --link ib_hdr_200g "${segment[@]}" \
    "${servers[@]}" "${subset_flag[@]}" -q -o "$scratch/run" > /dev/null
  read -r wall rss_kib < "$scratch/time"
  simulated="$(/usr/bin/python3 -c 'import json, sys
row = json.load(open(sys.argv[1]))["results"][0]
print("%.3f,%d,%d" % (row["time_s"] * 1e3, row["engine"]["messages"], row["engine"]["peak_operations"]))' "$scratch/run/results.json")"
  echo "$scheme,$ranks,$simulated_ranks,$wall,$((rss_kib / 1024)),$((rss_kib / simulated_ranks)),$simulated,$server_count" |
    tee -a "$scratch/scale.csv"
done
mkdir -p "$out"
cp "$scratch/scale.csv" "$out/scale.csv"
echo "sim_scale: wrote $out/scale.csv"
