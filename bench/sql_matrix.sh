#!/usr/bin/env bash
# The configuration matrix: PostgreSQL's sort against GpuSort across
# work_mem and parallel workers, with each cell's floor (the same scan
# without the ORDER BY), in one run on one server.
#
#   bench/sql_matrix.sh OUTDIR
#
# Needs a running server reachable through PGHOST/PGPORT/PGUSER with gpusort
# installed and preloaded (the GPU service): on the GPU machine,
# bench/device_run.sh matrix (PG_MAJOR=18 for PostgreSQL 18). Builds t
# (int4 key k, int4 g, int8 b, id, a 32-character md5 payload), then for every cell (work_mem x max_parallel_workers_per_gather)
# times every shape with gpusort.enabled off and on, each pair after a run
# of the shape's floor, REPEAT times (fresh session per run, EXPLAIN
# (ANALYZE, TIMING OFF, BUFFERS OFF: 18 would count buffers by default),
# OFFSET past the end so rows do not travel to the client). Writes
# OUTDIR/matrix.csv (one row per run), OUTDIR/matrix_plans.txt (each
# cell's plans) and prints per cell the medians, the ratio, and how much of
# PostgreSQL's sorting cost (time above the floor) gpusort leaves. The join
# shape's floor is the same join without the ORDER BY.
#
#   ROWS=10000000  WORK_MEMS="4MB 64MB 1GB 4GB"  WORKERS="0 2 8"  REPEAT=3
#   SHAPES="order_by_k order_by_k_limit1000"   (names from the list below)
#   REUSE_TABLE=1: keep a t (and dim) of ROWS rows left by an earlier run
#   MODES="on": time only GpuSort (to compare two builds in one run)
set -uo pipefail
out=${1:?usage: bench/sql_matrix.sh OUTDIR}
rows=${ROWS:-10000000}
work_mems=${WORK_MEMS:-4MB 64MB 1GB 4GB}
workers_list=${WORKERS:-0 2 8}
repeat=${REPEAT:-3}
mkdir -p "$out"
csv="$out/matrix.csv"
plans="$out/matrix_plans.txt"
echo "rows,work_mem,workers,shape,mode,run,ms,top_sort" > "$csv"
: > "$plans"

psql_q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

declare -A shape_sql=(
  [floor]="SELECT * FROM t OFFSET $rows"
  [floor_join]="SELECT t.*, d.name FROM t JOIN dim d ON d.g = t.g % 1000 OFFSET $rows"
  [order_by_k]="SELECT * FROM t ORDER BY k OFFSET $rows"
  [order_by_k_desc]="SELECT * FROM t ORDER BY k DESC OFFSET $rows"
  [order_by_g_k]="SELECT * FROM t ORDER BY g, k OFFSET $rows"
  [order_by_int8]="SELECT * FROM t ORDER BY b OFFSET $rows"
  [order_by_k_limit10]="SELECT * FROM t ORDER BY k LIMIT 10"
  [order_by_k_limit1000]="SELECT * FROM t ORDER BY k LIMIT 1000"
  [order_by_k_limit100000]="SELECT * FROM t ORDER BY k LIMIT 100000"
  [join_order_by_k]="SELECT t.*, d.name FROM t JOIN dim d ON d.g = t.g % 1000 ORDER BY t.k OFFSET $rows"
)
shapes=${SHAPES:-order_by_k order_by_k_desc order_by_g_k order_by_int8 order_by_k_limit10 order_by_k_limit1000 order_by_k_limit100000 join_order_by_k}

psql_q -c "CREATE EXTENSION IF NOT EXISTS gpusort" >/dev/null
psql_q -c "SELECT name || ': ' || value FROM gpusort_info()"
if [ "${REUSE_TABLE:-0}" = 1 ] &&
   [ "$(psql_q -c "SELECT count(*) FROM t" 2>/dev/null)" = "$rows" ] &&
   [ "$(psql_q -c "SELECT count(*) FROM dim" 2>/dev/null)" = 1000 ]; then
  echo "== reusing t ($rows rows)"
else
echo "== building t ($rows rows)"
psql_q <<SQL
DROP TABLE IF EXISTS t;
SELECT setseed(0.25);
CREATE TABLE t AS
  SELECT (random() * 2147483647)::int4 AS k, (random() * 1000000)::int4 AS g,
         (random() * 9.2e18)::int8 AS b, i AS id, md5(i::text) AS pad
  FROM generate_series(1, $rows) i;
