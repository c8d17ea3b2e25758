#!/usr/bin/env python3
"""Plots of the SQL benchmark and the approximate sort's quality.

    python3 bench/plot_sql.py SQL_CSV APPROX_CSV CROSSOVER_CSV OUTDIR

sql.png: median time per query shape, PostgreSQL's sort (gpusort off) against
GpuSort (on), one panel per table size. approx_quality.png: fraction of
inverted pairs and largest displacement of the approximate sort by interval
count and distribution. crossover.png: host-to-host sort time on the CPU and
on the GPU by size.
"""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def sql_plot(path, out):
    rows = list(csv.DictReader(open(path)))
    sizes = sorted({int(r["rows"]) for r in rows})
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    fig, axes = plt.subplots(1, len(sizes), figsize=(7 * len(sizes), 5), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        pg, gpu = [], []
        for shape in shapes:
            def median(mode):
                values = [float(r["ms"]) for r in rows
                          if int(r["rows"]) == n and r["shape"] == shape and r["mode"] == mode and r["ms"]]
                return statistics.median(values) if values else 0.0
            pg.append(median("off"))
            gpu.append(median("on"))
        x = range(len(shapes))
        ax.bar([i - 0.2 for i in x], pg, 0.4, label="PostgreSQL sort (gpusort off)")
        ax.bar([i + 0.2 for i in x], gpu, 0.4, label="GpuSort (on)")
        for i, (a, b) in enumerate(zip(pg, gpu)):
            if a > 0:
                ax.text(i + 0.2, b, f"{b / a:.2f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(list(x))
        ax.set_xticklabels(shapes, rotation=40, ha="right", fontsize=8)
        ax.set_ylabel("ms (median)")
        ax.set_title(f"{n:,} rows (ratio GpuSort / PostgreSQL above the bars)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sql.png"), dpi=110)


def approx_plot(path, out):
    rows = list(csv.DictReader(open(path)))
    n = max(int(r["n"]) for r in rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for dist in ["uniform", "gaussian", "zipf"]:
        sel = sorted((int(r["intervals"]), float(r["inverted_pair_fraction"]), int(r["max_displacement"]))
                     for r in rows if r["distribution"] == dist and int(r["n"]) == n)
        k = [s[0] for s in sel]
        left.plot(k, [max(s[1], 1e-9) for s in sel], marker="o", label=dist)
        right.plot(k, [max(s[2], 1) for s in sel], marker="o", label=dist)
    for ax, title in ((left, "fraction of inverted pairs"), (right, "largest displacement (positions)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("intervals")
        ax.set_title(f"{title}, n = {n:,}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "approx_quality.png"), dpi=110)


def crossover_plot(path, out):
    rows = list(csv.DictReader(open(path)))
    n = [int(r["n"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(n, [float(r["cpu_ms"]) for r in rows], marker="o", label="CPU (LSD radix)")
    ax.plot(n, [float(r["gpu_ms"]) for r in rows], marker="o", label="GPU (CUB radix, transfers included)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (32-bit key + row index)")
    ax.set_ylabel("ms, host to host (median of 7)")
    ax.set_title("Where the GPU starts to win")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "crossover.png"), dpi=110)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    os.makedirs(sys.argv[4], exist_ok=True)
    sql_plot(sys.argv[1], sys.argv[4])
    approx_plot(sys.argv[2], sys.argv[4])
    crossover_plot(sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    main()
