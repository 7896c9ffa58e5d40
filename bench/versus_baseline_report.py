#!/usr/bin/python3
"""Compares gradex's schemes with an MPI baseline, round by round.

Reads RUNS/round_<k>[_<label>]/results.csv (one mpirun each:
gradex's schemes and the baseline, in that round's order), writes OUT/rounds.csv (one row per
round, collective, scheme and size: the scheme's and the baseline's
median times and their ratio) and OUT/ratios.md (per collective, scheme
and size, over the rounds: the median busbw ratio to the baseline, its
range, the rounds gradex was at least as fast). Both sides of a ratio run
the same collective, whose bus factor is the same for every scheme, so
the busbw ratio is the baseline's time over the scheme's.

Usage: bench/versus_baseline_report.py RUNS OUT BASELINE TITLE SETUP
  BASELINE: the baseline scheme's name (mpi_reduce_bcast, mpi)
  TITLE:    the report's heading
  SETUP:    one sentence on the machine and the processes
"""
import csv
import os
import sys

from transports_report import human, median, result_folders  # this folder's sibling report


def label(row, baseline):
    """The scheme's name, with its dedicated servers when it has any: the
    same scheme runs with different placements in different mpiruns."""
    servers = int(row.get("endpoints") or row["workers"]) - int(row["workers"])
    if row["scheme"] == baseline or servers <= 0:
        return row["scheme"]
    return f"{row['scheme']}, {servers} dedicated server{'s' if servers > 1 else ''}"


def load(runs, baseline):
    out = []
    for m, rows in result_folders(runs, r"round_(\d+)(?:_[a-z0-9_]+)?"):
        name = m.group(0)
        order = []
        for r in rows:
            if r["scheme"] not in order:
                order.append(r["scheme"])
        # Results written before "collective" existed were all-reduces.
        by = {(r.get("collective") or "all_reduce", label(r, baseline), int(r["bytes"])):
              float(r["time_s"]) for r in rows}
        for (collective, scheme, size), t in sorted(by.items()):
            if scheme == baseline:
                continue
            base = by.get((collective, baseline, size))
            if base is None:
                sys.exit(f"versus_baseline_report: {name}: {baseline} missing at {collective} "
                         f"{size} bytes")
            out.append({"round": int(m.group(1)), "order": " ".join(order),
                        "collective": collective, "scheme": scheme, "bytes": size, "time_s": t,
                        "baseline_time_s": base, "busbw_ratio": base / t})
    if not out:
        sys.exit(f"versus_baseline_report: no rounds in {runs}")
    return out


def table(rounds, baseline, title, setup):
    lines = [f"# {title}", "",
             f"{setup} busbw ratio = {baseline} time / the scheme's time (above 1: gradex is "
             "faster), each the median of its run's timed iterations; median and range over "
             "the rounds, the order reversed every round.", "",
             "| collective | scheme | size | rounds | median busbw ratio | min | max | rounds at "
             "least as fast | every round's ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for collective, scheme in sorted({(r["collective"], r["scheme"]) for r in rounds}):
        mine_all = [r for r in rounds if r["collective"] == collective and r["scheme"] == scheme]
        for size in sorted({r["bytes"] for r in mine_all}):
            mine = sorted((r for r in mine_all if r["bytes"] == size), key=lambda r: r["round"])
            ratios = [r["busbw_ratio"] for r in mine]
            wins = sum(x >= 1 for x in ratios)
            lines.append(f"| {collective} | {scheme} | {human(size)} | {len(ratios)} "
                         f"| {median(ratios):.2f} | {min(ratios):.2f} | {max(ratios):.2f} "
                         f"| {wins} of {len(ratios)} | {' '.join(f'{x:.2f}' for x in ratios)} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    runs, out, baseline, title, setup = sys.argv[1:]
    rounds = load(runs, baseline)
    with open(os.path.join(out, "rounds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rounds[0]))
        w.writeheader()
        w.writerows(rounds)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(table(rounds, baseline, title, setup))


if __name__ == "__main__":
    main()
