#!/usr/bin/env bash
# ORDER BY ... LIMIT through the approximate opt-in against the exact
# GpuSort (issue 46's goal: the quantile opt-in at most half the exact
# GpuSort's time at 10M rows), and all rows (OFFSET past the end).
#
#   bench/quantile_limit.sh OUTDIR [ROWS]     (default ROWS 10000000)
#
# Needs a running server (PGHOST/PGPORT/PGUSER) with gpusort installed and
# preloaded; bench/device_run.sh quantile runs it. Builds q_ROWS (int4 key
# u uniform, int4 key z Zipf-like, float8 key f, a payload), then times
# each query REPEAT times (default 3) per mode from psql's \timing (the
# opt-in approximates only the client's own statement, so the time must be
# taken by the client), parallel workers off and work_mem 4GB (the
# approximate sort is an in-memory one). Writes OUTDIR/quantile_limit.csv
# (one row per run) and OUTDIR/quantile_limit_plans.txt (EXPLAIN ANALYZE of
# each), and prints the medians and the ratios to the exact GpuSort.
set -uo pipefail
out=${1:?usage: bench/quantile_limit.sh OUTDIR [ROWS]}
rows=${2:-10000000}
repeat=${REPEAT:-3}
table="q_$rows"
csv="$out/quantile_limit.csv"
plans="$out/quantile_limit_plans.txt"
mkdir -p "$out"
echo "rows,query,mode,run,ms" > "$csv"
: > "$plans"
psql_q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

psql_q -c "CREATE EXTENSION IF NOT EXISTS gpusort" > /dev/null
if [ "$(psql_q -c "SELECT to_regclass('$table') IS NOT NULL")" != t ]; then
  psql_q -c "SELECT setseed(0.46)" -c "CREATE TABLE $table AS
    SELECT i AS id, (random() * 2e9)::int AS u,
      (1 / (random() ^ 2 + 1e-9))::int AS z,
      (i % 8) * 1e9 + random() * 1e3 AS f, md5(i::text) AS payload
    FROM generate_series(1, $rows) i" -c "ANALYZE $table" || exit 1
fi

settings="SET max_parallel_workers_per_gather = 0; SET work_mem = '4GB'; SET gpusort.min_rows = 0;"
declare -A mode_settings=(
  [exact]="SET gpusort.approximate_intervals = 0;"
  [width]="SET gpusort.approximate_intervals = 1000; SET gpusort.approximate_mode = width;"
  [quantile]="SET gpusort.approximate_intervals = 1000; SET gpusort.approximate_mode = quantile;"
)
declare -A queries=(
  [u_limit_1000]="SELECT * FROM $table ORDER BY u LIMIT 1000"
  [z_limit_1000]="SELECT * FROM $table ORDER BY z LIMIT 1000"
  [f_limit_1000]="SELECT * FROM $table ORDER BY f DESC LIMIT 1000"
  [u_all]="SELECT * FROM $table ORDER BY u OFFSET $rows"
  [z_all]="SELECT * FROM $table ORDER BY z OFFSET $rows"
)
for name in u_limit_1000 z_limit_1000 f_limit_1000 u_all z_all; do
  for mode in exact width quantile; do
    query=${queries[$name]}
    {
      echo "== $name, $mode"
      psql -X -q -c "$settings ${mode_settings[$mode]}" \
        -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $query"
    } >> "$plans" 2>&1
    for run in $(seq 1 "$repeat"); do
      ms=$(psql -X -q -c "$settings ${mode_settings[$mode]}" -c '\timing on' \
             -c "$query" 2>&1 | grep -E '^Time: ' | tail -n 1 | sed -E 's/^Time: ([0-9.]+) ms.*/\1/')
      echo "$rows,$name,$mode,$run,${ms:-}" >> "$csv"
    done
  done
done

# medians, and each mode's over the exact GpuSort's
python3 - "$csv" <<'PY'
import csv, statistics, sys
times = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["ms"]:
        times.setdefault((r["query"], r["mode"]), []).append(float(r["ms"]))
print("%-14s %10s %10s %10s %8s %8s" % ("query", "exact", "width", "quantile", "w/exact", "q/exact"))
for q in sorted({k[0] for k in times}):
    m = {mode: statistics.median(times[(q, mode)]) for mode in ("exact", "width", "quantile")
         if (q, mode) in times}
    if len(m) == 3:
        print("%-14s %10.1f %10.1f %10.1f %8.2f %8.2f" % (q, m["exact"], m["width"], m["quantile"],
              m["width"] / m["exact"], m["quantile"] / m["exact"]))
PY
