#!/usr/bin/env python3
"""plot_quantile.py — turns bench/quantile_quality's CSV into PNG plots
(needs matplotlib), in the manner of plot.py.

    python3 bench/plot_quantile.py quantile_quality.csv OUTDIR

Writes, for each element count in the CSV:
  quantile_errors_N.png  per distribution: the largest rank error (as a
                         fraction of n, log scale) of the equal widths and
                         of the quantiles (worst seed), with the quantile
                         mode's bound D marked, one panel per interval count
  quantile_inversions_N.png  the fraction of pairs out of order, same layout
  quantile_time_N.png    the median time of each mode and of the radix sort
Prints the number of quantile cases past their bound (the goal: none).
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def worst(rows, key):
    """Per (n, distribution, mode, intervals): the row with the largest key."""
    best = {}
    for r in rows:
        k = (int(r["n"]), r["distribution"], r["mode"], int(r["intervals"]))
        if k not in best or float(r[key]) > float(best[k][key]):
            best[k] = r
    return best


def panels(rows, n, metric, ylabel, title, out, log=True, bound=False):
    intervals = sorted({int(r["intervals"]) for r in rows if int(r["n"]) == n})
    dists = list(dict.fromkeys(r["distribution"] for r in rows if int(r["n"]) == n))
    table = worst(rows, metric)
    fig, axes = plt.subplots(1, len(intervals), figsize=(7 * len(intervals), 5), squeeze=False)
    for ax, m in zip(axes[0], intervals):
        x = range(len(dists))
        for offset, mode in ((-0.2, "width"), (0.2, "quantile")):
            values = [float(table[(n, d, mode, m)][metric]) / (n if metric == "max_rank_error" else 1)
                      if (n, d, mode, m) in table else 0 for d in dists]
            ax.bar([i + offset for i in x], values, width=0.4, label=mode)
        if bound:
            bounds = [float(table[(n, d, "quantile", m)]["rank_bound"]) / n
                      if (n, d, "quantile", m) in table else 0 for d in dists]
            ax.scatter([i + 0.2 for i in x], bounds, marker="_", s=600, color="black",
                       label="quantile bound D / n")
        ax.set_xticks(list(x))
        ax.set_xticklabels(dists, rotation=20)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title("%s, n = %d, %d intervals" % (title, n, m))
        ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def times(rows, n, out):
    dists = list(dict.fromkeys(r["distribution"] for r in rows if int(r["n"]) == n))
    series = defaultdict(dict)
    for r in rows:
        if int(r["n"]) != n:
            continue
        label = "%s/%s" % (r["mode"], r["intervals"])
        series[label][r["distribution"]] = min(float(r["approx_ms"]),
                                               series[label].get(r["distribution"], 1e30))
        series["radix (exact)"][r["distribution"]] = float(r["radix_ms"])
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(sorted(series.items())):
        ax.bar([d + i * width for d in range(len(dists))], [values.get(d, 0) for d in dists],
               width=width, label=label)
    ax.set_xticks([d + 0.4 for d in range(len(dists))])
    ax.set_xticklabels(dists)
    ax.set_ylabel("ms (median, host to host)")
    ax.set_title("time, n = %d (device %s)" % (n, rows[0]["device"]))
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for n in sorted({int(r["n"]) for r in rows}):
        panels(rows, n, "max_rank_error", "largest rank error / n", "rank error",
               os.path.join(out, "quantile_errors_%d.png" % n), bound=True)
        panels(rows, n, "inverted_pair_fraction", "pairs out of order (fraction)", "inversions",
               os.path.join(out, "quantile_inversions_%d.png" % n))
        times(rows, n, os.path.join(out, "quantile_time_%d.png" % n))
    past = sum(1 for r in rows if r["mode"] == "quantile" and r["violation"] == "1")
    print("%d quantile cases, %d past their bound" %
          (sum(1 for r in rows if r["mode"] == "quantile"), past))


if __name__ == "__main__":
    main()
