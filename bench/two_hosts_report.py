#!/usr/bin/python3
"""Compares the kernel-shaped two-host run with the simulator's.

  two_hosts_report.py --link-bits SCENARIO   prints the scenario's
      inter-node bandwidth in bits per second (for tc)
  two_hosts_report.py --with-rate SCENARIO BYTES_PER_SECOND   prints the
      scenario with its inter-node bandwidth replaced
  two_hosts_report.py DIR LINK_BITS GOODPUT  reads DIR/measured.csv,
      DIR/simulated.csv and DIR/simulated_goodput.csv (gradex result files;
      the simulator at the link's nominal rate and at the goodput one TCP
      stream measured, in bytes per second) and prints a Markdown table:
      per scheme and size, the measured median time, both simulated times,
      the alpha-beta model's, and measured / simulated.
"""
import csv
import json
import os
import re
import sys

# gradex's rate units (common/units.cpp), in bytes per second.
RATE_UNITS = {
    "B/s": 1, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "KiB/s": 1024.0, "MiB/s": 1048576.0, "GiB/s": 1073741824.0,
    "bps": 1 / 8, "Kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
}


def link_bits(path):
    with open(path) as f:
        scenario = json.load(f)
    try:
        rate = scenario["network"]["inter_node"]["bandwidth"]
    except KeyError:
        sys.exit(f"two_hosts_report: {path}: /network/inter_node/bandwidth is needed")
    if isinstance(rate, (int, float)):
        return int(rate * 8)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z/]+)\s*", rate)
    if not m or m.group(2) not in RATE_UNITS:
        sys.exit(f"two_hosts_report: {path}: /network/inter_node/bandwidth: cannot read '{rate}'")
    return int(float(m.group(1)) * RATE_UNITS[m.group(2)] * 8)


def with_rate(path, bytes_per_second):
    with open(path) as f:
        scenario = json.load(f)
    scenario["network"]["inter_node"]["bandwidth"] = f"{bytes_per_second}B/s"
    scenario["output"] = ""
    print(json.dumps(scenario, indent=2))


def load(path):
    if not os.path.exists(path):
        sys.exit(f"two_hosts_report: {path} is missing")
    with open(path, newline="") as f:
        return {(r["scheme"], int(r["bytes"])): r for r in csv.DictReader(f)}


def size_name(b):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def report(folder, link_bits, goodput):
    measured = load(os.path.join(folder, "measured.csv"))
    nominal = load(os.path.join(folder, "simulated.csv"))
    tcp = load(os.path.join(folder, "simulated_goodput.csv"))
    nominal_rate = link_bits / 8
    print(f"Link between the hosts: {nominal_rate / 1e6:.0f} MB/s each way (tbf); one bulk TCP "
          f"stream over it: {goodput / 1e6:.1f} MB/s ({goodput / nominal_rate:.0%}).")
    print()
    print("| scheme | size | measured (ms) | min-max (ms) | simulated, nominal rate (ms) "
          "| model (ms) | simulated, TCP goodput (ms) | measured / simulated at goodput |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for key, m in measured.items():
        if key not in nominal or key not in tcp:
            sys.exit(f"two_hosts_report: no simulated row for {key}")
        t, sim, sim_tcp = float(m["time_s"]), float(nominal[key]["time_s"]), float(tcp[key]["time_s"])
        ratios.append(t / sim_tcp)
        print(f"| {key[0]} | {size_name(key[1])} | {t * 1e3:.1f} "
              f"| {float(m['time_min_s']) * 1e3:.1f}-{float(m['time_max_s']) * 1e3:.1f} "
              f"| {sim * 1e3:.1f} | {float(nominal[key]['model_time_s']) * 1e3:.1f} "
              f"| {sim_tcp * 1e3:.1f} | {t / sim_tcp:.2f} |")
    print()
    print(f"measured / simulated at the TCP goodput: {min(ratios):.2f} to {max(ratios):.2f}")
    print()
    largest = max(b for _, b in measured)
    for name, rows in (("measured", measured), ("simulated (nominal rate)", nominal)):
        order = sorted((float(r["time_s"]), s) for (s, b), r in rows.items() if b == largest)
        print(f"- {name} at {size_name(largest)}, fastest first: "
              + ", ".join(f"{s} {t * 1e3:.1f} ms" for t, s in order))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--link-bits":
        print(link_bits(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--with-rate":
        with_rate(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 4:
        report(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(__doc__)
