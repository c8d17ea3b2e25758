#!/usr/bin/env bash
# A/B of two builds in one run on the GPU machine, alternated (ORDER, default
# "base new new base"): .device-carry/build_base.tgz and build_new.tgz, each
# packed with bench/device_run.sh pack; gpusort only (MODES=on) through
# bench/sql_matrix.sh, then EXPLAIN ANALYZE step timers per cell. Prints the
# medians per build; the runs go to $OUT/ab.csv.
set -u
OUT=${OUT:-/tmp/out}
runs=/tmp/abruns
rm -rf $runs; mkdir -p $runs
export PATH=/tmp/gpusort-pg15/bin:$PATH PGHOST=/tmp PGPORT=5432 PGUSER=pgrun PGDATABASE=postgres
cat /sys/kernel/mm/transparent_hugepage/enabled
n=0
for b in ${ORDER:-base new new base}; do
  n=$((n + 1))
  echo "=== round $n: $b"
  OUT=$runs/$n-$b BUILD=.device-carry/build_$b.tgz MWP=8 REUSE_TABLE=1 MODES="$([ $n = 1 ] && echo "${FIRST_MODES:-on}" || echo on)" ROWS=${ROWS:-10000000} \
    WORK_MEMS="${WORK_MEMS:-64MB 4GB}" WORKERS="${WORKERS:-0 8}" SHAPES="${SHAPES:-order_by_k order_by_g_k}" REPEAT=${REPEAT:-3} \
    bash bench/device_run.sh matrix 2>&1 | grep -E "ready:|terminated"
  for wm in ${BREAKDOWN_WM-64MB 4GB}; do for w in ${BREAKDOWN_W:-0 8}; do
    psql -X -At -c "SET work_mem='$wm'; SET max_parallel_workers_per_gather=$w; EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM t ORDER BY k OFFSET 100000000" | grep -E "Time: g|Execution" | sed "s/^/$b $wm $w: /"
  done; done
done
for f in $runs/*/matrix/matrix.csv; do b=$(basename $(dirname $(dirname $f))); sed "1d; s/^/$b,/" $f; done > $OUT/ab.csv
python3 - $OUT/ab.csv <<'PY'
import csv, statistics, sys
runs = {}
for r in csv.reader(open(sys.argv[1])):
    build = r[0].split('-', 1)[1] if r[5] == 'on' else 'pg'
    key = (r[2], int(r[3]), r[4])
    runs.setdefault(key, {}).setdefault(build, []).append(float(r[7]))
for key in sorted(runs, key=lambda k: (len(k[0]), k)):
    d = runs[key]
    line = " ".join(f"{b}={statistics.median(v):.0f} [{min(v):.0f}-{max(v):.0f}]" for b, v in sorted(d.items()))
    ratio = statistics.median(d.get('new', [0])) / statistics.median(d.get('base', [1]))
    print(f"{key[0]:>5} {key[1]} {key[2]:<14} {line}  new/base={ratio:.2f}")
PY
grep -c "terminated by signal" /tmp/gpusort-pg.log
