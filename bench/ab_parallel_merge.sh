#!/usr/bin/env bash
# gpusort.parallel_merge on against off in one build and one run on the GPU
# machine (installed as bench/device_run.sh does), with PostgreSQL and the
# floor for context: CELLS ("work_mem/workers" ...), SHAPES (k, gk), ROWS,
# REPEAT. Prints medians and the share of PostgreSQL's sorting cost left;
# the runs go to $OUT/pm.csv.
set -u
OUT=${OUT:-/tmp/out}
MWP=8 bash bench/device_run.sh sql /dev/null > /dev/null 2>&1
export PATH=/tmp/gpusort-pg15/bin:$PATH PGHOST=/tmp PGPORT=5432 PGUSER=pgrun PGDATABASE=postgres
rows=${ROWS:-10000000}
psql -X -q -c "DROP TABLE IF EXISTS t; SELECT setseed(0.25); CREATE TABLE t AS SELECT (random() * 2147483647)::int4 AS k, (random() * 1000000)::int4 AS g, (random() * 9.2e18)::int8 AS b, i AS id, md5(i::text) AS pad FROM generate_series(1, $rows) i;" >/dev/null
psql -X -q -c "VACUUM ANALYZE t" >/dev/null
psql -X -q -c "SELECT count(*) FROM t" >/dev/null
csv=$OUT/pm.csv; : > $csv
run() { # wm w label settings query
  ms=$(psql -X -At -c "SET work_mem='$1'; SET max_parallel_workers_per_gather=$2; $4 EXPLAIN (ANALYZE, TIMING OFF) $5" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
  echo "$1,$2,$3,$ms" >> $csv
}
for cell in ${CELLS:-64MB/2 64MB/8 4MB/2 4MB/8}; do
  wm=${cell%/*}; w=${cell#*/}
  for rep in $(seq 1 ${REPEAT:-3}); do
    run $wm $w floor "" "SELECT * FROM t OFFSET $rows"
    for shape in ${SHAPES:-k gk}; do
      run $wm $w "pg $shape" "SET gpusort.enabled=off;" "SELECT * FROM t ORDER BY ${shape/gk/g, k} OFFSET $rows"
      run $wm $w "ranges $shape" "SET gpusort.parallel_merge=on;" "SELECT * FROM t ORDER BY ${shape/gk/g, k} OFFSET $rows"
      run $wm $w "leader $shape" "SET gpusort.parallel_merge=off;" "SELECT * FROM t ORDER BY ${shape/gk/g, k} OFFSET $rows"
    done
  done
  psql -X -At -c "SET work_mem='$wm'; SET max_parallel_workers_per_gather=$w; EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM t ORDER BY k OFFSET $rows" | grep -E "Ranges|Shares Time|Emit Time|Workers Launched|Execution" | tr -s ' ' | tr '\n' ';' | sed "s|^|$cell ranges breakdown: |"; echo
done
python3 - $csv <<'PY'
import csv, statistics, sys
d = {}
for wm, w, label, ms in csv.reader(open(sys.argv[1])):
    if ms: d.setdefault((wm, w), {}).setdefault(label, []).append(float(ms))
for cell, v in d.items():
    fl = statistics.median(v['floor'])
    for shape in [s for s in ("k", "gk") if "ranges " + s in v]:
        pg = statistics.median(v['pg ' + shape]); r = statistics.median(v['ranges ' + shape]); l = statistics.median(v['leader ' + shape])
        print(f"{cell[0]:>5} {cell[1]} {shape:<4} floor {fl:6.0f} pg {pg:6.0f} ranges {r:6.0f} [{min(v['ranges '+shape]):.0f}-{max(v['ranges '+shape]):.0f}] leader {l:6.0f} [{min(v['leader '+shape]):.0f}-{max(v['leader '+shape]):.0f}]  ranges/leader {r/l:.2f}  left ranges {(r-fl)/(pg-fl):.2f} leader {(l-fl)/(pg-fl):.2f}")
PY
grep -c "terminated by signal" /tmp/gpusort-pg.log
