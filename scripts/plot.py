#!/usr/bin/python3
"""Draws gradex's result files (what `gradex plot` runs).

The figure follows what the files hold:
  - busbw: benchmark rows at several sizes: bus bandwidth against message
    size, one panel per worker count (at most four), measured or simulated
    points and the cost model's line;
  - scaling: benchmark rows at one size per scheme over several worker
    counts: time (or link utilisation) against workers, points and model;
  - training: `gradex train` / training-scenario rows (an `epoch` column):
    test accuracy against training time, and training loss per epoch;
  - train_scaling: training rows of a scheme at several worker counts: the
    step's time and its exposed communication against workers.
Several files overlay, each series labelled with its file's folder. Rows
imported from nccl-tests (scripts/import_nccl_tests.py) sit beside
gradex's as their own source.

Usage: plot.py FILE... -o OUT.png [--kind busbw|scaling|training|train_scaling]
       [--workers N,...] [--schemes A,B] [--y time|utilisation] [--title T]
"""
import argparse
import csv
import json
import math
import os
import sys
import textwrap
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

MARKERS = {"measured": "o", "simulated": "^", "nccl-tests": "s"}
MAX_PANELS = 4
# Twenty distinct colours: gradex has more schemes than the default ten.
plt.rcParams["axes.prop_cycle"] = cycler(color=plt.get_cmap("tab20").colors)


def fail(message):
    """Bad input: the message on stderr and exit 2, as gradex does."""
    print(message, file=sys.stderr)
    sys.exit(2)


