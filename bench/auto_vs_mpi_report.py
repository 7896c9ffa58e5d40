#!/usr/bin/python3
"""Compares auto with the single schemes it picks from and MPI_Allreduce.

Reads RUNS/round_<k>/results.csv (one mpirun each: auto, its candidates and
mpi), writes OUT/rounds.csv (every round's median time of every scheme at
every size) and OUT/ratios.md, per size:
  - auto's median time over the rounds against the best single scheme's
    (the scheme with the lowest median over the rounds: one fixed choice,
    as a user who knew the answer would make);
  - the median and range over the rounds of auto's time against that
    round's fastest scheme (a stricter bar: the least of seven noisy times
    is lower than any one scheme's typical time);
  - auto's bus bandwidth against MPI_Allreduce's (MPI's time over auto's),
    median and range over the rounds.

Usage: bench/auto_vs_mpi_report.py RUNS OUT
"""
import csv
import os
import sys

from transports_report import human, median, result_folders  # this folder's sibling report

BASELINE = "mpi"


def load(runs):
    """One row per round, size and scheme."""
    out = []
    for m, rows in result_folders(runs, r"round_(\d+)"):
        for r in rows:
            if r["wrong"] not in ("", "0"):
                sys.exit(f"auto_vs_mpi_report: {m.group(0)}: {r['scheme']} wrong at {r['bytes']} bytes")
            out.append({"round": int(m.group(1)), "bytes": int(r["bytes"]), "scheme": r["scheme"],
                        "time_s": float(r["time_s"]), "chose": r.get("chose", "")})
    if not out:
        sys.exit(f"auto_vs_mpi_report: no rounds in {runs}")
    return out


def table(rows):
    rounds = sorted({r["round"] for r in rows})
    lines = ["# auto, tuned, against the single schemes and MPI_Allreduce over tcp", "",
             f"4 workers as 4 processes on one 2-core machine, unshaped loopback, {len(rounds)} "
             "rounds (the order of the schemes rotated by one every round). Each time is the median of "
             "a run's timed iterations. Best single: the scheme with the lowest median over the "
             "rounds; per-round fastest: the least of the single schemes' times in each round "
             "(median and range of auto's ratio to it).", "",
             "| size | auto ran | best single | auto / best single | auto / per-round fastest "
             "(range) | auto busbw / MPI_Allreduce (range) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for size in sorted({r["bytes"] for r in rows}):
        at = [r for r in rows if r["bytes"] == size]
        by = {}
        for r in at:
            by.setdefault(r["scheme"], {})[r["round"]] = r["time_s"]
        if "auto" not in by or BASELINE not in by:
            sys.exit(f"auto_vs_mpi_report: auto or {BASELINE} missing at {size} bytes")
        singles = {s: t for s, t in by.items() if s not in ("auto", BASELINE)}
        best = min(singles, key=lambda s: median(list(singles[s].values())))
        auto = by["auto"]
        per_round = [auto[k] / min(t[k] for t in singles.values()) for k in rounds]
        vs_mpi = [by[BASELINE][k] / auto[k] for k in rounds]
        ran = sorted({r["chose"] for r in at if r["scheme"] == "auto"})
        lines.append(
            f"| {human(size)} | {', '.join(ran)} | {best} "
            f"| {median(list(auto.values())) / median(list(singles[best].values())):.2f} "
            f"| {median(per_round):.2f} ({min(per_round):.2f}-{max(per_round):.2f}) "
            f"| {median(vs_mpi):.2f} ({min(vs_mpi):.2f}-{max(vs_mpi):.2f}) |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    out = sys.argv[2]
    with open(os.path.join(out, "rounds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(table(rows))


if __name__ == "__main__":
    main()
