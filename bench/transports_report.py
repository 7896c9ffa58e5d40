#!/usr/bin/python3
"""Merges the runs of bench/transports.sh and compares gradex with MPI.

Reads RUNS/<transport>_<workers>/results.csv (gradex result files), writes
OUT/results.csv (all rows, with a transport column: tcp, zmq, or mpi for
the MPI library's own schemes), OUT/ratios.md (per worker count and size:
the ring's bus bandwidth over tcp and zmq against MPI_Allreduce's) and
OUT/busbw_<n>_workers.png for the middle worker count.

Usage: bench/transports_report.py RUNS OUT
"""
import csv
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(runs):
    rows = []
    for name in sorted(os.listdir(runs)):
        m = re.fullmatch(r"(tcp|zmq)_(\d+)", name)
        if not m:
            continue
        path = os.path.join(runs, name, "results.csv")
        if not os.path.exists(path):
            sys.exit(f"transports_report: {path} is missing (that run failed)")
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r["transport"] = "mpi" if r["scheme"].startswith("mpi") else m.group(1)
                rows.append(r)
    if not rows:
        sys.exit(f"transports_report: no runs in {runs}")
    return rows


def human(nbytes):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def ratios(rows):
    by = {(r["transport"], r["scheme"], int(r["workers"]), int(r["bytes"])): r for r in rows}
    lines = ["# gradex over processes against the MPI library", "",
             "Bus bandwidth in GB/s (median time of the timed iterations); busbw ratio = gradex "
             "ring over tcp / MPI_Allreduce (above 1: gradex is faster); time ratios = gradex "
             "time / MPI_Allreduce time (below 1: gradex is faster), for the ring and for "
             "recursive doubling (MPI's own small-message algorithm).", ""]
    for n in sorted({int(r["workers"]) for r in rows}):
        lines += [f"## {n} workers", "",
                  "| size | ring tcp | ring zmq | halving_doubling tcp | recursive_doubling tcp | "
                  "MPI_Allreduce | MPI_Reduce+Bcast | busbw ring tcp / MPI | time ring tcp / MPI | "
                  "time recursive_doubling tcp / MPI |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for size in sorted({int(r["bytes"]) for r in rows if int(r["workers"]) == n}):
            def get(t, s, field="busbw_Bps"):
                r = by.get((t, s, n, size))
                return float(r[field]) if r else float("nan")
            ring, mpi = get("tcp", "ring"), get("mpi", "mpi")
            t_mpi = get("mpi", "mpi", "time_s")
            t_ring, t_rd = get("tcp", "ring", "time_s"), get("tcp", "recursive_doubling", "time_s")
            cells = [human(size)] + [f"{v / 1e9:.3f}" for v in (
                ring, get("zmq", "ring"), get("tcp", "halving_doubling"),
                get("tcp", "recursive_doubling"), mpi, get("mpi", "mpi_reduce_bcast"))]
            cells += [f"{ring / mpi:.2f}" if mpi > 0 else "-"]
            cells += [f"{t / t_mpi:.2f}" if t_mpi > 0 else "-" for t in (t_ring, t_rd)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(rows, n, png):
    fig, ax = plt.subplots(figsize=(8, 5))
    series = {}
    for r in rows:
        if int(r["workers"]) != n:
            continue
        label = r["scheme"] if r["transport"] == "mpi" else f'{r["scheme"]} / {r["transport"]}'
        series.setdefault(label, []).append((int(r["bytes"]), float(r["busbw_Bps"]) / 1e9))
    # One colour per scheme, one line style per transport.
    schemes = sorted({label.split(" / ")[0] for label in series})
    colours = {name: plt.cm.tab10(i % 10) for i, name in enumerate(schemes)}
    for label, points in sorted(series.items()):
        points.sort()
        style = "-" if "tcp" in label else "--" if "zmq" in label else ":"
        ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o",
                markersize=3, label=label, color=colours[label.split(" / ")[0]])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{n} worker processes on loopback, unshaped: gradex vs MPI")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    runs, out = sys.argv[1], sys.argv[2]
    rows = load(runs)
    fields = ["transport"] + [k for k in rows[0] if k != "transport"]
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(ratios(rows) + "\n")
    counts = sorted({int(r["workers"]) for r in rows})
    middle = counts[len(counts) // 2]
    plot(rows, middle, os.path.join(out, f"busbw_{middle}_workers.png"))


if __name__ == "__main__":
    main()
