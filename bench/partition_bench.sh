#!/usr/bin/env bash
# ORDER BY over a partitioned table: PostgreSQL's plan against gpusort's
# (one GpuSort over the Append, or a Merge Append of one GpuSort per
# partition, whichever the costs pick), in one run on one server.
#
#   bench/partition_bench.sh OUTDIR
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with gpusort
# installed and preloaded. Builds tp (ROWS rows, PARTS range partitions on
# id; int4 key k, int4 id, md5 text), then for each work_mem x workers cell
# times each query with gpusort.enabled off and on, REPEAT times (fresh
# session, EXPLAIN (ANALYZE, TIMING OFF), OFFSET past the end). Writes
# OUTDIR/partitions.csv and OUTDIR/partition_plans.txt and prints medians.
#
#   ROWS=10000000 PARTS=8 WORK_MEMS="64MB 256MB" WORKERS="0 2" REPEAT=3
set -uo pipefail
out=${1:?usage: bench/partition_bench.sh OUTDIR}
rows=${ROWS:-10000000}
parts=${PARTS:-8}
repeat=${REPEAT:-3}
mkdir -p "$out"
csv="$out/partitions.csv"
plans="$out/partition_plans.txt"
echo "rows,parts,work_mem,workers,query,mode,run,ms,plan" > "$csv"
: > "$plans"
psql_q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

psql_q -c "CREATE EXTENSION IF NOT EXISTS gpusort" >/dev/null
{
  echo "DROP TABLE IF EXISTS tp; CREATE TABLE tp (k int4, id int4, pad text) PARTITION BY RANGE (id);"
  for p in $(seq 0 $((parts - 1))); do
    lo=$((p * rows / parts + 1)); hi=$(((p + 1) * rows / parts + 1))
    echo "CREATE TABLE tp_$p PARTITION OF tp FOR VALUES FROM ($lo) TO ($hi);"
  done
  echo "SELECT setseed(0.25);"
  echo "INSERT INTO tp SELECT (random() * 2147483647)::int4, i, md5(i::text) FROM generate_series(1, $rows) i;"
  echo "VACUUM ANALYZE tp;"
} | psql_q >/dev/null
psql_q -c "SELECT count(*) FROM tp" >/dev/null

declare -A query_sql=(
  [order_by_k]="SELECT * FROM tp ORDER BY k OFFSET $rows"
  [order_by_k_limit1000]="SELECT * FROM tp ORDER BY k LIMIT 1000"
)
for wm in ${WORK_MEMS:-64MB 256MB}; do
  for w in ${WORKERS:-0 2}; do
    settings="SET work_mem = '$wm'; SET max_parallel_workers_per_gather = $w; LOAD 'gpusort';"
    for q in order_by_k order_by_k_limit1000; do
      for mode in off on; do
        plan=$(psql_q -c "$settings SET gpusort.enabled = $mode; EXPLAIN (COSTS OFF) ${query_sql[$q]}")
        { echo "### work_mem=$wm workers=$w $q gpusort=$mode"; echo "$plan"; echo; } >> "$plans"
        top=$(echo "$plan" | grep -oE "Merge Append|Custom Scan \(GpuSort\)|Gather Merge|Sort" | head -n 1 | tr ' ' '_')
        for run in $(seq 1 "$repeat"); do
          ms=$(psql_q -c "$settings SET gpusort.enabled = $mode; EXPLAIN (ANALYZE, TIMING OFF) ${query_sql[$q]}" |
               sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
          echo "$rows,$parts,$wm,$w,$q,$mode,$run,$ms,$top" >> "$csv"
        done
      done
    done
  done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
runs, plan = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["ms"]:
        key = (r["work_mem"], int(r["workers"]), r["query"], r["mode"])
        runs.setdefault(key, []).append(float(r["ms"]))
        plan[key] = r["plan"]
print(f"{'work_mem':>8} {'workers':>7} {'query':<22} {'pg':>8} {'gpusort':>8} {'ratio':>6}  plans")
for key in sorted({k[:3] for k in runs}):
    off, on = runs.get(key + ("off",)), runs.get(key + ("on",))
    if off and on:
        a, b = statistics.median(off), statistics.median(on)
        print(f"{key[0]:>8} {key[1]:>7} {key[2]:<22} {a:>8.0f} {b:>8.0f} {b / a:>6.2f}  "
              f"{plan[key + ('off',)]} / {plan[key + ('on',)]}")
PY
