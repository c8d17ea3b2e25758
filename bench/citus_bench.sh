#!/usr/bin/env bash
# A smoke benchmark of gpusort on a Citus cluster on one host: a
# coordinator and two workers (ports PORT..PORT+2), each with gpusort
# preloaded and so its own GPU service, all sharing this machine's GPU(s).
# It shows function, not scale: three nodes on one host compete for the
# same cores, memory and GPU.
#
#   bench/citus_bench.sh OUTDIR
#
# Needs Citus and gpusort installed into the server PG_CONFIG names, and is
# run as root (servers run as RUN_AS, default postgres). Builds a
# hash-distributed table t (ROWS rows, 8 shards: int4 k, int4 id, md5
# text), then times `ORDER BY k LIMIT 1000` (pushed down to the workers,
# merged on the coordinator) and `ORDER BY k` (sorted on the coordinator)
# with gpusort.enabled off and on on every node (ALTER SYSTEM, reload),
# REPEAT times each, with each plan's sort nodes recorded. Settings are
# PostgreSQL's defaults plus shared_buffers SHARED_BUFFERS and
# gpusort.service_memory_budget BUDGET_MB per node (three services share
# one GPU). Writes OUTDIR/citus.csv and OUTDIR/citus_plans.txt.
#
#   ROWS=10000000 REPEAT=3 PORT=9800 SHARED_BUFFERS=4GB BUDGET_MB=16384
set -uo pipefail
out=${1:?usage: bench/citus_bench.sh OUTDIR}
rows=${ROWS:-10000000}
repeat=${REPEAT:-3}
port=${PORT:-9800}
run_as=${RUN_AS:-postgres}
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($pg_config --bindir)
mkdir -p "$out"; chmod a+rwx "$out"
csv="$out/citus.csv"; plans="$out/citus_plans.txt"
echo "rows,query,mode,run,ms,coordinator_sort,worker_sort" > "$csv"; : > "$plans"
work=$(mktemp -d /tmp/gpusort-citus-bench.XXXXXX); chown "$run_as" "$work"
ports=("$port" $((port + 1)) $((port + 2)))
as_user() { su "$run_as" -s /bin/bash -c "$*"; }
q() { local p=$1; shift; "$bindir/psql" -X -q -At -h "$work" -p "$p" -U "$run_as" -d postgres -v ON_ERROR_STOP=1 "$@"; }
stop_all() { for p in "${ports[@]}"; do as_user "$bindir/pg_ctl -D $work/n$p -m fast stop" >/dev/null 2>&1; done; }
trap stop_all EXIT

for p in "${ports[@]}"; do
  as_user "$bindir/initdb -D $work/n$p -A trust -U $run_as" > "$work/initdb-$p.log" 2>&1 || { cat "$work/initdb-$p.log"; exit 1; }
  cat >> "$work/n$p/postgresql.conf" <<CONF
listen_addresses = 'localhost'
unix_socket_directories = '$work'
port = $p
shared_preload_libraries = 'citus,gpusort'
shared_buffers = '${SHARED_BUFFERS:-4GB}'
gpusort.service_memory_budget = ${BUDGET_MB:-16384}
max_worker_processes = 24
citus.node_conninfo = 'sslmode=${SSLMODE:-prefer}'
CONF
  as_user "$bindir/pg_ctl -D $work/n$p -l $work/server-$p.log -w start" > /dev/null || { tail "$work/server-$p.log"; exit 1; }
  q "$p" -c "CREATE EXTENSION citus" -c "CREATE EXTENSION gpusort" > /dev/null
done
coord=${ports[0]}
q "$coord" -c "SELECT citus_set_coordinator_host('localhost', $coord)" \
  -c "SELECT citus_add_node('localhost', ${ports[1]})" -c "SELECT citus_add_node('localhost', ${ports[2]})" > /dev/null
q "$coord" <<SQL > /dev/null
CREATE TABLE t (k int4, id int4, pad text);
SELECT create_distributed_table('t', 'id', shard_count := 8);
SELECT setseed(0.25);
INSERT INTO t SELECT (random() * 2147483647)::int4, i, md5(i::text) FROM generate_series(1, $rows) i;
SQL
q "$coord" -c "SELECT run_command_on_workers('VACUUM ANALYZE')" > /dev/null
q "$coord" -c "ANALYZE t" -c "SELECT count(*) FROM t" > /dev/null

set_everywhere() {
  for p in "${ports[@]}"; do
    q "$p" -c "ALTER SYSTEM SET gpusort.enabled = $1" -c "SELECT pg_reload_conf()" > /dev/null
  done
  sleep 1
}
declare -A query_sql=(
  [order_by_k_limit1000]="SELECT * FROM t ORDER BY k LIMIT 1000"
  [order_by_k]="SELECT * FROM t ORDER BY k OFFSET $rows"
)
for mode in off on; do
  set_everywhere "$mode"
  for name in order_by_k_limit1000 order_by_k; do
    plan=$(q "$coord" -c "SET citus.explain_all_tasks = on" -c "EXPLAIN (VERBOSE, COSTS OFF) ${query_sql[$name]}")
    { echo "### $name gpusort=$mode"; echo "$plan"; echo; } >> "$plans"
    coordinator_sort=$(echo "$plan" | head -n 4 | grep -oE "GpuSort|Sort" | head -n 1)
    worker_sort=$(echo "$plan" | grep -A 3 "Task Count\|Node: host" | grep -oE "GpuSort|Sort" | sort -u | tr '\n' ' ')
    for run in $(seq 1 "$repeat"); do
      ms=$(q "$coord" -c "EXPLAIN (ANALYZE, TIMING OFF) ${query_sql[$name]}" | sed -n 's/^Execution Time: \([0-9.]*\) ms$/\1/p')
      echo "$rows,$name,$mode,$run,$ms,${coordinator_sort:-none},${worker_sort:-none}" >> "$csv"
    done
  done
done
for p in "${ports[@]}"; do
  grep -H "terminated by signal" "$work/server-$p.log" || true
done
echo "GPU jobs per node:"
for p in "${ports[@]}"; do echo "  port $p: $(q "$p" -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")"; done
python3 - "$csv" <<'PY'
import csv, statistics, sys
runs, plan = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["ms"]:
        runs.setdefault((r["query"], r["mode"]), []).append(float(r["ms"]))
        plan[(r["query"], r["mode"])] = f'coordinator {r["coordinator_sort"]}, workers {r["worker_sort"].strip()}'
for name in sorted({k[0] for k in runs}):
    off, on = runs.get((name, "off")), runs.get((name, "on"))
    if off and on:
        a, b = statistics.median(off), statistics.median(on)
        print(f"{name:<22} citus {a:8.0f} ms   citus+gpusort {b:8.0f} ms   ratio {b / a:5.2f}")
        print(f"    plans: off: {plan[(name, 'off')]}; on: {plan[(name, 'on')]}")
PY
