#!/usr/bin/env bash
# Builds the libFuzzer harnesses (preset "fuzz", clang-14 with ASan+UBSan)
# and runs each one for a bounded time, starting from its committed corpus
# (fuzz/corpus/<target>/; scenarios/ for the scenario parser). Fails,
# naming the saved input, when a harness crashes, leaks, hangs or
# allocates past the limits.
#   bash scripts/fuzz.sh        # 40 s per harness
#   bash scripts/fuzz.sh 600    # a longer hunt
# A finding worth keeping goes to tests/fuzz_regressions/<target>/, where
# the replay test runs it in every regular build.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-40}"
jobs="$(nproc)"
targets=(scenario frame_header hello ack idx)

bash scripts/setup.sh
cmake --preset fuzz
# The harnesses and what they link, not the command line tool.
cmake --build --preset fuzz -j "$jobs" --target "${targets[@]/#/fuzz_}"

runs=build/fuzz/runs
rm -rf "$runs"

# One harness: new inputs go to its own folder under build/ (listed first,
# so libFuzzer writes there), never into the committed corpus.
run_one() {
  local target=$1 work="$runs/$1"
  mkdir -p "$work/corpus" "$work/findings"
  local dict=()
  [ -f "fuzz/$target.dict" ] && dict=("-dict=fuzz/$target.dict")
  # The scenario parser's seeds are the shipped scenarios themselves.
  local seeds=()
  [ -d "fuzz/corpus/$target" ] && seeds+=("fuzz/corpus/$target")
  [ "$target" = scenario ] && seeds+=(scenarios)
  local rc=0
  # -max_total_time ends a healthy run; the wall timeout ends a stuck one.
  timeout --kill-after=10 $((seconds + 120)) "build/fuzz/fuzz/fuzz_$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 -artifact_prefix="$work/findings/" "${dict[@]}" \
    "$work/corpus" "${seeds[@]}" >"$work/log" 2>&1 || rc=$?
  echo "$rc" >"$work/rc"
}

# As many harnesses at once as there are cores.
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "fuzz: $target for $seconds s"
  run_one "$target" &
done
wait

failed=0
for target in "${targets[@]}"; do
  work="$runs/$target"
  rc=$(cat "$work/rc")
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' || true)
  if [ "$rc" -eq 0 ] && [ -z "$(ls -A "$work/findings")" ]; then
    echo "fuzz: $target ok (${execs:-?} inputs)"
    continue
  fi
  failed=1
  [ "$rc" -eq 124 ] && echo "fuzz: $target did not stop within its wall timeout" >&2
  echo "fuzz: $target FAILED (exit $rc); log: $work/log" >&2
  grep -E '^(==[0-9]+==ERROR|SUMMARY|terminate called|  what\(\))' "$work/log" | head -5 >&2 || true
  for f in "$work/findings"/*; do
    [ -e "$f" ] && echo "fuzz: $target input: $f" >&2
  done
done
exit "$failed"
