#!/usr/bin/env python3
"""Per-step time of `gradex train` across binaries (or flag sets), in
alternating rounds.

Each round runs every entry once; odd rounds go in the given order, even
rounds in reverse, so that on a shared machine no entry always runs first
or right after the same neighbour. Every run is a fresh `gradex train`
reading results.csv: iter-ms (the whole step), compute-ms (forward,
backward and the optimizer) and comm-ms (the exchanges, overlapped or not). Prints, per entry, the median of the rounds
and their range.

An entry is LABEL=BINARY or LABEL=BINARY:EXTRA_FLAGS (extra flags added
to the common ones after --). With --torch, each round also runs
bench/mlp_torch_step.py (the same MLP step in PyTorch on one thread) and
reports its median step time of that round.

Example, the one-worker MLP step of two builds:
  python3 bench/train_step.py --rounds 7 before=/tmp/gradex_old after=build/default/gradex \\
      -- -w 1 -s ring -e 1 --max-steps 300
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile


def run_gradex(binary, flags, out_dir):
    """One `gradex train`: (iter_ms, compute_ms, comm_ms) of its first result row."""
    subprocess.run([binary, "train", *flags, "-o", out_dir], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        row = next(csv.DictReader(f))
    return tuple(float(row[k]) * 1e3 for k in ("iteration_s", "compute_s", "comm_s"))


def run_torch(python, script, batch, steps):
    """One bench/mlp_torch_step.py run: its median step time in ms."""
    out = subprocess.run([python, script, "--batch", str(batch), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("median_ms"):
            return float(line.split()[1])
    raise RuntimeError("mlp_torch_step.py printed no median_ms line:\n" + out)


def summary(values):
    return f"{statistics.median(values):8.3f}  [{min(values):.3f} - {max(values):.3f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--torch", action="store_true",
                        help="also time bench/mlp_torch_step.py each round")
    parser.add_argument("--torch-batch", type=int, default=64)
    parser.add_argument("--torch-steps", type=int, default=300)
    # Debian's python3-torch installs for the system interpreter.
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    parser.add_argument("entries", nargs="+", help="LABEL=BINARY[:EXTRA_FLAGS]")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    common = argv[split + 1:]
    entries = []
    for e in args.entries:
        label, _, spec = e.partition("=")
        binary, _, extra = spec.partition(":")
        if not label or not os.access(binary, os.X_OK):
            parser.error(f"entry '{e}': expected LABEL=BINARY with an executable BINARY")
        entries.append((label, binary, common + extra.split()))
    torch_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mlp_torch_step.py")

    iters = {label: [] for label, _, _ in entries}
    computes = {label: [] for label, _, _ in entries}
    comms = {label: [] for label, _, _ in entries}
    torch_ms = []
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            order = entries if r % 2 == 0 else list(reversed(entries))
            if args.torch and r % 2 == 1:
                torch_ms.append(run_torch(args.torch_python, torch_script, args.torch_batch, args.torch_steps))
            for label, binary, flags in order:
                it, comp, comm = run_gradex(binary, flags, os.path.join(scratch, f"{label}-{r}"))
                iters[label].append(it)
                computes[label].append(comp)
                comms[label].append(comm)
            if args.torch and r % 2 == 0:
                torch_ms.append(run_torch(args.torch_python, torch_script, args.torch_batch, args.torch_steps))
            print(f"round {r + 1}: " + ", ".join(
                f"{label} {computes[label][-1]:.3f}" for label, _, _ in entries) +
                (f", torch {torch_ms[-1]:.3f}" if args.torch else "") + " (compute-ms)",
                file=sys.stderr)

    print(f"# {args.rounds} alternating rounds; flags: {' '.join(common)}")
    print(f"{'entry':<16} {'compute-ms median [range]':>34} {'iter-ms median [range]':>34}"
          f" {'comm-ms median [range]':>34}")
    for label, _, _ in entries:
        print(f"{label:<16} {summary(computes[label]):>34} {summary(iters[label]):>34}"
              f" {summary(comms[label]):>34}")
    if args.torch:
        print(f"{'torch':<16} {summary(torch_ms):>34}  (step: forward, backward, SGD)")


if __name__ == "__main__":
    main()
