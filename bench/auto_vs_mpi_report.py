#!/usr/bin/python3
"""Compares auto with the fastest single scheme and MPI_Allreduce.

Reads RUNS/round_<k>/results.csv (one mpirun each: auto, its candidates and
mpi), writes OUT/rounds.csv (one row per round and size: every scheme's
median time) and OUT/ratios.md (per size, over the rounds: the median of
auto's time over the round's fastest single gradex scheme, and of MPI's
time over auto's, i.e. auto's busbw over MPI's, with their ranges).

Usage: bench/auto_vs_mpi_report.py RUNS OUT
"""
import csv
import os
import sys

from transports_report import human, median, result_folders  # this folder's sibling report

BASELINE = "mpi"


def load(runs):
    rounds = []
    for m, rows in result_folders(runs, r"round_(\d+)"):
        path = os.path.join(runs, m.group(0))
        for r in rows:
            if r["wrong"] not in ("", "0"):
                sys.exit(f"auto_vs_mpi_report: {path}: {r['scheme']} wrong at {r['bytes']} bytes")
        for size in sorted({int(r["bytes"]) for r in rows}):
            at = {r["scheme"]: r for r in rows if int(r["bytes"]) == size}
            if "auto" not in at or BASELINE not in at:
                sys.exit(f"auto_vs_mpi_report: {path}: auto or {BASELINE} missing at {size} bytes")
            singles = {s: float(r["time_s"]) for s, r in at.items() if s not in ("auto", BASELINE)}
            fastest = min(singles, key=singles.get)
            auto = float(at["auto"]["time_s"])
            rounds.append({"round": int(m.group(1)), "bytes": size, "auto_s": auto,
                           "auto_ran": at["auto"]["chose"], "fastest": fastest,
                           "fastest_s": singles[fastest], "mpi_s": float(at[BASELINE]["time_s"]),
                           "auto_over_fastest": auto / singles[fastest],
                           "busbw_over_mpi": float(at[BASELINE]["time_s"]) / auto})
    if not rounds:
        sys.exit(f"auto_vs_mpi_report: no rounds in {runs}")
    return rounds


def table(rounds):
    n = len({r["round"] for r in rounds})
    lines = ["# auto, tuned, against the fastest single scheme and MPI_Allreduce over tcp", "",
             f"4 workers as 4 processes on one 2-core machine, unshaped loopback, {n} rounds "
             "(the order of the schemes reversed every round). Each time is the median of a "
             "run's timed iterations; below, the median over the rounds of each round's "
             "ratio, and its range.", "",
             "| size | auto ran | auto / fastest single scheme | range | fastest (rounds) "
             "| auto busbw / MPI_Allreduce | range |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for size in sorted({r["bytes"] for r in rounds}):
        at = [r for r in rounds if r["bytes"] == size]
        a = [r["auto_over_fastest"] for r in at]
        b = [r["busbw_over_mpi"] for r in at]
        ran = sorted({r["auto_ran"] for r in at})
        fastest = sorted({r["fastest"] for r in at})
        lines.append(f"| {human(size)} | {', '.join(ran)} | {median(a):.2f} | {min(a):.2f}-{max(a):.2f} "
                     f"| {', '.join(fastest)} | {median(b):.2f} | {min(b):.2f}-{max(b):.2f} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rounds = load(sys.argv[1])
    out = sys.argv[2]
    with open(os.path.join(out, "rounds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rounds[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rounds)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(table(rounds))


if __name__ == "__main__":
    main()
