#!/usr/bin/python3
"""Bus bandwidth against message size, per scheme: the communication roofline.

Reads a gradex results.csv and draws busbw (nccl-tests convention) as
points, with the model's busbw (bytes / model_time_s x 2(n-1)/n) as a
line, on log-log axes, for one worker count.

Usage: scripts/plot_busbw.py RESULTS_CSV OUTPUT_PNG [--workers N] [--title TEXT]
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("png")
    parser.add_argument("--workers", type=int, default=0, help="default: the largest in the file")
    parser.add_argument("--title", default="bus bandwidth vs message size")
    args = parser.parse_args()
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot_busbw: no rows in {args.csv}")
    n = args.workers or max(int(r["workers"]) for r in rows)
    series = defaultdict(list)
    for r in rows:
        if int(r["workers"]) != n:
            continue
        nbytes, time, model = int(r["bytes"]), float(r["time_s"]), float(r["model_time_s"] or "nan")
        factor = float(r["busbw_Bps"]) / (nbytes / time) if time > 0 and nbytes else 0
        series[r["scheme"]].append((nbytes, float(r["busbw_Bps"]) / 1e9,
                                    nbytes / model * factor / 1e9 if model > 0 else float("nan")))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for scheme, points in sorted(series.items()):
        points.sort()
        x = [p[0] for p in points]
        line = ax.plot(x, [p[2] for p in points], "-", alpha=0.6, label=f"{scheme}: model")[0]
        ax.plot(x, [p[1] for p in points], "o", color=line.get_color(), label=f"{scheme}: simulated")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(f"{args.title} (N = {n})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"plot_busbw: wrote {args.png}")


if __name__ == "__main__":
    main()
