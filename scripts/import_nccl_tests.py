#!/usr/bin/python3
"""Turns an nccl-tests log (all_reduce_perf and its siblings) into the
results.csv gradex writes, so that GPU runs sit beside gradex's in
`gradex plot`.

Each data line of the log becomes one row: the out-of-place time, algbw,
busbw and #wrong (nccl-tests prints the in-place run beside it; pass
--in-place for those), the rank count from the log's "Rank N" lines (or
--ranks), scheme "nccl" (or --scheme), collective all_reduce (or
--collective: the nccl-tests binary that wrote the log), source "nccl-tests". Columns gradex
alone knows (model time, link traffic, utilisation) are left empty.

Usage: import_nccl_tests.py LOG -o RESULTS_CSV [--scheme NAME] [--ranks N] [--in-place]
                            [--collective all_reduce|reduce_scatter|all_gather|broadcast]
"""
import argparse
import csv
import re
import sys

COLUMNS = ["scheme", "workers", "endpoints", "bytes", "count", "dtype", "op", "time_s",
           "time_min_s", "time_max_s", "algbw_Bps", "busbw_Bps", "wrong", "utilisation",
           "link_bytes", "expected_link_bytes", "traffic_matches", "model_time_s", "source",
           "chose", "sweep", "collective"]
# nccl-tests' type names, as gradex names its dtypes.
DTYPES = {"float": "f32", "double": "f64", "half": "f16", "bfloat16": "bf16", "int32": "i32",
          "int": "i32", "int8": "i8", "uint8": "u8", "int64": "i64", "uint64": "u64",
          "uint32": "u32"}


def fail(message):
    """Bad input: the message on stderr and exit 2, as gradex does."""
    print(message, file=sys.stderr)
    sys.exit(2)


def parse(lines, in_place):
    """(rank count, rows as dicts of the numbers), or exits naming the line."""
    ranks = sum(1 for line in lines if re.match(r"#\s+Rank\s+\d+", line))
    rows = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue
        # size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
        if len(fields) == 13:
            fields = fields[:4] + fields[5:]
        if len(fields) != 12:
            fail(f"import_nccl_tests: line {number}: expected 12 or 13 columns, got "
                     f"{len(fields)}: {line.strip()}")
        size, count, dtype, op = fields[:4]
        time, algbw, busbw, wrong = fields[8:12] if in_place else fields[4:8]
        try:
            rows.append({"bytes": int(size), "count": int(count), "dtype": DTYPES.get(dtype, dtype),
                         "op": op, "time_s": float(time) * 1e-6, "algbw_Bps": float(algbw) * 1e9,
                         "busbw_Bps": float(busbw) * 1e9,
                         "wrong": "" if wrong == "N/A" else int(wrong)})
        except ValueError as e:
            fail(f"import_nccl_tests: line {number}: {e}: {line.strip()}")
    return ranks, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--scheme", default="nccl")
    parser.add_argument("--ranks", type=int, default=0, help="default: the log's Rank lines")
    parser.add_argument("--in-place", action="store_true")
    parser.add_argument("--collective", default="all_reduce",
                        choices=["all_reduce", "reduce_scatter", "all_gather", "broadcast"])
    args = parser.parse_args()
    try:
        with open(args.log, errors="replace") as f:
            ranks, rows = parse(f.read().splitlines(), args.in_place)
    except OSError as e:
        fail(f"import_nccl_tests: {args.log}: {e.strerror}")
    ranks = args.ranks or ranks
    if not rows:
        fail(f"import_nccl_tests: {args.log}: no data lines (is it an nccl-tests log?)")
    if ranks < 1:
        fail(f"import_nccl_tests: {args.log}: no '# Rank' lines; give --ranks")
    try:
        out = open(args.output, "w", newline="")
    except OSError as e:
        fail(f"import_nccl_tests: -o {args.output}: {e.strerror}")
    with out as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, restval="", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "scheme": args.scheme, "workers": ranks, "endpoints": ranks,
                        "time_min_s": r["time_s"], "time_max_s": r["time_s"],
                        "source": "nccl-tests", "collective": args.collective})
    print(f"import_nccl_tests: wrote {args.output} ({len(rows)} rows, {ranks} ranks)")


if __name__ == "__main__":
    main()
