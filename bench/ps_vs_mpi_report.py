#!/usr/bin/python3
"""Compares the PS rounds of bench/ps_vs_mpi.sh with MPI_Reduce + MPI_Bcast.

Reads RUNS/round_<k>/results.csv (one mpirun each: gradex's PS schemes and
mpi_reduce_bcast), writes OUT/rounds.csv (one row per round, scheme and
size: the scheme's and MPI's median times and their ratio) and
OUT/ratios.md (per scheme and size, over the rounds: the median busbw
ratio to MPI_Reduce+Bcast, its range, the rounds gradex was at least as
fast). All three schemes count bus bandwidth with the same factor, so the
busbw ratio is MPI's time over the scheme's.

Usage: bench/ps_vs_mpi_report.py RUNS OUT
"""
import csv
import os
import sys

from transports_report import human, median, result_folders  # this folder's sibling report

BASELINE = "mpi_reduce_bcast"


def load(runs):
    out = []
    for m, rows in result_folders(runs, r"round_(\d+)"):
        name = m.group(0)
        order = []
        for r in rows:
            if r["scheme"] not in order:
                order.append(r["scheme"])
        by = {(r["scheme"], int(r["bytes"])): float(r["time_s"]) for r in rows}
        for (scheme, size), t in sorted(by.items()):
            if scheme == BASELINE:
                continue
            base = by.get((BASELINE, size))
            if base is None:
                sys.exit(f"ps_vs_mpi_report: {name}: {BASELINE} missing at {size} bytes")
            out.append({"round": int(m.group(1)), "order": " ".join(order), "scheme": scheme,
                        "bytes": size, "time_s": t, "mpi_time_s": base, "busbw_ratio": base / t})
    if not out:
        sys.exit(f"ps_vs_mpi_report: no rounds in {runs}")
    return out


def table(rounds):
    lines = ["# The parameter server over tcp against MPI_Reduce + MPI_Bcast", "",
             "4 workers, unshaped on loopback, every process on one 2-core machine "
             "(oversubscribed: 5 processes). busbw ratio = MPI_Reduce+Bcast time / the "
             "scheme's time (above 1: gradex is faster), each the median of its run's timed "
             "iterations; median and range over the rounds, the order of the three reversed "
             "every round.", "",
             "| scheme | size | rounds | median busbw ratio | min | max | rounds at least as "
             "fast | every round's ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for scheme in sorted({r["scheme"] for r in rounds}):
        for size in sorted({r["bytes"] for r in rounds if r["scheme"] == scheme}):
            mine = sorted((r for r in rounds if r["scheme"] == scheme and r["bytes"] == size),
                          key=lambda r: r["round"])
            ratios = [r["busbw_ratio"] for r in mine]
            wins = sum(x >= 1 for x in ratios)
            lines.append(f"| {scheme} | {human(size)} | {len(ratios)} | {median(ratios):.2f} "
                         f"| {min(ratios):.2f} | {max(ratios):.2f} | {wins} of {len(ratios)} "
                         f"| {' '.join(f'{x:.2f}' for x in ratios)} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs, out = sys.argv[1], sys.argv[2]
    rounds = load(runs)
    with open(os.path.join(out, "rounds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rounds[0]))
        w.writeheader()
        w.writerows(rounds)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(table(rounds))


if __name__ == "__main__":
    main()