def size_label(nbytes, _pos=None):
    """1K, 4M, 1G as nccl-tests prints sizes (binary units), and a size
    that is no whole number of them in decimal ones (1 GB = 1e9 bytes)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale:g}{unit}"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:g}"


def recorded_source(path):
    """Files written before results.csv had a `source` column: the run's
    transport, from the results.json beside it (the simulator's rows are
    simulated, every other transport's measured)."""
    beside = os.path.join(os.path.dirname(os.path.abspath(path)), "results.json")
    try:
        with open(beside) as f:
            transport = json.load(f)["scenario"].get("transport", "inproc")
    except (OSError, ValueError, KeyError, TypeError):
        return "source not recorded"
    return "simulated" if transport == "sim" else "measured"


# The columns each figure reads, and which of them are numbers.
COLUMNS = {
    "train_rows": {"scheme": str, "workers": int, "epoch": int},
    "busbw": {"scheme": str, "workers": int, "bytes": int, "time_s": float, "busbw_Bps": float},
    "scaling": {"scheme": str, "workers": int, "bytes": int, "time_s": float},
    "training": {"scheme": str, "workers": int, "epoch": int, "train_loss": float,
                 "test_accuracy": float, "train_seconds": float},
    "train_scaling": {"scheme": str, "workers": int, "epoch": int, "iteration_s": float,
                      "exposed_s": float},
}


def read(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail(f"plot: {path}: {e}")
    if not rows:
        fail(f"plot: {path}: no rows")
    label = os.path.basename(os.path.dirname(os.path.abspath(path))) or path
    source = None if "source" in rows[0] else recorded_source(path)
    for line, r in enumerate(rows, 2):
        r["_file"], r["_where"] = label, f"{path}:{line}"
        if source:
            r["source"] = source
    return rows


def check(rows, kind):
    """Every row has the figure's columns, numbers where numbers belong:
    otherwise the file, the line and the column are named."""
    for r in rows:
        for column, kind_of_value in COLUMNS[kind].items():
            value = r.get(column)
            if value is None:
                fail(f"plot: {r['_where']}: no '{column}' column (a {kind} figure needs it)")
            if value == "" and kind_of_value is float:
                fail(f"plot: {r['_where']}: {column} is empty (an emulated model computes no "
                     "loss: plot its step times, --kind train_scaling)")
            try:
                kind_of_value(value)
            except ValueError:
                fail(f"plot: {r['_where']}: {column} is '{value}', not a number")


def kind_of(rows):
    if "epoch" in rows[0]:
        check(rows, "train_rows")
        per_scheme = defaultdict(set)
        for r in rows:
            per_scheme[r["scheme"]].add(int(r["workers"]))
        return "train_scaling" if any(len(w) > 1 for w in per_scheme.values()) else "training"
    if "bytes" not in rows[0]:
        fail("plot: these files hold neither benchmark nor training rows")
    check(rows, "scaling")
    per_scheme = defaultdict(set)
    for r in rows:
        per_scheme[r["scheme"]].add(int(r["bytes"]))
    return "busbw" if any(len(s) > 1 for s in per_scheme.values()) else "scaling"


def series_name(r, files):
    name = r["scheme"]
    # A collective other than all-reduce says so, unless its sweep does.
    collective = r.get("collective") or "all_reduce"
    if collective != "all_reduce" and "collective=" not in (r.get("sweep") or ""):
        name += f" {collective}"
    if r.get("sweep"):
        name += f" ({r['sweep']})"
    return f"{name} [{r['_file']}]" if files > 1 else name


def model_busbw(r):
    """The model's busbw for a row: bytes / model time x the row's factor."""
    model = float(r.get("model_time_s") or "nan")
    time, nbytes, busbw = float(r["time_s"]), int(r["bytes"]), float(r["busbw_Bps"])
    if not model > 0 or not time > 0:
        return math.nan
    return nbytes / model * (busbw * time / nbytes) / 1e9


def plot_busbw(rows, args, files):
    counts = sorted({int(r["workers"]) for r in rows})
    if args.workers:
        counts = [w for w in counts if w in args.workers]
    if len(counts) > MAX_PANELS:
        step = (len(counts) - 1) / (MAX_PANELS - 1)
        counts = sorted({counts[round(i * step)] for i in range(MAX_PANELS)})
    if not counts:
        fail("plot: no rows at the asked worker counts")
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 4.5), squeeze=False)
    for ax, n in zip(axes[0], counts):
        series = defaultdict(list)
        for r in rows:
            if int(r["workers"]) == n:
                series[(series_name(r, files), r["source"])].append(r)
        for (name, source), pts in sorted(series.items()):
            pts.sort(key=lambda r: int(r["bytes"]))
            x = [int(r["bytes"]) for r in pts]
            line = ax.plot(x, [float(r["busbw_Bps"]) / 1e9 for r in pts],
                           MARKERS.get(source, "o") + "-", ms=4, label=f"{name}: {source}")[0]
            model = [model_busbw(r) for r in pts]
            if any(not math.isnan(m) for m in model):
                ax.plot(x, model, "--", color=line.get_color(), alpha=0.5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{n} workers")
        ax.grid(True, which="both", alpha=0.3)
    shown = set(counts)
    shared_legend(fig, axes[0][0], "dashed: the cost model",
                  model_gaps([r for r in rows if int(r["workers"]) in shown]))
    return fig


# Why a scheme's cost model and its simulation part, where they do by more
# than GAP_SHOWN (results/README.md, "Model against simulator: known gaps";
# docs/architecture.md, "Where the model and the simulator part").
GAP_SHOWN = 0.05
GAP_REASONS = {
    "ring": "a sliced ring's next slice leaves while the one before it is gathered; "
            "its model sums the slices",
    "hierarchical": "its phases' gaps: a sliced ring's, or its scheme's across nodes",
    "rail_rings": "its rings pass a GPU's NVLink port at phases the model rounds to "
                  "whole hops after their NIC",
    "tree": "with an odd number of ranks rank 0 forwards in both trees; on a node's shared NIC "
            "the first segments' climb meets the node's other crossings at other times",
    "halving_doubling": "a folded pair shares a port with the core's first message",
    "recursive_doubling": "a folded pair shares a port with the core's first message",
    "ps_hybrid": "its ring's steps and the servers' round overlap in part on small messages",
}
# Where a scheme's collective other than the all-reduce parts for a reason
# of its own: (scheme, collective) first, then the scheme's.
COLLECTIVE_GAP_REASONS = {
    ("tree", "reduce_scatter"): "each of a rank's streams forwards its half-blocks in block "
                                "order, so one from a far owner holds back those behind it",
    ("tree", "all_gather"): "each of a rank's streams forwards its half-blocks in block "
                            "order, so one from a far owner holds back those behind it",
}
# A measured run also pays what no link model counts.
MEASURED_REASON = ("a real run also pays this machine's per-message software cost and memory "
                   "copies, which the link model leaves out")


def model_gaps(rows):
    """Per scheme and collective, the largest gap between the cost model
    and a measured or simulated time, as lines for the figure, when above
    GAP_SHOWN."""
    worst = {}
    for r in rows:
        model, time = float(r.get("model_time_s") or "nan"), float(r["time_s"])
        if not (model > 0 and time > 0) or r["source"] == "model":
            continue
        gap = model / time - 1
        key = (r["scheme"], r.get("collective") or "all_reduce")
        if abs(gap) > abs(worst.get(key, (0, None))[0]):
            worst[key] = (gap, r)
    lines = []
    for (scheme, collective), (gap, r) in sorted(worst.items()):
        if abs(gap) <= GAP_SHOWN:
            continue
        what = scheme if collective == "all_reduce" else f"{scheme}'s {collective}"
        where = f"{r['workers']} workers, {size_label(int(r['bytes']))}"
        reason = (MEASURED_REASON if r["source"] == "measured"
                  else COLLECTIVE_GAP_REASONS.get((scheme, collective))
                  or GAP_REASONS.get(scheme, "not explained yet"))
        lines.append(f"{what}: the model is {abs(gap):.0%} {'above' if gap > 0 else 'below'} "
                     f"the {r['source']} time at {where} "
                     f"({reason})")
    return lines


def shared_legend(fig, ax, note, gaps=()):
    """One legend for every panel, right of them: the series are the same
    in each panel, and a legend inside would hide the points. Below it, the
    model's gaps above GAP_SHOWN, each with its reason."""
    handles, labels = ax.get_legend_handles_labels()
    if note:
        handles.append(plt.Line2D([], [], color="gray", ls="--"))
        labels.append(note)
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    if gaps:
        fig.text(0.01, -0.02, "\n".join(textwrap.fill(g, 150) for g in gaps), fontsize=7,
                 va="top", ha="left", color="dimgray")


def plot_scaling(rows, args, files):
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    series = defaultdict(list)
    for r in rows:
        servers = int(r["endpoints"]) - int(r["workers"]) if r.get("endpoints") else 0
        name = f"{series_name(r, files)}, {size_label(int(r['bytes']))}"
        if servers > 0:
            name += f", {servers} server{'s' if servers > 1 else ''}"
        series[(name, r["source"])].append(r)
    for (name, source), pts in sorted(series.items()):
        pts.sort(key=lambda r: int(r["workers"]))
        x = [int(r["workers"]) for r in pts]
        if args.y == "utilisation":
            ax.plot(x, [float(r["utilisation"] or "nan") * 100 for r in pts],
                    MARKERS.get(source, "o") + "-", ms=4, label=f"{name}: {source}")
            continue
        line = ax.plot(x, [float(r["time_s"]) * 1e3 for r in pts], MARKERS.get(source, "o"),
                       ms=5, label=f"{name}: {source}")[0]
        model = [float(r.get("model_time_s") or "nan") * 1e3 for r in pts]
        if any(m > 0 for m in model):
            ax.plot(x, model, "--", color=line.get_color(), alpha=0.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.set_xlabel("workers N")
    ax.set_ylabel("link utilisation (%)" if args.y == "utilisation" else "time per all-reduce (ms)")
    ax.grid(True, which="both", alpha=0.3)
    shared_legend(fig, ax, "" if args.y == "utilisation" else "dashed: the cost model",
                  () if args.y == "utilisation" else model_gaps(rows))
    return fig


def plot_training(rows, _args, files):
    fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 4.5))
    series = defaultdict(list)
    for r in rows:
        series[f"{series_name(r, files)}, {r['workers']} workers"].append(r)
    for name, pts in sorted(series.items()):
        pts.sort(key=lambda r: int(r["epoch"]))
        line = acc.plot([float(r["train_seconds"]) for r in pts],
                        [float(r["test_accuracy"]) * 100 for r in pts], "o-", ms=4, label=name)[0]
        loss.plot([int(r["epoch"]) for r in pts], [float(r["train_loss"]) for r in pts], "o-",
                  ms=4, color=line.get_color(), label=name)
    acc.set_xlabel("training time (s)")
    acc.set_ylabel("test accuracy (%)")
    loss.set_xlabel("epoch")
    loss.xaxis.set_major_locator(MaxNLocator(integer=True))
    loss.set_ylabel("training loss")
    for ax in (acc, loss):
        ax.grid(True, alpha=0.3)
    shared_legend(fig, acc, "")
    return fig


