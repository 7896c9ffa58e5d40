#!/usr/bin/python3
"""Time of one all-reduce against the number of workers, per scheme.

Reads a gradex results.csv (from `gradex simulate` or `gradex run`) and
draws the simulated (or measured) time as points and the alpha-beta model
(model_time_s) as a line, on log-log axes: a parameter server's time rises
linearly with N, the ring's stays flat.

With --metric utilisation it draws the link utilisation (bytes moved over
the summed NIC capacity x time) instead, which falls as 1/N for the PS.

Usage: scripts/plot_scaling.py RESULTS_CSV OUTPUT_PNG [--title TEXT]
                               [--metric time|utilisation]
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    """{(scheme, bytes, servers): [(workers, time_s, model_s)]}, sorted by
    workers; servers (endpoints beyond the workers) tells PS sweeps apart."""
    series = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            servers = int(row["endpoints"]) - int(row["workers"])
            key = (row["scheme"], int(row["bytes"]), servers)
            model = float(row["model_time_s"]) if row.get("model_time_s") else float("nan")
            util = float(row["utilisation"]) * 100 if row.get("utilisation") else float("nan")
            series[key].append((int(row["workers"]), float(row["time_s"]), model, util))
    for points in series.values():
        points.sort()
    return series


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--title", default="all-reduce time vs workers")
    parser.add_argument("--metric", choices=["time", "utilisation"], default="time")
    args = parser.parse_args()
    series = load(args.csv)
    if not series:
        sys.exit(f"plot_scaling: no rows in {args.csv}")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (scheme, nbytes, servers), points in sorted(series.items()):
        workers = [p[0] for p in points]
        label = f"{scheme}, {nbytes / 1e9:g} GB"
        if servers:
            label += f", {servers} server{'s' if servers > 1 else ''}"
        if args.metric == "utilisation":
            ax.plot(workers, [p[3] for p in points], "o-", label=label)
            continue
        line = ax.plot(workers, [p[2] for p in points], "-", alpha=0.6,
                       label=f"{label}: model")[0]
        ax.plot(workers, [p[1] for p in points], "o", color=line.get_color(),
                label=f"{label}: simulated")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers N")
    ax.set_ylabel("link utilisation (%)" if args.metric == "utilisation"
                  else "time per all-reduce (s)")
    ax.set_title(args.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"plot_scaling: wrote {args.png}")


if __name__ == "__main__":
    main()
