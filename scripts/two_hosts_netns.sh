#!/usr/bin/env bash
# Runs the README's two-host recipe across two Linux network namespaces, A
# and B, joined by a veth pair: each "host" has its own network stack, its
# own address (10.99.0.1, 10.99.0.2) and its own loopback, and every byte
# between them crosses a (virtual) NIC instead of the loopback device.
# Ranks 0-1 run in A and ranks 2-3 in B, started from GRADEX_* variables
# exactly as on two machines; rank 0's table is printed.
#
# --rate shapes the link between the hosts with the kernel (a token-bucket
# qdisc, tbf, on each end of the veth), which is how a run across hosts is
# shaped: gradex's own shaping needs one clock for the whole group, so the
# ranks then run with --unshaped.
#
# Usage: bash scripts/two_hosts_netns.sh [options] SCENARIO [-- EXTRA LAUNCH ARGS]
#   --build DIR    gradex's build folder (default build/default)
#   --rate R       the link's rate each way, in tc's units (e.g. 2gbit;
#                  tc's "mbps" are megabytes per second)
#   --mtu BYTES    the link's MTU (default 9000, a cluster's jumbo frames;
#                  1500 spends 4% of a shaped link on packet headers)
#   --goodput      first time one bulk TCP stream from A to B (500 MB;
#                  bench/tcp_goodput.py) and print its payload rate
#   --check        exit 1 unless every rank succeeded and no value was wrong
# Needs root and `ip netns`; exits 77 when they are missing (tests skip).
# The namespaces are removed on exit, whatever happens.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build/default"
rate="" mtu=9000 check=0 goodput=0 scenario=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --mtu) mtu="$2"; shift 2 ;;
    --goodput) goodput=1; shift ;;
    --check) check=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "two_hosts_netns: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$scenario" ] || { echo "two_hosts_netns: one scenario only ($scenario, $1)" >&2; exit 2; }
       scenario="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; shift ;;
  esac
done
[ -n "$scenario" ] || { echo "two_hosts_netns: usage: $0 [--build DIR] [--rate R] [--mtu BYTES] [--goodput] [--check] SCENARIO [-- ARGS]" >&2; exit 2; }
[ -f "$scenario" ] || { echo "two_hosts_netns: no scenario at $scenario" >&2; exit 2; }
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "two_hosts_netns: $gradex not built" >&2; exit 2; }

if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null; then
  echo "two_hosts_netns: needs root and iproute2's ip; skipped" >&2
  exit 77
fi

# Names unique to this run, so parallel runs do not meet (interface names
# hold at most 15 characters).
tag="$$"
ns_a="gradex-a-$tag" ns_b="gradex-b-$tag"
if_a="gxa$tag" if_b="gxb$tag"
scratch="$(mktemp -d)"
cleanup() {
  ip netns del "$ns_a" 2> /dev/null || true
  ip netns del "$ns_b" 2> /dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
if ! ip netns add "$ns_a" 2> "$scratch/netns.err"; then
  echo "two_hosts_netns: cannot create a network namespace ($(cat "$scratch/netns.err")); skipped" >&2
  exit 77
fi
ip netns add "$ns_b"
# The pair is created inside the namespaces: the machine's own network is
# not touched.
ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b"
ip -n "$ns_a" addr add 10.99.0.1/24 dev "$if_a"
ip -n "$ns_b" addr add 10.99.0.2/24 dev "$if_b"
for pair in "$ns_a $if_a" "$ns_b $if_b"; do
  set -- $pair
  ip -n "$1" link set lo up
  ip -n "$1" link set "$2" mtu "$mtu" up
  if [ -n "$rate" ]; then
    # burst: the bucket, one largest (GSO) packet, so that a message cannot
    # leave faster than the rate (with 1 MB, 1 MiB messages went out 30%
    # faster than the link); latency: how long a packet may queue before it
    # is dropped, long enough that TCP never backs off (the counters printed
    # at the end show the drops).
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 64kb latency 200ms
  fi
done
echo "two_hosts_netns: host A = namespace $ns_a (10.99.0.1), host B = $ns_b (10.99.0.2)${rate:+, link $rate each way}" >&2

if [ $goodput -eq 1 ]; then
  ip netns exec "$ns_b" timeout 60 /usr/bin/python3 "$root/bench/tcp_goodput.py" receive 10.99.0.2 29600 \
    > "$scratch/goodput" &
  receiver=$!
  ip netns exec "$ns_a" timeout 60 /usr/bin/python3 "$root/bench/tcp_goodput.py" send 10.99.0.2 29600 500
  wait $receiver
  echo "two_hosts_netns: bulk TCP from A to B: $(cat "$scratch/goodput") bytes/s" >&2
fi

# The README's recipe, verbatim but for the addresses.
export GRADEX_WORLD_SIZE=4 GRADEX_RENDEZVOUS=10.99.0.1:29500 GRADEX_TOKEN="netns$tag" GRADEX_BIND=0.0.0.0
pids=()
for r in 0 1 2 3; do
  if [ $r -lt 2 ]; then ns="$ns_a" host=10.99.0.1; else ns="$ns_b" host=10.99.0.2; fi
  out=/dev/null
  [ $r -eq 0 ] && out="$scratch/rank0.txt"
  GRADEX_ADVERTISE=$host GRADEX_RANK=$r ip netns exec "$ns" \
    "$gradex" launch -n 4 --transport tcp "$scenario" ${rate:+--unshaped} "${extra[@]}" \
    > "$out" 2> "$scratch/rank$r.err" &
  pids+=($!)
done
failed=0
for r in 0 1 2 3; do
  if ! wait "${pids[$r]}"; then
    failed=1
    echo "two_hosts_netns: rank $r failed:" >&2
    sed 's/^/  /' "$scratch/rank$r.err" >&2
  fi
done
cat "$scratch/rank0.txt"
if [ -n "$rate" ]; then
  # What the shaper did: bytes sent, drops (each one makes TCP back off).
  for pair in "$ns_a $if_a" "$ns_b $if_b"; do
    set -- $pair
    echo "two_hosts_netns: $2: $(ip netns exec "$1" tc -s qdisc show dev "$2" | sed -n 's/^ *Sent/Sent/p')" >&2
  done
fi
[ $failed -eq 0 ] || exit 1
if [ $check -eq 1 ]; then
  grep -q "launched: 4 processes over tcp (ranks from GRADEX variables)" "$scratch/rank0.txt" ||
    { echo "two_hosts_netns: rank 0 did not join from GRADEX variables" >&2; exit 1; }
  grep -q "Out of bounds values : 0 OK" "$scratch/rank0.txt" ||
    { echo "two_hosts_netns: wrong values" >&2; exit 1; }
fi
