#!/usr/bin/env bash
# SQL benchmark: the same queries with gpusort off (PostgreSQL's own sort)
# and on (GpuSort), on one server, in one run.
#
#   bench/sql_bench.sh OUTDIR [ROWS ...]        (default ROWS: 1000000 10000000)
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with gpusort
# installed and preloaded (shared_preload_libraries: the GPU is reached
# through the GPU service), parallel workers off (as ../shared/device/README.md measures).
# For each table size it builds t_ROWS (int4 key k, int4 g, int8 b, id, and
# a 32-character md5 payload: about 40 bytes of payload per row), then times
# each query shape REPEAT times (default 3) per mode with
# EXPLAIN (ANALYZE, TIMING OFF) and OFFSET past the end, so rows do not
# travel to the client. Writes OUTDIR/sql_bench.csv (one row per run) and
# OUTDIR/sql_plans.txt (the GpuSort plans with their EXPLAIN ANALYZE
# details), and prints the medians and ratios last.
#
#   SHAPES="order_by_k order_by_int8"   only these query shapes (default: all)
#   WORK_MEM=16GB                       the session's work_mem (default 4GB;
#                                       50M rows need more to sort in memory)
set -uo pipefail
out=${1:?usage: bench/sql_bench.sh OUTDIR [ROWS ...]}
shift
sizes=${*:-1000000 10000000}
repeat=${REPEAT:-3}
work_mem=${WORK_MEM:-4GB}
only_shapes=${SHAPES:-}
mkdir -p "$out"
csv="$out/sql_bench.csv"
plans="$out/sql_plans.txt"
echo "rows,shape,mode,run,ms,gpusort_used" > "$csv"
: > "$plans"

psql_q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

psql_q -c "CREATE EXTENSION IF NOT EXISTS gpusort" >/dev/null
psql_q -c "SELECT name || ': ' || value FROM gpusort_info()"

for rows in $sizes; do
  table="t_$rows"
  echo "== building $table"
  psql_q <<SQL
DROP TABLE IF EXISTS $table;
SELECT setseed(0.25);
CREATE TABLE $table AS
  SELECT (random() * 2147483647)::int4 AS k, (random() * 1000000)::int4 AS g,
         (random() * 9.2e18)::int8 AS b, i AS id, md5(i::text) AS pad
  FROM generate_series(1, $rows) i;
VACUUM ANALYZE $table;
DROP TABLE IF EXISTS dim;
CREATE TABLE dim AS SELECT i AS g, 'group ' || i AS name FROM generate_series(0, 999) i;
ANALYZE dim;
SQL
  # warm the cache
  psql_q -c "SELECT count(*) FROM $table" >/dev/null

  while IFS='|' read -r shape query settings; do
    [ -z "$shape" ] && continue
    if [ -n "$only_shapes" ] && [[ " $only_shapes " != *" $shape "* ]]; then continue; fi
    for mode in off on; do
      for run in $(seq 1 "$repeat"); do
        result=$(psql_q <<SQL
SET work_mem = '$work_mem';
LOAD 'gpusort';
SET gpusort.enabled = $mode;
$settings
EXPLAIN (ANALYZE, TIMING OFF) $query;
SQL
)
        ms=$(echo "$result" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
        used=$(echo "$result" | grep -q "GpuSort" && echo yes || echo no)
        echo "$rows,$shape,$mode,$run,$ms,$used" >> "$csv"
      done
    done
    # one more run with timing on, for the plan and GpuSort's time split
    # (not counted: per-node timing slows every node down)
    { echo "### $rows rows, $shape: $query ($settings)"
      psql_q <<SQL
SET work_mem = '$work_mem';
LOAD 'gpusort';
$settings
EXPLAIN (ANALYZE) $query;
SQL
      echo; } >> "$plans"
  done <<SHAPES
scan_only|SELECT * FROM $table OFFSET $rows|
order_by_k|SELECT * FROM $table ORDER BY k OFFSET $rows|
order_by_k_desc|SELECT * FROM $table ORDER BY k DESC OFFSET $rows|
order_by_g_k|SELECT * FROM $table ORDER BY g, k OFFSET $rows|
order_by_int8|SELECT * FROM $table ORDER BY b OFFSET $rows|
order_by_k_limit|SELECT * FROM $table ORDER BY k LIMIT 1000|
join_order_by_k|SELECT t.*, d.name FROM $table t JOIN dim d ON d.g = t.g % 1000 ORDER BY t.k OFFSET $rows|
approx_k|SELECT * FROM $table ORDER BY k OFFSET $rows|SET gpusort.approximate_intervals = 10000;
approx_k_limit|SELECT * FROM $table ORDER BY k LIMIT 1000|SET gpusort.approximate_intervals = 10000;
SHAPES
  psql_q -c "DROP TABLE $table" >/dev/null
done

echo
echo "medians (ms): PostgreSQL sort (gpusort off) vs GpuSort (on)"
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
groups = {}
for r in rows:
    if r["ms"]:
        groups.setdefault((int(r["rows"]), r["shape"], r["mode"]), []).append((float(r["ms"]), r["gpusort_used"]))
print(f"{'rows':>10} {'shape':<18} {'pg_ms':>10} {'gpusort_ms':>11} {'ratio':>6}  plan")
seen = []
for (n, shape, mode) in groups:
    if (n, shape) not in seen:
        seen.append((n, shape))
for n, shape in seen:
    off = groups.get((n, shape, "off"), [])
    on = groups.get((n, shape, "on"), [])
    if not off or not on:
        continue
    a = statistics.median(m for m, _ in off)
    b = statistics.median(m for m, _ in on)
    used = "GpuSort" if on[0][1] == "yes" else "PostgreSQL"
    print(f"{n:>10} {shape:<18} {a:>10.1f} {b:>11.1f} {b / a:>6.2f}  {used}")
PY
