#!/usr/bin/python3
"""Merges the runs of bench/transports.sh and compares gradex with MPI.

Reads RUNS/<transport>_<workers>/results.csv (gradex result files) and
RUNS/head_to_head/<workers>_<round>/results.csv (the ring over tcp and
MPI_Allreduce, one round each), writes OUT/results.csv (all sweep rows, with
a transport column: tcp, zmq, or mpi for the MPI library's own schemes),
OUT/head_to_head.csv (every round), OUT/ratios.md (per worker count and
size: the ring's bus bandwidth over tcp and zmq against MPI_Allreduce's,
in the sweep and head to head) and OUT/busbw_<n>_workers.png for the
middle worker count.

Usage: bench/transports_report.py RUNS OUT
"""
import csv
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def result_folders(folder, pattern):
    """(name match, rows of results.csv) for each run folder whose name
    matches `pattern`; a matching folder without results is a failed run."""
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        m = re.fullmatch(pattern, name)
        if not m:
            continue
        path = os.path.join(folder, name, "results.csv")
        if not os.path.exists(path):
            sys.exit(f"transports_report: {path} is missing (that run failed)")
        with open(path, newline="") as f:
            yield m, list(csv.DictReader(f))


def load(runs):
    rows = []
    for m, found in result_folders(runs, r"(tcp|zmq)_(\d+)"):
        for r in found:
            r["transport"] = "mpi" if r["scheme"].startswith("mpi") else m.group(1)
            rows.append(r)
    if not rows:
        sys.exit(f"transports_report: no runs in {runs}")
    return rows


def load_head_to_head(runs):
    """One row per worker count, size and round: both schemes' times."""
    out = []
    for m, rows in result_folders(os.path.join(runs, "head_to_head"), r"(\d+)_(\d+)"):
        first = rows[0]["scheme"]
        by = {(r["scheme"], int(r["bytes"])): r for r in rows}
        for size in sorted({int(r["bytes"]) for r in rows}):
            ring, mpi = by.get(("ring", size)), by.get(("mpi", size))
            if not ring or not mpi:
                sys.exit(f"transports_report: head_to_head/{m.group(0)}: ring or mpi missing "
                         f"at {size} bytes")
            t_ring, t_mpi = float(ring["time_s"]), float(mpi["time_s"])
            out.append({"workers": int(m.group(1)), "round": int(m.group(2)), "first": first,
                        "bytes": size, "ring_time_s": t_ring, "mpi_time_s": t_mpi,
                        "busbw_ratio": t_mpi / t_ring})
    return out


def median(values):
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def head_to_head(rounds):
    if not rounds:
        return ""
    lines = ["## Head to head: ring over tcp against MPI_Allreduce, order swapped every round",
             "",
             "Each round runs both in one mpirun, one after the other; odd rounds run the ring "
             "first, even rounds MPI. busbw ratio = ring busbw / MPI_Allreduce busbw = MPI time / "
             "ring time (above 1: gradex is faster); time ratio = ring time / MPI time (below 1: "
             "gradex is faster).", "",
             "| workers | size | rounds | median busbw ratio | min | max | rounds the ring was "
             "at least as fast | median time ratio | every round's busbw ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in sorted({r["workers"] for r in rounds}):
        for size in sorted({r["bytes"] for r in rounds if r["workers"] == n}):
            mine = sorted((r for r in rounds if r["workers"] == n and r["bytes"] == size),
                          key=lambda r: r["round"])
            ratios = [r["busbw_ratio"] for r in mine]
            wins = sum(x >= 1 for x in ratios)
            lines.append(f"| {n} | {human(size)} | {len(ratios)} | {median(ratios):.2f} "
                         f"| {min(ratios):.2f} | {max(ratios):.2f} | {wins} of {len(ratios)} "
                         f"| {median([1 / x for x in ratios]):.2f} "
                         f"| {' '.join(f'{x:.2f}' for x in ratios)} |")
    lines.append("")
    return "\n".join(lines)


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
    rounds = load_head_to_head(runs)
    if rounds:
        with open(os.path.join(out, "head_to_head.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rounds[0]))
            w.writeheader()
            w.writerows(rounds)
    with open(os.path.join(out, "ratios.md"), "w") as f:
        f.write(ratios(rows) + "\n" + head_to_head(rounds))
    counts = sorted({int(r["workers"]) for r in rows})
    middle = counts[len(counts) // 2]
    plot(rows, middle, os.path.join(out, f"busbw_{middle}_workers.png"))


if __name__ == "__main__":
    main()
