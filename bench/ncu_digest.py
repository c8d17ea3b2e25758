#!/usr/bin/env python3
"""ncu_digest.py — one line per kernel from Nsight Compute's CSV output.

    ncu --csv --metrics gpu__time_duration.sum,\\
dram__throughput.avg.pct_of_peak_sustained_elapsed,\\
sm__throughput.avg.pct_of_peak_sustained_elapsed,\\
sm__warps_active.avg.pct_of_peak_sustained_active \\
        bench/bench_kernels --profile > ncu.csv
    python3 bench/ncu_digest.py ncu.csv
"""
import csv
import re
import sys
from collections import OrderedDict


def main():
    rows = OrderedDict()
    with open(sys.argv[1], newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for r in csv.DictReader(lines):
        entry = rows.setdefault(r["ID"], {"name": r["Kernel Name"], "grid": r.get("Grid Size", "")})
        value = r["Metric Value"].replace(",", "")
        if r["Metric Name"] == "gpu__time_duration.sum":
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
            value = str(float(value) * scale.get(r.get("Metric Unit", "nsecond"), 1e-3))
        entry[r["Metric Name"]] = value
    print(f"{'kernel':44s} {'grid':>16s} {'us':>9s} {'dram%':>6s} {'sm%':>6s} {'warps%':>6s}")
    for entry in rows.values():
        name = re.sub(r"\(.*", "", entry["name"])[:44]
        unit_us = float(entry.get("gpu__time_duration.sum", 0))  # microseconds
        print(f"{name:44s} {entry['grid']:>16s} {unit_us:9.1f} "
              f"{entry.get('dram__throughput.avg.pct_of_peak_sustained_elapsed', '-'):>6s} "
              f"{entry.get('sm__throughput.avg.pct_of_peak_sustained_elapsed', '-'):>6s} "
              f"{entry.get('sm__warps_active.avg.pct_of_peak_sustained_active', '-'):>6s}")


if __name__ == "__main__":
    main()
