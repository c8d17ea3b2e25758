#!/usr/bin/env python3
"""The configuration matrix as a picture, with no plotting library.

    python3 bench/plot_matrix.py MATRIX_CSV OUT_SVG

MATRIX_CSV is what bench/sql_matrix.sh writes. One panel per work_mem and
number of workers; in each, one bar per query shape: gpusort's median time
as a share of PostgreSQL's (1.0 is a tie; the dashed line), with the share
of PostgreSQL's sorting cost gpusort left (time above the floor) under the
bar where it means something (PostgreSQL's plan slower than the floor).
Grey bars are cells where both modes planned the same (GpuSort not used).
"""
import csv
import statistics
import sys

SHAPES = [
    ("order_by_k", "k"),
    ("order_by_g_k", "g,k"),
    ("order_by_k_desc", "k DESC"),
    ("order_by_int8", "int8"),
    ("order_by_k_limit10", "L10"),
    ("order_by_k_limit1000", "L1000"),
    ("order_by_k_limit100000", "L100k"),
    ("join_order_by_k", "join"),
]
PANEL_W, PANEL_H, MARGIN = 300, 210, 40
TOP = 1.2  # the y axis runs from 0 to this ratio


def medians(path):
    runs, plans = {}, {}
    for r in csv.DictReader(open(path)):
        if not r["ms"]:
            continue
        key = (r["work_mem"], r["workers"], r["shape"], r["mode"])
        runs.setdefault(key, []).append(float(r["ms"]))
        plans[key] = r["top_sort"]
    return {k: statistics.median(v) for k, v in runs.items()}, plans


def work_mem_bytes(text):
    units = {"kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def panel(out, x0, y0, work_mem, workers, median, plans):
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{y0 - 8}" text-anchor="middle" '
               f'font-size="13">work_mem {work_mem}, {workers} workers</text>')
    out.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
               'fill="none" stroke="#999"/>')
    for tick in (0.25, 0.5, 0.75, 1.0):
        y = y0 + PANEL_H * (1 - tick / TOP)
        dash = ' stroke-dasharray="5,3" stroke="#c00"' if tick == 1.0 else ' stroke="#ddd"'
        out.append(f'<line x1="{x0}" y1="{y}" x2="{x0 + PANEL_W}" y2="{y}"{dash}/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 4}" text-anchor="end" font-size="10">{tick:g}</text>')
    slot = PANEL_W / len(SHAPES)
    for i, (shape, label) in enumerate(SHAPES):
        pg = median.get((work_mem, workers, shape, "off"))
        gs = median.get((work_mem, workers, shape, "on"))
        x = x0 + i * slot + slot * 0.2
        out.append(f'<text x="{x + slot * 0.3}" y="{y0 + PANEL_H + 13}" text-anchor="middle" '
                   f'font-size="10">{label}</text>')
        if pg is None or gs is None:
            continue
        ratio = gs / pg
        height = PANEL_H * min(ratio, TOP) / TOP
        same = plans.get((work_mem, workers, shape, "off")) == plans.get((work_mem, workers, shape, "on"))
        colour = "#aaa" if same else "#3a7"
        out.append(f'<rect x="{x}" y="{y0 + PANEL_H - height}" width="{slot * 0.6}" '
                   f'height="{height}" fill="{colour}"/>')
        out.append(f'<text x="{x + slot * 0.3}" y="{y0 + PANEL_H - height - 3}" '
                   f'text-anchor="middle" font-size="9">{ratio:.2f}</text>')
        floor = median.get((work_mem, workers, "floor_join" if shape.startswith("join") else "floor", "off"))
        if floor is not None and pg > floor and not same:
            left = (gs - floor) / (pg - floor)
            out.append(f'<text x="{x + slot * 0.3}" y="{y0 + PANEL_H + 25}" text-anchor="middle" '
                       f'font-size="9" fill="#555">{left:.2f}</text>')


def main():
    median, plans = medians(sys.argv[1])
    work_mems = sorted({k[0] for k in median}, key=work_mem_bytes)
    workers_list = sorted({k[1] for k in median}, key=int)
    width = MARGIN + len(work_mems) * (PANEL_W + MARGIN)
    height = MARGIN + len(workers_list) * (PANEL_H + 2 * MARGIN) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{MARGIN}" y="18" font-size="13">gpusort time / PostgreSQL time per shape '
           '(bar); under it, the share of PostgreSQL\'s sorting cost left; grey: same plan</text>']
    for row, workers in enumerate(workers_list):
        for col, work_mem in enumerate(work_mems):
            panel(out, MARGIN + col * (PANEL_W + MARGIN), MARGIN + 20 + row * (PANEL_H + 2 * MARGIN),
                  work_mem, workers, median, plans)
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
