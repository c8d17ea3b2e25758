#!/usr/bin/env python3
"""plot.py — turns bench_kernels' CSV into PNG plots (needs matplotlib).

    python3 bench/plot.py bench/out/results.csv OUTDIR

Writes:
  throughput.png     Gkeys/s against n (uniform keys), one panel per key type
  distributions.png  Gkeys/s per distribution at the largest n measured for
                     all distributions, one panel per key type
  transfers.png      host <-> device GB/s against transfer size
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = [
    ("bitonic", "network"), ("bitonic", "sort"), ("butterfly", "network"),
    ("butterfly", "sort"), ("radix", "ours"), ("cub-radix", "direct"),
    ("cub-merge", "direct"), ("approx", "default"),
]
KINDS = ["u32+index", "u32", "u64+index", "u64"]


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def throughput(rows, out):
    fig, axes = plt.subplots(2, 2, figsize=(14, 10), sharex=True)
    for ax, kind in zip(axes.flat, KINDS):
        for algorithm, impl in SERIES:
            points = sorted((int(r["n"]), float(r["gkeys_per_s"])) for r in rows
                            if r["kind"] == kind and r["algorithm"] == algorithm
                            and r["impl"] == impl and r["distribution"] == "uniform")
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                        markersize=3, label=f"{algorithm} ({impl})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(kind)
        ax.set_xlabel("n (keys)")
        ax.set_ylabel("Gkeys/s")
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Device-resident sort throughput, uniform keys")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=110)


def distributions(rows, out):
    counts = defaultdict(set)
    for r in rows:
        if r["kind"] in KINDS:
            counts[int(r["n"])].add(r["distribution"])
    sizes = [n for n, d in counts.items() if len(d) > 1]
    if not sizes:
        return
    n = max(sizes)
    dists = sorted(counts[n])
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    for ax, kind in zip(axes.flat, KINDS):
        width = 0.8 / len(SERIES)
        for i, (algorithm, impl) in enumerate(SERIES):
            values = []
            for d in dists:
                match = [float(r["gkeys_per_s"]) for r in rows
                         if r["kind"] == kind and r["algorithm"] == algorithm
                         and r["impl"] == impl and r["distribution"] == d and int(r["n"]) == n]
                values.append(match[0] if match else 0)
            ax.bar([x + i * width for x in range(len(dists))], values, width,
                   label=f"{algorithm} ({impl})")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(dists))])
        ax.set_xticklabels(dists, rotation=20)
        ax.set_yscale("log")
        ax.set_title(f"{kind}, n = {n}")
        ax.set_ylabel("Gkeys/s")
        ax.grid(True, axis="y", alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "distributions.png"), dpi=110)


def transfers(rows, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    for direction in ("host-to-device", "device-to-host"):
        for memory in ("pinned", "pageable"):
            points = sorted((int(r["n"]), float(r["gbytes_per_s"])) for r in rows
                            if r["kind"] == "transfer" and r["algorithm"] == direction
                            and r["impl"] == memory)
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                        label=f"{direction}, {memory}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per transfer")
    ax.set_ylabel("GB/s")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "transfers.png"), dpi=110)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    throughput(rows, sys.argv[2])
    distributions(rows, sys.argv[2])
    transfers(rows, sys.argv[2])


if __name__ == "__main__":
    main()