def plot_train_scaling(rows, _args, files):
    fig, (step, exposed) = plt.subplots(1, 2, figsize=(11, 4.5))
    # Files that hold different worker counts of a scheme (a sweep run in
    # parts) join into one line; only a count two files both hold keeps
    # each file's line apart.
    holders = defaultdict(set)
    for r in rows:
        holders[(series_name(r, 1), int(r["workers"]))].add(r["_file"])
    if all(len(h) == 1 for h in holders.values()):
        files = 1
    series = defaultdict(dict)
    for r in rows:  # a run's last epoch stands for it
        key = int(r["workers"])
        kept = series[series_name(r, files)].get(key)
        if kept is None or int(r["epoch"]) > int(kept["epoch"]):
            series[series_name(r, files)][key] = r
    for name, by_workers in sorted(series.items()):
        x = sorted(by_workers)
        line = step.plot(x, [float(by_workers[w]["iteration_s"]) * 1e3 for w in x], "o-", ms=4,
                         label=name)[0]
        exposed.plot(x, [float(by_workers[w]["exposed_s"]) * 1e3 for w in x], "o-", ms=4,
                     color=line.get_color(), label=name)
    for ax, what in ((step, "step time (ms)"), (exposed, "exposed communication (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_xlabel("workers N")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    shared_legend(fig, step, "")
    return fig


def main():
    parser = argparse.ArgumentParser(prog="gradex plot", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="results.csv files (gradex's, or imported)")
    parser.add_argument("-o", "--output", required=True, help="the figure (.png, .svg, .pdf)")
    parser.add_argument("--kind", choices=["busbw", "scaling", "training", "train_scaling"],
                        help="default: what the files hold")
    parser.add_argument("--workers", help="busbw: only these worker counts (e.g. 4,8)")
    parser.add_argument("--schemes", help="only these schemes (e.g. ring,ps)")
    parser.add_argument("--y", choices=["time", "utilisation"], default="time",
                        help="scaling: what the y axis shows")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    try:
        args.workers = [int(w) for w in args.workers.split(",")] if args.workers else []
    except ValueError:
        fail(f"plot: --workers: '{args.workers}' is not a list of counts (e.g. 4,8)")
    rows = [r for path in args.files for r in read(path)]
    if args.schemes:
        wanted = args.schemes.split(",")
        rows = [r for r in rows if r["scheme"] in wanted]
        if not rows:
            fail(f"plot: no rows of {args.schemes}")
    kinds = {kind_of([r for r in rows if r["_file"] == f]) for f in {r["_file"] for r in rows}}
    if kinds <= {"training", "train_scaling"}:
        # Training rows of several runs: worker counts across them decide.
        kinds = {kind_of(rows)}
    kind = args.kind or (kinds.pop() if len(kinds) == 1 else None)
    if kind is None:
        fail("plot: the files hold different kinds of rows; give --kind")
    if args.y == "utilisation" and kind != "scaling":
        fail("plot: --y applies to --kind scaling")
    check(rows, kind)
    files = len({r["_file"] for r in rows})
    figures = {"busbw": plot_busbw, "scaling": plot_scaling, "training": plot_training,
               "train_scaling": plot_train_scaling}
    fig = figures[kind](rows, args, files)
    if args.title:
        fig.suptitle(args.title)
    try:
        fig.savefig(args.output, dpi=120, bbox_inches="tight")
    except (OSError, ValueError) as e:
        fail(f"plot: -o {args.output}: {e}")
    # A scaling figure's lines, one per series (a line per file would say
    # its files did not join).
    drawn = len(fig.axes[0].get_lines())
    lines = f", {drawn} line{'' if drawn == 1 else 's'}" if kind == "train_scaling" else ""
    print(f"plot: wrote {args.output} ({kind}, {len(rows)} rows{lines})")


if __name__ == "__main__":
    main()
