#!/usr/bin/env bash
# DDP, ZeRO-2 and ZeRO-3 on the simulator: scenarios/sim_train_zero.json
# (a GPT-2 small step on 8 to 1,024 simulated DGX A100 GPUs) run as it is
# (replicated) and with its workload's "zero" set to 2 and to 3, one run
# each (the simulated times do not depend on this machine).
#
# Writes OUT/{ddp,zero2,zero3}.json (each stage's scenario),
# OUT/{ddp,zero2,zero3}/ (its output.txt, results.csv and results.json) and
# OUT/summary.md, a table per scheme and worker count of
# the step time, the exposed communication, the bytes a worker sends per
# step and the parameters it holds at most.
#
# Usage: bash bench/sim_train_zero.sh [BUILD_FOLDER] [OUT_FOLDER]
#   defaults: build/default results/sim_train_zero
#   environment: SCHEMES and WORKERS, JSON lists that replace the
#   scenario's "schemes" and "workers" (e.g. SCHEMES='["tree"]'
#   WORKERS='[8, 64, 256]').
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build/default}"
out="${2:-results/sim_train_zero}"
cd "$root"
gradex="$build/gradex"
[ -x "$gradex" ] || { echo "sim_train_zero: $gradex not built" >&2; exit 2; }
mkdir -p "$out"

# Each stage's scenario is kept beside its results, so that the command in
# its results.json can be run again as it stands.
for stage in 0 2 3; do
  name="ddp"
  [ "$stage" = 0 ] || name="zero$stage"
  SCHEMES="${SCHEMES:-}" WORKERS="${WORKERS:-}" \
  /usr/bin/python3 - scenarios/sim_train_zero.json "$out/$name.json" "$stage" "$out/$name" <<'PY'
import json, os, sys
scenario = json.load(open(sys.argv[1]))
scenario["workload"]["zero"] = int(sys.argv[3])
scenario["output"] = sys.argv[4]
for field in ("schemes", "workers"):
    if os.environ[field.upper()]:
        scenario[field] = json.loads(os.environ[field.upper()])
# gradex refuses hierarchical.inter where no hierarchical scheme runs.
if "hierarchical" not in scenario["schemes"]:
    scenario.pop("hierarchical", None)
with open(sys.argv[2], "w") as f:
    json.dump(scenario, f, indent=2)
    f.write("\n")
PY
  echo "sim_train_zero: $name" >&2
  "$gradex" run "$out/$name.json" > "$out/$name.txt"
  mv "$out/$name.txt" "$out/$name/output.txt"
done

/usr/bin/python3 - "$out" > "$out/summary.md" <<'PY'
import json, sys
runs = {}
for name in ("ddp", "zero2", "zero3"):
    for r in json.load(open(f"{sys.argv[1]}/{name}/results.json"))["runs"]:
        scheme = r["scheme"].split(" zero-")[0]
        runs[(scheme, r["workers"], name)] = r
schemes = list(dict.fromkeys(k[0] for k in runs))
workers = sorted({k[1] for k in runs})
mib = 1 << 20
print("step ms / exposed ms; MiB sent per worker per step; MiB of parameters held at most per worker\n")
print("| scheme | workers | DDP | ZeRO-2 | ZeRO-3 | sent DDP / Z2 / Z3 | params held DDP / Z3 |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for s in schemes:
    for n in workers:
        cells = [runs[(s, n, k)] for k in ("ddp", "zero2", "zero3")]
        times = ["%.2f / %.2f" % (c["iteration_s"] * 1e3, c["exposed_s"] * 1e3) for c in cells]
        sent = " / ".join("%.0f" % (c["wire_bytes_sent_per_step"] / mib) for c in cells)
        held = "%.0f / %.0f" % (cells[0]["parameter_bytes_per_worker"] / mib,
                                cells[2]["parameter_bytes_per_worker"] / mib)
        print(f"| {s} | {n:,} | " + " | ".join(times) + f" | {sent} | {held} |")
PY
cat "$out/summary.md"
echo "sim_train_zero: wrote $out" >&2