VACUUM ANALYZE t;
DROP TABLE IF EXISTS dim;
CREATE TABLE dim AS SELECT i AS g, 'group ' || i AS name FROM generate_series(0, 999) i;
ANALYZE dim;
SQL
fi
psql_q -c "SELECT count(*) FROM t" >/dev/null   # warm the cache

# milliseconds of one run of a query, in a fresh session
timed_run() {
  psql_q -c "$1 EXPLAIN (ANALYZE, TIMING OFF, BUFFERS OFF) $2" |
    sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p'
}

# the sort node at the top of a plan, in words; a Gather Merge over
# partial GpuSorts is Gather_Merge_over_GpuSort
top_sort() {
  local nodes
  nodes=$(grep -oE "Custom Scan \(GpuSort\)|Gather Merge|Incremental Sort|Sort" | head -n 2 | tr '\n' '|')
  case "$nodes" in
    "Gather Merge|Custom Scan (GpuSort)|") echo Gather_Merge_over_GpuSort ;;
    *) echo "${nodes%%|*}" | tr ' ' '_' ;;
  esac
}

for wm in $work_mems; do
  for w in $workers_list; do
    settings="SET work_mem = '$wm'; SET max_parallel_workers_per_gather = $w; LOAD 'gpusort';"
    for shape in $shapes; do
      modes=${MODES:-off on}
      floor_shape=floor
      case "$shape" in join*) floor_shape=floor_join ;; esac
      query=${shape_sql[$shape]}
      declare -A top=()
      for mode in $modes; do
        plan=$(psql_q -c "$settings SET gpusort.enabled = $mode; EXPLAIN (COSTS OFF) $query")
        { echo "### work_mem=$wm workers=$w $shape gpusort=$mode"; echo "$plan"; echo; } >> "$plans"
        top[$mode]=$(echo "$plan" | top_sort)
      done
      # the floor and the modes take turns, so that a slow spell of the
      # machine falls on all of them (the floor's median is over every
      # shape's turns in the cell)
      for run in $(seq 1 "$repeat"); do
        ms=$(timed_run "$settings SET gpusort.enabled = off;" "${shape_sql[$floor_shape]}")
        echo "$rows,$wm,$w,$floor_shape,off,$run,$ms,none" >> "$csv"
        for mode in $modes; do
          ms=$(timed_run "$settings SET gpusort.enabled = $mode;" "$query")
          echo "$rows,$wm,$w,$shape,$mode,$run,$ms,${top[$mode]:-none}" >> "$csv"
        done
      done
    done
    echo "cell work_mem=$wm workers=$w done"
  done
done

echo
echo "medians (ms) per cell; left = (gpusort - floor) / (PostgreSQL - floor)"
python3 - "$csv" <<'PY'
import csv, statistics, sys
runs = {}
top = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["ms"]:
        key = (r["work_mem"], int(r["workers"]), r["shape"], r["mode"])
        runs.setdefault(key, []).append(float(r["ms"]))
        top[key] = r["top_sort"]
cells = sorted({(k[0], k[1]) for k in runs}, key=lambda c: (len(c[0]), c[0], c[1]))
shapes = []
for k in runs:
    if not k[2].startswith("floor") and k[2] not in shapes:
        shapes.append(k[2])
print(f"{'work_mem':>8} {'workers':>7} {'shape':<24} {'floor':>8} {'pg':>9} {'gpusort':>9} {'ratio':>6} {'left':>6}  plans (pg / gpusort)")
for wm, w in cells:
    for s in shapes:
        floor_shape = "floor_join" if s.startswith("join") else "floor"
        floor = statistics.median(runs.get((wm, w, floor_shape, "off"), [0]))
        off = runs.get((wm, w, s, "off"))
        on = runs.get((wm, w, s, "on"))
        if not off or not on:
            continue
        a, b = statistics.median(off), statistics.median(on)
        left = (b - floor) / (a - floor) if a > floor else float("nan")
        print(f"{wm:>8} {w:>7} {s:<24} {floor:>8.0f} {a:>9.0f} {b:>9.0f} {b / a:>6.2f} {left:>6.2f}  "
              f"{top.get((wm, w, s, 'off'))} / {top.get((wm, w, s, 'on'))}")
PY
