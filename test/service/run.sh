#!/usr/bin/env bash
# The GPU service end to end, on any machine: test/service/run.sh
#
# Starts a throwaway server (PostgreSQL's defaults, gpusort preloaded) whose
# gpusort-gpud processes run in the service's test mode
# (GPUSORT_SERVICE_EMULATE: the CPU engine plays a GPU of a given memory,
# GPUSORT_SERVICE_EMULATE_DELAY_MS makes each job last), so everything but
# CUDA itself runs as in production: the worker, the processes it starts,
# the staging memory, admission, the queue, cancellation, crashes. Checks:
#   1. the regress suite with gpusort.device = gpu, every sort through the
#      service (two emulated GPUs), then the differential fuzzer the same
#      way (GPUSORT_SERVICE_FUZZ_SECONDS per seed, default 30);
#   2. gpusort_info() and gpusort_stats; two concurrent sorts on two GPUs;
#      twelve through a small staging area, and sorts larger than it;
#   3. statement_timeout and pg_cancel_backend end a job promptly, and its
#      memory comes back;
#   4. a full budget: a sort waits in the queue, and under auto runs on the
#      CPU after gpusort.queue_timeout, without a warning; EXPLAIN ANALYZE
#      shows the wait;
#   4b. a sort beyond work_mem holds its rows in the service's memory
#      (gpusort.spill_to_gpu): the rows and order of PostgreSQL's sort, files
#      for what does not fit, scroll cursors, top-N per group read back,
#      kill -9 of the process holding them (an error, no crash); prefix
#      keys (long text, numeric), their ties put in order as the rows come
#      back, serial and parallel;
#   4c. a parallel GpuSort's processes append their rows to one rows job
#      the leader sorts: PostgreSQL's rows and order, no files; files for
#      what does not fit; rescans;
#   4d. a cursor read slowly gives its rows job's GPU memory to a sort
#      that waits for it (its rows to a file in the cursor's temporary
#      tablespace, unless they pass its temp_file_limit), and still reads
#      PostgreSQL's rows in order;
#   4e. concurrent sorts each holding a rows job do not wait for each
#      other's GPU memory;
#   5. kill -9 of a gpusort-gpud mid-sort: the sort finishes on the CPU
#      (auto) or fails with a clear error (gpu), the process comes back, and
#      PostgreSQL does not restart;
#   6. a server without the service (LOAD only) sorts on the CPU and says
#      why.
# Ends with "N passed, M failed". Expects gpusort built and installed.
set -uo pipefail
cd "$(dirname "$0")/../.."
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($pg_config --bindir)

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
bad() { failed=$((failed + 1)); echo "not ok - $1${2:+: $2}"; }
check() { # check NAME EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected [$2], got [$3]"; fi
}
analyze_plan() { # analyze_plan SETTINGS QUERY: $plan, the query's EXPLAIN ANALYZE
  plan=$(psql_q -c "$1 EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $2")
}
plan_has() { # plan_has NAME GLOB [ABSENT]: $plan matches GLOB, and not ABSENT
  if [[ $plan == $2 && ( -z ${3:-} || $plan != $3 ) ]]; then ok "$1"; else bad "$1" "$plan"; fi
}

# shellcheck source=test/lib/server.sh
. test/lib/server.sh
server_workdir service
port=${GPUSORT_SERVICE_TEST_PORT:-54339}
export PGHOST="$workdir" PGPORT="$port" PGUSER="$dbuser" PGDATABASE=postgres
psql_q() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=0 "$@" 2>&1; }

stop_server() {
  server_stop "$workdir/data" fast
}
cleanup() {
  server_stop "$workdir/data"
  if [ "${GPUSORT_KEEP_LOG:-}" != "" ]; then cp "$workdir/server.log" "$GPUSORT_KEEP_LOG" 2>/dev/null; fi
  server_cleanup
}
trap cleanup EXIT

# start_server PRELOAD EMULATE_MB GPUS DELAY_MS [extra conf]
start_server() {
  stop_server
  cat > "$workdir/data/postgresql.auto.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$workdir'
port = $port
shared_preload_libraries = '$1'
${5:-}
CONF
  server_env="GPUSORT_SERVICE_EMULATE=$2 GPUSORT_SERVICE_EMULATE_GPUS=$3 GPUSORT_SERVICE_EMULATE_DELAY_MS=$4" \
    server_pg_ctl "$workdir/data" "$workdir/server.log" -w start >/dev/null \
    || { cat "$workdir/server.log"; bad "server start"; echo "$passed passed, $failed failed"; exit 1; }
  [ -n "$1" ] && wait_ready "${3:-1}"
}

# waits until N GPUs are ready (the service starts them after the server)
wait_ready() {
  for _ in $(seq 1 100); do
    ready=$(psql_q -c "SELECT count(*) FROM gpusort_info() WHERE name LIKE 'gpu%_state' AND value = 'ready'")
    [ "$ready" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# no_leaks NAME: once the sessions ended, the service holds nothing: no
# staging slot, GPU memory, rows job, give-back file, connection or waiter
# (its status page, as gpusort_info() shows it), and no temporary file is
# left in the server's directories
no_leaks() {
  local held files
  for _ in $(seq 1 50); do
    held=$(psql_q -c "SELECT string_agg(name || '=' || value, ' ' ORDER BY name) FROM gpusort_info() WHERE name ~ '^gpu[0-9]+_(slots_used|memory_used_mb|rows_jobs|given_back_files|connections|jobs_waiting)$' AND value <> '0'")
    [ -z "$held" ] && break
    sleep 0.1
  done
  files=$(find "$workdir/data/base/pgsql_tmp" "$workdir/ts" -type f 2>/dev/null | head -n 3)
  if [ -z "$held$files" ]; then ok "$1: nothing left in the service, no temporary file"
  else bad "$1: nothing left in the service, no temporary file" "$held $files"; fi
}

server_init "$workdir/data" || { echo "0 passed, 1 failed"; exit 1; }

# ---- 1. the regress suite through the service ----
echo "== regress suite, gpusort.device = gpu, two emulated GPUs"
start_server gpusort 2048 2 0 "gpusort.device = gpu"
psql_q -c "CREATE EXTENSION gpusort" >/dev/null
make -s installcheck PG_CONFIG="$pg_config" > "$workdir/regress.log" 2>&1
total=$(grep -cE "^(ok|not ok) |^test .*\.\.\. |^     [a-z_]+ +\.\.\. " "$workdir/regress.log")
badn=$(grep -cE "^not ok |\.\.\. FAILED|\.\.\. failed" "$workdir/regress.log")
if [ "$total" -eq 0 ] || [ "$badn" -gt 0 ]; then
  grep -E "\.\.\. " "$workdir/regress.log"
  [ -f regression.diffs ] && head -n 100 regression.diffs
  bad "regress suite through the service" "$badn of $total failed"
else
  ok "regress suite through the service ($total tests)"
fi
jobs=$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")
[ "${jobs:-0}" -gt 100 ] 2>/dev/null && ok "the suite's sorts ran in the service ($jobs jobs)" \
  || bad "the suite's sorts ran in the service" "jobs = $jobs"
used=$(psql_q -c "SELECT count(*) FROM gpusort_stats WHERE gpu <> 'total' AND jobs > 0")
check "both GPUs took jobs" 2 "$used"

# ---- 1b. the differential fuzzer through the service ----
# (its fixed seed and a fresh one, GPUSORT_SERVICE_FUZZ_SECONDS each, 0
# skips it): every GpuSort of its queries under gpusort.device = gpu runs
# in the emulated service, rows jobs included, against PostgreSQL's sort
if [ "${GPUSORT_SERVICE_FUZZ_SECONDS:-30}" != 0 ]; then
  echo "== the differential fuzzer through the service"
  GPUSORT_FUZZ_SECONDS=${GPUSORT_SERVICE_FUZZ_SECONDS:-30} GPUSORT_FUZZ_DEVICE=gpu \
    GPUSORT_FUZZ_DB=gpusort_service_fuzz PG_CONFIG="$pg_config" \
    test/fuzz/run_fuzz.sh > "$workdir/fuzz.log" 2>&1
  line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$workdir/fuzz.log" | tail -n 1)
  if [ -n "$line" ] && [ "$(echo "$line" | cut -d' ' -f3)" = 0 ]; then
    ok "the fuzzer's queries through the service agree with PostgreSQL's sort ($line)"
  else
    grep -E "FAIL|Error|error" "$workdir/fuzz.log" | head -n 20
    bad "the fuzzer's queries through the service agree with PostgreSQL's sort" "${line:-no result}"
  fi
fi

# ---- 2. info, stats, two GPUs at once ----
echo "== gpusort_info(), gpusort_stats, two sorts on two GPUs"
start_server gpusort 2048 2 1500
psql_q -c "CREATE TABLE t AS SELECT (random() * 1e6)::int AS k, g FROM generate_series(1, 200000) g" >/dev/null
check "service state" "ready" "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'service_state'")"
check "service GPUs" "2" "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'service_gpus'")"
check "gpu_usable" "yes" "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu_usable'")"
psql_q -c "SELECT gpusort_stats_reset()" >/dev/null
sort_sql="SET gpusort.device = gpu; SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT array_agg(k) FROM t))) AS u(v)) s"
start=$(date +%s%N)
psql_q -c "$sort_sql" > "$workdir/a.out" &
psql_q -c "$sort_sql" > "$workdir/b.out" &
wait
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "concurrent sort 1 (rows, ordered)" "200000|t" "$(tail -n 1 "$workdir/a.out")"
check "concurrent sort 2 (rows, ordered)" "200000|t" "$(tail -n 1 "$workdir/b.out")"
check "one job on each GPU" "0:1 1:1" \
  "$(psql_q -c "SELECT string_agg(gpu || ':' || jobs, ' ' ORDER BY gpu) FROM gpusort_stats WHERE gpu <> 'total'")"
[ "$ms" -lt 2900 ] && ok "the two 1.5 s jobs ran side by side (${ms} ms)" \
  || bad "the two 1.5 s jobs ran side by side" "${ms} ms"
check "the sorted array is a permutation of the input" "t" \
  "$(psql_q -c "SET gpusort.device = gpu; SELECT (SELECT array_agg(k ORDER BY k) FROM t) = gpu_sort((SELECT array_agg(k) FROM t))")"

# ---- 2b. many sorts at once through a small staging area ----
echo "== 12 concurrent sorts through 16 MB of staging memory"
start_server gpusort 2048 1 0 "gpusort.service_staging_size = 16"
ob_settings="SET gpusort.device = gpu; SET gpusort.min_rows = 0; SET work_mem = '256MB';"
# (the checks' windows read the rows in the order they come, the sorted
# subquery's or unnest()'s: a window with an ORDER BY of its own would sort
# again, and that sort be a GpuSort (sort_sites.c), a job, too; so would the
# Sort PostgreSQL 16 and later put below count(DISTINCT g), which an array
# key keeps PostgreSQL's)
ob_query="SELECT count(*), count(DISTINCT ARRAY[g]), bool_and(ok) FROM (SELECT g, k >= lag(k) OVER () IS NOT FALSE AS ok FROM (SELECT k, g FROM t ORDER BY k) s) s3"
ob_sql="$ob_settings $ob_query"
for i in $(seq 1 6); do
  psql_q -c "$sort_sql" > "$workdir/array$i.out" &
  psql_q -c "$ob_sql" > "$workdir/orderby$i.out" &
done
wait
good=0
for i in $(seq 1 6); do
  [ "$(tail -n 1 "$workdir/array$i.out")" = "200000|t" ] && good=$((good + 1))
  [ "$(tail -n 1 "$workdir/orderby$i.out")" = "200000|200000|t" ] && good=$((good + 1))
done
check "all 12 sorts ordered and complete (ORDER BY: every row once)" 12 "$good"
[ "$good" = 12 ] || head -n 3 "$workdir"/array1.out "$workdir"/orderby1.out
check "they ran in the service" 12 "$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")"
# larger than the staging area: the data streams through a slot in pieces
check "an array sort larger than the staging area (20 MB of keys)" "5000000|t" \
  "$(psql_q -c "SET gpusort.device = gpu; SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT array_agg((random() * 1e9)::int) FROM generate_series(1, 5000000)))) AS u(v)) s" | tail -n 1)"
psql_q -c "CREATE TABLE big AS SELECT (random() * 1e9)::int AS k, g FROM generate_series(1, 1500000) g" >/dev/null
psql_q -c "ANALYZE big" >/dev/null
big_query=${ob_query//FROM t ORDER BY/FROM big ORDER BY}
check "an ORDER BY larger than the staging area (keys and row index, 18 MB)" "1500000|1500000|t" \
  "$(psql_q -c "$ob_settings SET max_parallel_workers_per_gather = 0; $big_query" | tail -n 1)"
check "both streamed through the service" 14 "$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")"
# a parallel GpuSort: every process sorts its share as a job of its own
par_settings="$ob_settings SET parallel_setup_cost = 0; SET max_parallel_workers_per_gather = 2;"
check "a parallel ORDER BY through the service (every row once, in order)" "1500000|1500000|t" \
  "$(psql_q -c "$par_settings $big_query" | tail -n 1)"
jobs_before=$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")
par_plan=$(psql_q -c "$par_settings EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $big_query")
jobs_after=$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")
case "$par_plan" in *"Parallel Sort: merges the shares sorted below"*) ok "it planned as a parallel GpuSort";;
  *) bad "it planned as a parallel GpuSort" "$par_plan";; esac
check "one job sorts the rows every process put in the leader's rows job" \
  1 "$(( jobs_after - jobs_before ))"
# with the rows in files instead, each process sorts its share as a job
jobs_before=$jobs_after
par_plan=$(psql_q -c "$par_settings SET gpusort.spill_to_gpu = off; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $big_query")
jobs_after=$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")
launched=$(sed -n 's/.*Workers Launched: \([0-9]*\).*/\1/p' <<< "$par_plan" | head -n 1)
check "spill_to_gpu = off: one job per process sorting a share (${launched:-?} workers + the leader)" \
  "$(( ${launched:-0} + 1 ))" "$(( jobs_after - jobs_before ))"

# ---- 3. cancellation ----
echo "== statement_timeout and pg_cancel_backend"
start_server gpusort 2048 2 1500
start=$(date +%s%N)
out=$(psql_q -c "SET statement_timeout = 300; $sort_sql")
ms=$(( ($(date +%s%N) - start) / 1000000 ))
case "$out" in *"canceling statement due to statement timeout"*) ok "statement_timeout ends the job";;
  *) bad "statement_timeout ends the job" "$out";; esac
[ "$ms" -lt 1200 ] && ok "and returns promptly (${ms} ms)" || bad "and returns promptly" "${ms} ms"
psql_q -c "SET application_name = 'to_cancel'; $sort_sql" > "$workdir/c.out" &
sleep 0.5
psql_q -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'to_cancel'" >/dev/null
wait
case "$(cat "$workdir/c.out")" in *"canceling statement due to user request"*) ok "pg_cancel_backend ends the job";;
  *) bad "pg_cancel_backend ends the job" "$(cat "$workdir/c.out")";; esac
sleep 0.2
check "no job left running" "0" \
  "$(psql_q -c "SELECT sum(value::int) FROM gpusort_info() WHERE name LIKE 'gpu%_jobs_running'")"
check "the session is usable after the cancel" "200000|t" "$(psql_q -c "$sort_sql" | tail -n 1)"

# ---- 4. a full budget: the queue ----
echo "== the queue: admission by the GPU budget"
# 30 MB of emulated GPU memory: one 200000-key job at a time
start_server gpusort 30 1 1500
psql_q -c "SELECT gpusort_stats_reset()" >/dev/null
psql_q -c "$sort_sql" > "$workdir/a.out" &
sleep 0.3
auto_sql="SET gpusort.queue_timeout = 300; SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT array_agg(k) FROM t))) AS u(v)) s"
out=$(psql_q -c "$auto_sql")
check "under auto, a sort that waited out queue_timeout ran on the CPU" "200000|t" "$(echo "$out" | tail -n 1)"
case "$out" in *WARNING*) bad "no warning for the queue timeout" "$out";; *) ok "no warning for the queue timeout";; esac
psql_q -c "SET gpusort.queue_timeout = '20s'; $sort_sql" > "$workdir/b.out" &
explain=$(psql_q -c "SET work_mem = '256MB'; SET gpusort.min_rows = 0; SET gpusort.device = gpu; SET gpusort.queue_timeout = '20s'; EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM t ORDER BY k")
wait
check "the first sort ran" "200000|t" "$(tail -n 1 "$workdir/a.out")"
check "a sort queued under gpu waited and ran" "200000|t" "$(tail -n 1 "$workdir/b.out")"
# under gpu, no wait is unbounded: one that waits out queue_timeout fails
psql_q -c "$sort_sql" > /dev/null &
sleep 0.3
out=$(psql_q -c "\\set VERBOSITY verbose" -c "SET gpusort.queue_timeout = 300; $sort_sql")
wait
case "$out" in *"ERROR:  53400: the GPU stayed busy: waited "*" ms for GPU memory (gpusort.queue_timeout)"*)
  ok "under gpu, a sort that waited out queue_timeout fails with 53400";;
  *) bad "under gpu, a sort that waited out queue_timeout fails with 53400" "$out";; esac
case "$explain" in *"GPU Queue Wait: "*) ok "EXPLAIN ANALYZE shows the queue wait";;
  *) bad "EXPLAIN ANALYZE shows the queue wait" "$explain";; esac
check "stats: one queue-timeout fallback" "1" \
  "$(psql_q -c "SELECT fallbacks_queue_timeout FROM gpusort_stats WHERE gpu = 'total'")"
queued=$(psql_q -c "SELECT queued_jobs FROM gpusort_stats WHERE gpu = 'total'")
[ "${queued:-0}" -ge 2 ] 2>/dev/null && ok "stats: queued jobs counted ($queued)" || bad "stats: queued jobs counted" "$queued"
out=$(psql_q -c "SET gpusort.device = gpu; SELECT count(*) FROM unnest(gpu_sort((SELECT array_agg(g) FROM generate_series(1, 3000000) g)))")
case "$out" in *"ERROR:  out of GPU memory: the sort needs about "*" MB of GPU memory, more than the service's budget of 27 MB"*)
  ok "too large for the budget: a clear error under gpu";;
  *) bad "too large for the budget: a clear error under gpu" "$out";; esac

# ---- 4b. rows beyond work_mem in the service's memory ----
echo "== a sort beyond work_mem keeps its rows in the service's memory"
start_server gpusort 2048 1 0
psql_q -c "CREATE TABLE rows_t AS SELECT (random() * 1e6)::int AS k, CASE WHEN g % 13 = 0 THEN NULL ELSE g % 101 END AS m, g AS id, md5(g::text) AS pad FROM generate_series(1, 300000) g" >/dev/null
psql_q -c "ANALYZE rows_t" >/dev/null
spill="SET work_mem = '256kB'; SET max_parallel_workers_per_gather = 0; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.explain_details = off;"
analyze_plan "$spill" "SELECT * FROM rows_t ORDER BY k, id"
plan_has "EXPLAIN ANALYZE: every row in the GPU's memory, none on disk" \
  "*Sort Method: rows in GPU memory*Rows in GPU Memory: 300000 (*"
plan_has "no temporary file" "*" "*Disk:*"
ordered() { # ordered SETTINGS ORDER [TABLE]: md5 of every row, in the order the sort gave
  psql_q -c "$1 SELECT count(*) || ' ' || md5(string_agg(r::text, ',')) FROM (SELECT * FROM ${3:-rows_t} ORDER BY $2) r"
}
for order in "k, id" "m DESC NULLS LAST, id" "m NULLS FIRST, k DESC, id"; do
  check "ORDER BY $order: PostgreSQL's rows in PostgreSQL's order" \
    "$(ordered "SET gpusort.enabled = off;" "$order")" "$(ordered "$spill" "$order")"
done
limited="$spill SET gpusort.gpu_memory_limit = '20MB';"
analyze_plan "$limited" "SELECT * FROM rows_t ORDER BY k, id"
plan_has "rows beyond the room the service gave go to temporary files" \
  "*Sort Method: external merge*Rows in GPU Memory: *Disk: *"
check "and merge with those in the GPU's memory" \
  "$(ordered "SET gpusort.enabled = off;" "k, id")" "$(ordered "$limited" "k, id")"
# a row wider than half the slot (9.6 MB, detoasted by the projection)
# stops the streaming: the rows before it in the GPU's memory, the rest in
# files, merged
psql_q -c "CREATE TABLE wide_t AS SELECT g AS id, (g * 7919) % 100003 AS k, CASE WHEN g = 40000 THEN repeat(md5(g::text), 300000) ELSE md5(g::text) END AS pad FROM generate_series(1, 50000) g" >/dev/null
wide_sql="SELECT count(*) || ' ' || md5(string_agg(id || ':' || md5(p), ',')) FROM (SELECT id, k, pad || '' AS p FROM wide_t ORDER BY k, id) s"
analyze_plan "$spill" "SELECT id, k, pad || '' FROM wide_t ORDER BY k, id"
plan_has "a row wider than half the slot: the rows after it go to files" "*Rows in GPU Memory: 39999 (*Disk: *"
check "and merge with those in the GPU's memory (PostgreSQL's rows and order)" \
  "$(psql_q -c "SET gpusort.enabled = off; $wide_sql")" "$(psql_q -c "$spill $wide_sql")"
# prefix keys (text longer than its prefix, numeric): the rows come back
# in the order of their encoded keys, and the ties among them are put in
# order as they are read: small groups in memory, groups larger than a
# quarter of work_mem (long shared prefixes, numerics equal in their
# abbreviated key) through PostgreSQL's own sort; also merged with files,
# and with a parallel sort's shares in one rows job
psql_q -c "CREATE TABLE prefix_t AS SELECT g AS id,
  CASE WHEN g % 17 = 0 THEN NULL ELSE lpad(((g * 7919) % 20011)::text, 6, '0') || '-a-long-suffix-beyond-the-prefix-' || (g % 3) END COLLATE \"C\" AS ts,
  CASE WHEN g % 17 = 0 THEN NULL WHEN g % 29 = 0 THEN '' WHEN g % 3 = 0 THEN 'customer-with-a-long-shared-prefix-' || (g * 7919) % 5003
       WHEN g % 3 = 1 THEN 'zz-' || md5(g::text) ELSE 'same-group-prefix-that-is-long-' || ((g * 31) % 40000) END COLLATE \"C\" AS tb,
  CASE WHEN g % 19 = 0 THEN NULL ELSE ((g * 7919) % 3001) * 1000000000000000 + (g % 5) * 0.01 END AS ns,
  CASE WHEN g % 19 = 0 THEN NULL WHEN g % 23 = 0 THEN 'NaN'::numeric ELSE 1234567890123456 + ((g * 13) % 997) * 0.0000001 END AS nb,
  md5(g::text) AS pad FROM generate_series(1, 120000) g" >/dev/null
psql_q -c "ANALYZE prefix_t" >/dev/null
analyze_plan "$spill" "SELECT * FROM prefix_t ORDER BY ts, id"
plan_has "prefix keys: every row in the GPU's memory, small groups of ties resolved" \
  "*Sort Method: rows in GPU memory*Rows in GPU Memory: 120000 (*Ties Resolved on CPU: 112942 rows in 20011 groups*" "*Disk:*"
analyze_plan "$spill" "SELECT * FROM prefix_t ORDER BY nb, id"
plan_has "prefix keys: groups of ties beyond a quarter of work_mem (the numbers', the NaNs)" \
  "*Sort Method: rows in GPU memory*Rows in GPU Memory: 120000 (*Ties Resolved on CPU: 113685 rows in 2 groups*" "*Disk:*"
parallel_spill="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET enable_gathermerge = off; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.explain_details = off; SET work_mem = '256kB';"
for settings in spill limited parallel_spill; do
  for order in "ts, id" "tb DESC NULLS LAST, id" "ns, id" "nb DESC, ts, id" "tb, nb NULLS FIRST, id"; do
    check "prefix keys, $settings, ORDER BY $order: PostgreSQL's rows in PostgreSQL's order" \
      "$(ordered "SET gpusort.enabled = off;" "$order" prefix_t)" "$(ordered "${!settings}" "$order" prefix_t)"
  done
  keys_only="SELECT count(*) || ' ' || md5(string_agg(coalesce(tb, '-'), ',')) FROM (SELECT tb FROM prefix_t ORDER BY tb) s"
  check "prefix keys, $settings, ORDER BY tb alone: PostgreSQL's keys in PostgreSQL's order" \
    "$(psql_q -c "SET gpusort.enabled = off; $keys_only")" "$(psql_q -c "${!settings} $keys_only")"
done
cursor="BEGIN; DECLARE c SCROLL CURSOR FOR SELECT id FROM rows_t ORDER BY k, id; MOVE FORWARD 299990 IN c; FETCH BACKWARD 4 FROM c; MOVE ABSOLUTE 7 IN c; FETCH 2 FROM c; COMMIT;"
check "a scroll cursor reads them either way" \
  "$(psql_q -c "SET gpusort.enabled = off; $cursor" | tr '\n' ' ')" "$(psql_q -c "$spill $cursor" | tr '\n' ' ')"
# top-N per group (sort_sites.c): the rows read back from the GPU's
# memory are cut to each group's first rows, alone and merged with files
# (groups of about three rows: pruning them in memory does not pay)
topn="SELECT * FROM (SELECT id, k, m, row_number() OVER (PARTITION BY k % 100000 ORDER BY m NULLS FIRST, id) AS n FROM rows_t) s WHERE n <= 2"
topn_rows() { psql_q -c "$1 SELECT count(*) || ' ' || md5(string_agg(r::text, ',')) FROM ($topn ORDER BY k % 100000, m NULLS FIRST, id) r"; }
analyze_plan "$spill" "$topn"
plan_has "top-N per group: every row in the GPU's memory, each group's first 2 read back" \
  "*Rows Kept per Group: 2*Rows Dropped by Group: *Sort Method: rows in GPU memory*"
check "and PostgreSQL's rows in PostgreSQL's order" \
  "$(topn_rows "SET gpusort.enabled = off;")" "$(topn_rows "$spill")"
check "and merged with files beyond the GPU's room" \
  "$(topn_rows "SET gpusort.enabled = off;")" "$(topn_rows "$limited")"
check "no job left when the sorts ended" "0" \
  "$(psql_q -c "SELECT sum(value::int) FROM gpusort_info() WHERE name LIKE 'gpu%_jobs_running'")"
held=$(printf '%s\n' "$spill" "BEGIN;" "DECLARE c NO SCROLL CURSOR FOR SELECT * FROM rows_t ORDER BY k, id;" \
  "FETCH 1 FROM c;" "SELECT 'held ' || value FROM gpusort_info() WHERE name = 'gpu0_jobs_running';" \
  "MOVE ALL IN c;" "SELECT 'after ' || value FROM gpusort_info() WHERE name = 'gpu0_jobs_running';" \
  "COMMIT;" | psql_q)
case "$held" in *"held 1"*"after 0"*) ok "the GPU memory goes back once the last row is read, the cursor still open";;
  *) bad "the GPU memory goes back once the last row is read, the cursor still open" "$held";; esac
# (NO SCROLL: a scrollable cursor's sort merges into one temporary file;
# whole rows, 28 MB: more than the two pieces read ahead of the first row)
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
out=$(printf '%s\n' "$spill" "BEGIN;" "DECLARE c NO SCROLL CURSOR FOR SELECT * FROM rows_t ORDER BY k, id;" \
  "FETCH 1 FROM c;" "\\! kill -9 $gpud_pid" "FETCH 299999 FROM c;" "ROLLBACK;" "SELECT 'usable';" | psql_q)
case "$out" in *"ERROR:  gpusort: the GPU service lost the rows of a sort beyond work_mem"*"usable"*)
  ok "kill -9 of the process holding the rows: a clear error, the session usable";;
  *) bad "kill -9 of the process holding the rows: a clear error, the session usable" "$(tail -n 5 <<< "$out")";; esac
wait_ready 1
check "the next such sort runs in the service again" \
  "$(ordered "SET gpusort.enabled = off;" "k, id")" "$(ordered "$spill" "k, id")"

# an unbounded sort read forward once moves its rows to the GPU from 64 MB
# of them on, however large work_mem is; smaller sorts stay in memory
psql_q -c "CREATE TABLE early_t AS SELECT (random() * 1e6)::int AS k, g AS id, md5(g::text) AS pad FROM generate_series(1, 900000) g" >/dev/null
psql_q -c "ANALYZE early_t" >/dev/null
early="SET work_mem = '1GB'; SET max_parallel_workers_per_gather = 0; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.explain_details = off;"
analyze_plan "$early" "SELECT * FROM early_t ORDER BY k, id"
plan_has "work_mem 1GB, 900000 rows: in the GPU's memory from 64 MB on" \
  "*Sort Method: rows in GPU memory*Rows in GPU Memory: 900000 (*"
analyze_plan "$early" "SELECT * FROM early_t WHERE id <= 200000 ORDER BY k, id"
plan_has "work_mem 1GB, 200000 rows: in memory" "*Rows Sorted: 200000*" "*Rows in GPU Memory*"
check "and PostgreSQL's rows in PostgreSQL's order" \
  "$(ordered "SET gpusort.enabled = off;" "k, id" early_t)" "$(ordered "$early" "k, id" early_t)"

# ---- 4c. a parallel sort's shares in one rows job ----
echo "== a parallel GpuSort's processes put their rows in one rows job"
parallel="SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET min_parallel_table_scan_size = 0; SET enable_gathermerge = off; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.explain_details = off;"
for wm in 256kB 64MB; do
  analyze_plan "$parallel SET work_mem = '$wm';" "SELECT * FROM rows_t ORDER BY k, id"
  plan_has "work_mem $wm: every share's rows in one rows job, sorted there" \
    "*Sort Method: the parallel processes' rows in GPU memory*Rows in GPU Memory: 300000 (*Workers Launched: [12]*Sort Method: rows to GPU memory, sorted above*"
  plan_has "work_mem $wm: no temporary file" "*" "*Disk:*"
  for order in "k, id" "m DESC NULLS LAST, id" "m NULLS FIRST, k DESC, id"; do
    check "work_mem $wm, parallel, ORDER BY $order: PostgreSQL's rows in PostgreSQL's order" \
      "$(ordered "SET gpusort.enabled = off;" "$order")" "$(ordered "$parallel SET work_mem = '$wm';" "$order")"
  done
done
limited="$parallel SET work_mem = '256kB'; SET gpusort.gpu_memory_limit = '20MB';"
analyze_plan "$limited" "SELECT * FROM rows_t ORDER BY k, id"
plan_has "parallel: rows beyond the job's room go to the shares' files" \
  "*Sort Method: merge of the parallel processes' sorted runs*Rows in GPU Memory: *Disk: *"
check "and the leader merges them with the job's" \
  "$(ordered "SET gpusort.enabled = off;" "k, id")" "$(ordered "$limited" "k, id")"
analyze_plan "$parallel SET work_mem = '256kB'; SET gpusort.spill_to_gpu = off;" "SELECT * FROM rows_t ORDER BY k, id"
plan_has "spill_to_gpu = off: the shares write files" \
  "*Sort Method: merge of the parallel processes' sorted runs*" "*Rows in GPU Memory*"
psql_q -c "CREATE TABLE few AS SELECT i AS v FROM generate_series(0, 2) i" >/dev/null
rescan="SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off; SELECT count(*) || ' ' || md5(string_agg(f.v || ':' || s.id, ',')) FROM few f, (SELECT id, k FROM rows_t ORDER BY k, id OFFSET 0) s WHERE s.k % 3 = f.v"
plan=$(psql_q -c "$parallel SET work_mem = '256kB'; $rescan" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${rescan##*; }")
plan_has "a parallel sort rescanned per outer row holds its rows in a rows job" \
  "*Nested Loop*Sort Method: the parallel processes' rows in GPU memory*loops=3*"
check "and gives PostgreSQL's rows in each scan" \
  "$(psql_q -c "SET gpusort.enabled = off; $rescan")" "$(psql_q -c "$parallel SET work_mem = '256kB'; $rescan")"
# a staging area of four slots, all taken by the job and the shares: a
# share whose room ran out gives its slot back at once, so its runs' sorts
# (which wait without bound under gpusort.device = gpu) get one
start_server gpusort 2048 1 0 "gpusort.service_staging_size = 16"
tight="$limited SET gpusort.device = gpu; SET statement_timeout = '60s';"
check "16 MB of staging, room for a few rows: the shares' runs still sort on the GPU (gpu)" \
  "$(ordered "SET gpusort.enabled = off;" "k, id")" "$(ordered "$tight" "k, id")"
check "no job left when the parallel sorts ended" "0" \
  "$(psql_q -c "SELECT sum(value::int) FROM gpusort_info() WHERE name LIKE 'gpu%_jobs_running'")"

# ---- 4d. a slow reader gives its GPU memory back ----
echo "== a rows job whose client reads slowly gives its GPU memory to a waiting sort"
# 90 MB of budget: a cursor's rows job holds part of it (with its 16 MB of
# allowance), and a sort of 6.5M int4 keys needs about 81 MB, more than is
# left, so under gpusort.device = gpu it waits; the cursor, fetched again
# only after that sort ended, gives its memory back to it meanwhile
start_server gpusort 100 1 0
# A slow reader sleeps until the test tells it to go on (a fixed pause
# could end before the waiting sort asked for memory on a loaded machine),
# and it has fetched its first row (its rows job is open) once it sleeps.
psql_q -c "CREATE TABLE gs_told (what text)" -c "CREATE FUNCTION gs_sleep_until_told(what text) RETURNS void LANGUAGE plpgsql AS \$\$
  BEGIN
    FOR i IN 1..600 LOOP
      EXIT WHEN EXISTS (SELECT 1 FROM gs_told t WHERE t.what = gs_sleep_until_told.what);
      PERFORM pg_sleep(0.1);
    END LOOP;
  END \$\$" > /dev/null
tell_reader() { psql_q -c "INSERT INTO gs_told VALUES ('$1')" > /dev/null; }
wait_for_sleeping_reader() {
  for _ in $(seq 1 150); do
    [ "$(psql_q -c "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")" = 1 ] && return
    sleep 0.1
  done
  bad "the slow reader reached its sleep within 15 s" "$(cat "$workdir"/slow*.out 2>/dev/null | tail -n 3)"
}
# the cursor's session writes its temporary files in a tablespace of its
# own (temp_tablespaces): so does the service for its rows job
mkdir -p "$workdir/ts" && { [ -z "$run_as" ] || chown "$dbuser" "$workdir/ts"; }
psql_q -c "CREATE TABLESPACE gs_tmp LOCATION '$workdir/ts'" >/dev/null
big_sort="SET gpusort.device = gpu; SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT array_agg(((g::int8 * 7919) % 6500011)::int4) FROM generate_series(1, 6500000) g))) AS u(v)) s"
check "the large sort alone fits the budget" "6500000|t" "$(psql_q -c "$big_sort" | tail -n 1)"
psql_q -c "SELECT gpusort_stats_reset()" > /dev/null
printf '%s\n' "$spill" "SET temp_tablespaces = gs_tmp;" "BEGIN;" \
  "DECLARE c NO SCROLL CURSOR FOR SELECT * FROM rows_t ORDER BY k, id;" \
  "FETCH 1 FROM c;" "SELECT 'held ' || value FROM gpusort_info() WHERE name = 'gpu0_jobs_running';" \
  "SELECT gs_sleep_until_told('cursor');" "FETCH ALL FROM c;" "COMMIT;" | psql_q > "$workdir/slow.out" &
slow_pid=$!
wait_for_sleeping_reader
big_start=$(date +%s%N)
big_out=$(psql_q -c "$big_sort" | tail -n 1)
big_ms=$(( ($(date +%s%N) - big_start) / 1000000 ))
if kill -0 "$slow_pid" 2>/dev/null; then reader_waiting=yes; else reader_waiting=no; fi
check "the waiting sort ran while the slow reader still held its cursor (${big_ms} ms)" \
  "6500000|t yes" "$big_out $reader_waiting"
# (an unnamed file: only the service's open descriptors show where it is)
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
check "the rows went to a file in the cursor's temporary tablespace" "1" \
  "$(ls -l "/proc/$gpud_pid/fd" 2>/dev/null | grep -c "$workdir/ts/.*/pgsql_tmp/")"
tell_reader cursor
wait "$slow_pid"
case "$(head -n 3 "$workdir/slow.out")" in *"held 1"*) ok "the cursor's rows were in a rows job";;
  *) bad "the cursor's rows were in a rows job" "$(head -n 3 "$workdir/slow.out")";; esac
check "the slow reader still gets PostgreSQL's rows in PostgreSQL's order, from the file" \
  "$(psql_q -c "SET gpusort.enabled = off; SELECT * FROM rows_t ORDER BY k, id" | md5sum)" \
  "$(grep -v -e '^held ' -e '^$' "$workdir/slow.out" | md5sum)"
case "$(cat "$workdir/server.log")" in *"gave its "*" MB of GPU memory to a waiting job"*)
  ok "the service logged the give-back";;
  *) bad "the service logged the give-back" "$(grep -i gpud "$workdir/server.log" | tail -n 3)";; esac
check "gpusort_stats counts it" "1" \
  "$(psql_q -c "SELECT given_back_jobs FROM gpusort_stats WHERE gpu = 'total'")"
# Runs the big sort, after the settings in $2, while a reader (the
# statements after $2, writing $workdir/slow_$1.out) sleeps until told $1,
# then lets the reader end.
big_sort_beside_reader() {
  local name=$1 settings=$2 reader_pid
  shift 2
  printf '%s\n' "$@" | psql_q > "$workdir/slow_$name.out" &
  reader_pid=$!
  wait_for_sleeping_reader
  psql_q -c "$settings $big_sort" > /dev/null
  tell_reader "$name"
  wait "$reader_pid"
}
# EXPLAIN ANALYZE of a sort whose reader sleeps at its first row
big_sort_beside_reader explain "" "$spill" \
  "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT n, CASE WHEN n = 1 THEN gs_sleep_until_told('explain') END FROM (SELECT row_number() OVER () AS n FROM (SELECT * FROM rows_t ORDER BY k, id) o) s;"
case "$(cat "$workdir/slow_explain.out")" in *"Rows in GPU Memory: "*" kB), given back to a temporary file"*)
  ok "its EXPLAIN ANALYZE says the rows were given back";;
  *) bad "its EXPLAIN ANALYZE says the rows were given back" "$(cat "$workdir/slow_explain.out")";; esac
# an extension not yet updated keeps its own gpusort_stats (the library
# fills the columns its version declares)
psql_q -c "CREATE DATABASE gs_old" > /dev/null
stats_columns="SELECT count(*) FROM information_schema.columns WHERE table_name = 'gpusort_stats'"
old_stats=$(psql_q -d gs_old -c "CREATE EXTENSION gpusort VERSION '1.1'" -c "$stats_columns" \
  -c "SELECT count(*) FROM gpusort_stats WHERE gpu = 'total'" \
  -c "CREATE ROLE gs_monitor" -c "GRANT SELECT ON gpusort_stats TO gs_monitor" | paste -sd ' ')
new_stats=$(psql_q -d gs_old -c "ALTER EXTENSION gpusort UPDATE" -c "$stats_columns" \
  -c "SELECT given_back_jobs >= 1 FROM gpusort_stats WHERE gpu = 'total'" \
  -c "SELECT has_table_privilege('gs_monitor', 'gpusort_stats', 'SELECT')" | paste -sd ' ')
check "gpusort_stats of SQL version 1.1 (17 columns), then 1.3 after ALTER EXTENSION UPDATE, grants kept" \
  "17 1 / 18 t t" "$old_stats / $new_stats"
psql_q -d gs_old -c "DROP EXTENSION gpusort" -c "DROP ROLE gs_monitor" > /dev/null
check "no job left when the reader ended" "0" \
  "$(psql_q -c "SELECT sum(value::int) FROM gpusort_info() WHERE name LIKE 'gpu%_jobs_running'")"
limited_cursors_def=("BEGIN;"
  "DECLARE c1 NO SCROLL CURSOR FOR SELECT * FROM rows_t WHERE id <= 15000 ORDER BY k, id;"
  "DECLARE c2 NO SCROLL CURSOR FOR SELECT * FROM rows_t WHERE id > 15000 AND id <= 30000 ORDER BY k, id;"
  "DECLARE c3 NO SCROLL CURSOR FOR SELECT * FROM rows_t WHERE id > 30000 AND id <= 45000 ORDER BY k, id;"
  "FETCH 1 FROM c1;" "FETCH 1 FROM c2;" "FETCH 1 FROM c3;")
limited_rest_def=("FETCH ALL FROM c1;" "FETCH ALL FROM c2;" "FETCH ALL FROM c3;" "COMMIT;")
# Idle rows jobs give their memory back together: three cursors' jobs, no
# one of which frees enough, give theirs to a sort that needs all of it
log_before=$(wc -l < "$workdir/server.log")
printf '%s\n' "$spill" "${limited_cursors_def[@]}" "SELECT gs_sleep_until_told('together');" \
  "${limited_rest_def[@]}" | psql_q > "$workdir/slow_together.out" &
reader_pid=$!
wait_for_sleeping_reader
together=$(psql_q -c "SET gpusort.queue_timeout = '20s'; $big_sort" | tail -n 1)
tell_reader together
wait "$reader_pid"
check "three idle rows jobs gave their memory back together, and the sort ran" "6500000|t 3" \
  "$together $(tail -n +"$((log_before + 1))" "$workdir/server.log" | grep -c "gave its .* MB of GPU memory to a waiting job")"
check "and the cursors read PostgreSQL's rows in PostgreSQL's order" \
  "$(printf '%s\n' "$spill" "SET gpusort.enabled = off;" "${limited_cursors_def[@]}" "${limited_rest_def[@]}" | psql_q | grep -v -e '^$' -e '^SET$' | md5sum)" \
  "$(grep -v -e '^$' -e '^SET$' "$workdir/slow_together.out" | md5sum)"

# Give-back files are the session's own temporary files: three cursors of
# 15000 rows (1.4 MB in the service) each under a 4 MB temp_file_limit
# grow their files to 2.8 MB together; the third cursor's stays empty, so
# its rows job keeps its GPU memory (and the waiting sort, which needs all
# three, gives up). log_temp_files shows the two files given rows, and
# pg_stat_database.temp_bytes counts them.
temp_before=$(psql_q -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
log_before=$(wc -l < "$workdir/server.log")
limited_cursors=("${limited_cursors_def[@]}")
limited_rest=("${limited_rest_def[@]}")
big_sort_beside_reader limited "SET statement_timeout = '5s';" "$spill" \
  "SET temp_file_limit = '4MB';" "SET log_temp_files = 0;" "${limited_cursors[@]}" \
  "SELECT gs_sleep_until_told('limited');" "${limited_rest[@]}"
new_log=$(tail -n +"$((log_before + 1))" "$workdir/server.log")
case "$new_log" in *"keeps its GPU memory: its client's file has no room for its "*" kB of rows (temp_file_limit)"*)
  ok "beyond the session's temp_file_limit a rows job keeps its GPU memory";;
  *) bad "beyond the session's temp_file_limit a rows job keeps its GPU memory" "$(echo "$new_log" | grep -i gpud | tail -n 3)";; esac
check "two rows jobs gave their memory back, within the limit" "2" \
  "$(echo "$new_log" | grep -c "gave its .* MB of GPU memory to a waiting job")"
temp_after=$(psql_q -c "SELECT pg_stat_force_next_flush()" -c "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()" | tail -n 1)
check "pg_stat_database.temp_bytes counts the files' bytes" "t" \
  "$(psql_q -c "SELECT $temp_after - $temp_before >= $(echo "$new_log" | grep -o 'temporary file: path "[^"]*", size [0-9]*$' | awk '{s += $NF} END {print s + 0}')")"
# the same cursors with no sort waiting: their rows jobs give nothing back,
# so their files close empty; above, two of them held rows
zero_files() { grep -o 'temporary file: path "[^"]*", size [0-9]*$' | grep -c ', size 0$'; }
with_give_back=$(echo "$new_log" | zero_files)
log_before=$(wc -l < "$workdir/server.log")
printf '%s\n' "$spill" "SET temp_file_limit = '4MB';" "SET log_temp_files = 0;" "${limited_cursors[@]}" \
  "${limited_rest[@]}" | psql_q > /dev/null
without=$(tail -n +"$((log_before + 1))" "$workdir/server.log" | zero_files)
check "log_temp_files: two of the three give-back files held rows (empty files: $without without a waiting sort)" \
  "2" "$((without - with_give_back))"
check "and the reader gets PostgreSQL's rows in PostgreSQL's order" \
  "$(printf '%s\n' "$spill" "SET gpusort.enabled = off;" "${limited_cursors[@]}" "${limited_rest[@]}" | psql_q | grep -v -e '^$' -e '^SET$' | md5sum)" \
  "$(grep -v -e '^$' -e '^SET$' "$workdir/slow_limited.out" | md5sum)"

# ---- 4e. sorts holding rows in the service do not wait for each other ----
echo "== concurrent sorts beyond work_mem, each holding a rows job, do not deadlock"
# each rows job is sized to a quarter of the 90 MB budget, so four hold it
# all while their runs beyond it wait for GPU memory: each waited for the
# others forever under gpu (and gpusort.queue_timeout per run under auto)
many="SET statement_timeout = '20s'; SET work_mem = '256kB'; SET max_parallel_workers_per_gather = 0; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.gpu_min_elements = 0;"
many_sql="SELECT count(*), md5(string_agg(id::text, ',')) FROM (SELECT * FROM rows_t ORDER BY k, id) s"
many_start=$(date +%s%N)
for i in 1 2 3 4 5 6 7 8; do psql_q -c "$many $many_sql" > "$workdir/many_$i.out" & done
wait
many_ms=$(( ($(date +%s%N) - many_start) / 1000000 ))
expected_many=$(psql_q -c "SET gpusort.enabled = off; $many_sql")
check "under auto all eight finish with PostgreSQL's rows (${many_ms} ms)" "8" \
  "$(cat "$workdir"/many_*.out | grep -c -x -F "$expected_many")"
for i in 1 2 3 4 5 6 7 8; do psql_q -c "$many SET gpusort.device = gpu; $many_sql" > "$workdir/many_$i.out" & done
wait
check "under gpu each finishes or says why, none waits out statement_timeout" "8 0" \
  "$(cat "$workdir"/many_*.out | grep -c -x -e "$expected_many" -e "ERROR:  the GPU stayed busy: .*(gpusort.queue_timeout).*") $(cat "$workdir"/many_*.out | grep -c "statement timeout")"
no_leaks "after the concurrent sorts"


# ---- 4f. fairness ----
echo "== small sorts pass a large one that waits for GPU memory"
# 90 MB of budget, jobs of 1.5 s: A and B need about 51 MB each (3.5M int4
# keys), so B waits for A; C needs 0.2 MB beyond the allowance, and passes B
start_server gpusort 100 1 1500
psql_q -c "DROP TABLE IF EXISTS arrs" -c "CREATE TABLE arrs AS SELECT 'big' AS name, array_agg(((g::int8 * 7919) % 3500017)::int4) AS arr FROM generate_series(1, 3500000) g UNION ALL SELECT 'mid', array_agg(((g::int8 * 7919) % 900001)::int4) FROM generate_series(1, 900000) g UNION ALL SELECT 'small', array_agg(((g::int8 * 7919) % 20011)::int4) FROM generate_series(1, 20000) g" >/dev/null
arr_sort() { # arr_sort NAME [SETTINGS]: gpu_sort of a stored array under gpu, checked
  echo "SET gpusort.device = gpu; SET gpusort.queue_timeout = '20s'; ${2:-} SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT arr FROM arrs WHERE name = '$1'))) AS u(v)) s;"
}
timed() { # timed NAME SQL: runs SQL, output in NAME.out, end time in NAME.end
  psql_q -c "$2" > "$workdir/$1.out"; date +%s%N > "$workdir/$1.end"
}
timed fa "$(arr_sort big)" &
sleep 0.4
timed fb "$(arr_sort big)" &
sleep 0.4
timed fc "$(arr_sort small)" &
wait
check "the three sorts ran" "3500000|t 3500000|t 20000|t" \
  "$(tail -qn 1 "$workdir/fa.out" "$workdir/fb.out" "$workdir/fc.out" | paste -sd ' ')"
ahead_ms=$(( ($(cat "$workdir/fb.end") - $(cat "$workdir/fc.end")) / 1000000 ))
[ "$ahead_ms" -ge 700 ] && ok "the small sort did not wait behind the large one (ended ${ahead_ms} ms before it)" \
  || bad "the small sort did not wait behind the large one" "ended ${ahead_ms} ms before it"
no_leaks "after the queue"

echo "== a session's cap on GPU memory"
psql_q -c "DROP ROLE IF EXISTS gs_user" -c "CREATE ROLE gs_user LOGIN" >/dev/null
case "$(psql_q -U gs_user -c "SET gpusort.session_gpu_memory_limit = '20MB'")" in
  *"permission denied to set parameter"*) ok "only a superuser sets it";;
  *) bad "only a superuser sets it";; esac
out=$(psql_q -c "$(arr_sort big "SET gpusort.session_gpu_memory_limit = '40MB';")")
case "$out" in *"ERROR:  out of GPU memory: the sort needs about 49 MB of GPU memory, more than a session may hold (gpusort.session_gpu_memory_limit = 40 MB)"*)
  ok "a sort over the cap fails under gpu, naming the setting";;
  *) bad "a sort over the cap fails under gpu, naming the setting" "$out";; esac
out=$(psql_q -c "SET gpusort.session_gpu_memory_limit = '40MB'; SELECT count(*) FROM unnest(gpu_sort((SELECT arr FROM arrs WHERE name = 'big')))")
case "$out" in *"WARNING:  GPU sort failed; sorted on the CPU instead"*"session_gpu_memory_limit"*3500000) ok "and runs on the CPU under auto";;
  *) bad "and runs on the CPU under auto" "$out";; esac
# within the cap, a sort waits for the session's own idle rows job, which
# gives its memory back (its cursor's rows go to a file and still come in order)
cap_reader=("$spill" "SET gpusort.session_gpu_memory_limit = '40MB';" "BEGIN;"
  "DECLARE c NO SCROLL CURSOR FOR SELECT * FROM rows_t ORDER BY k, id;" "FETCH 1 FROM c;")
log_before=$(wc -l < "$workdir/server.log")
out=$(printf '%s\n' "${cap_reader[@]}" "$(arr_sort mid)" "FETCH ALL FROM c;" "COMMIT;" | psql_q)
case "$out" in *"900000|t"*) ok "a sort waited for its session's idle rows job and ran";;
  *) bad "a sort waited for its session's idle rows job and ran" "$out";; esac
tail -n +"$((log_before + 1))" "$workdir/server.log" | grep -q "gave its .* MB of GPU memory to a waiting job" \
  && ok "the idle rows job gave its memory back" || bad "the idle rows job gave its memory back"
check "the cursor's rows are PostgreSQL's, in PostgreSQL's order" \
  "$(psql_q -c "SET gpusort.enabled = off; SELECT * FROM rows_t ORDER BY k, id" | md5sum)" \
  "$(echo "$out" | grep -v -e '^$' -e '^SET$' -e '^BEGIN$' -e '^DECLARE CURSOR$' -e '^COMMIT$' -e '^900000|t$' | md5sum)"
no_leaks "after the session's cap"

echo "== a rows job whose input pauses gives its GPU memory back"
start_server gpusort 100 1 0
# (the sleep in the scan's filter: below the sort, in its input)
paused_query() { echo "SELECT count(*), md5(string_agg(id::text || k::text, ',')) FROM (SELECT k, id FROM rows_t WHERE id <= 40000 AND (id <> 20000 OR $1) ORDER BY k, id) o"; }
paused_sql=$(paused_query "gs_sleep_until_told('paused')::text = ''")
log_before=$(wc -l < "$workdir/server.log")
big_sort_beside_reader paused "SET gpusort.queue_timeout = '10s';" "$spill" "$paused_sql"
new_log=$(tail -n +"$((log_before + 1))" "$workdir/server.log")
case "$new_log" in *"gave its "*" MB of GPU memory to a waiting job (its "*" MB of unsorted rows went to its client's file)"*)
  ok "the paused job gave its memory back before its sort";;
  *) bad "the paused job gave its memory back before its sort" "$(echo "$new_log" | grep -i gpud | tail -n 3)";; esac
check "its rows still come out as PostgreSQL's sort gives them" \
  "$(psql_q -c "SET gpusort.enabled = off; $(paused_query true)")" \
  "$(grep -v -e '^$' -e '^SET$' "$workdir/slow_paused.out")"
no_leaks "after the paused input"

# ---- 4g. failures stay with their job ----
echo "== a job the GPU fails fails alone"
fail_sort="SELECT count(*), bool_and(ok) FROM (SELECT v >= lag(v) OVER () IS NOT FALSE AS ok FROM unnest(gpu_sort((SELECT array_agg(((g::int8 * 7919) % 123457)::int4) FROM generate_series(1, 123457) g))) AS u(v)) s"
export GPUSORT_SERVICE_EMULATE_FAIL_N=123457
start_server gpusort 100 1 0
unset GPUSORT_SERVICE_EMULATE_FAIL_N
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
printf '%s\n' "$spill" "BEGIN;" "DECLARE c NO SCROLL CURSOR FOR SELECT * FROM rows_t ORDER BY k, id;" \
  "FETCH 1 FROM c;" "SELECT gs_sleep_until_told('failing');" "FETCH ALL FROM c;" "COMMIT;" \
  | psql_q > "$workdir/slow_failing.out" &
reader_pid=$!
wait_for_sleeping_reader
out=$(psql_q -c "$fail_sort")
case "$out" in *"WARNING:  GPU sort failed; sorted on the CPU instead"*"an emulated GPU failure"*"123457|t") ok "under auto the failed sort ran on the CPU";;
  *) bad "under auto the failed sort ran on the CPU" "$out";; esac
out=$(psql_q -c "SET gpusort.device = gpu; $fail_sort")
case "$out" in *"ERROR:  GPU sort failed: an emulated GPU failure"*) ok "under gpu it fails with the GPU's error";;
  *) bad "under gpu it fails with the GPU's error" "$out";; esac
tell_reader failing
wait "$reader_pid"
check "another session's rows in the same GPU are intact" \
  "$(psql_q -c "SET gpusort.enabled = off; SELECT * FROM rows_t ORDER BY k, id" | md5sum)" \
  "$(grep -v -e '^$' -e '^SET$' -e '^BEGIN$' -e '^DECLARE CURSOR$' -e '^COMMIT$' "$workdir/slow_failing.out" | md5sum)"
check "the GPU's process went on (same pid, no restart, two jobs failed)" "$gpud_pid 0 2" \
  "$(psql_q -c "SELECT string_agg(value, ' ' ORDER BY name) FROM gpusort_info() WHERE name IN ('gpu0_pid', 'gpu0_restarts', 'gpu0_jobs_failed')" | awk '{print $2, $3, $1}')"
export GPUSORT_SERVICE_EMULATE_FAIL_N=123457 GPUSORT_SERVICE_EMULATE_FAIL_STICKY=1
start_server gpusort 100 1 0
unset GPUSORT_SERVICE_EMULATE_FAIL_N GPUSORT_SERVICE_EMULATE_FAIL_STICKY
check "a failure that breaks the GPU's context still runs on the CPU under auto" "123457|t" \
  "$(psql_q -c "$fail_sort" | tail -n 1)"
wait_ready 1
check "and restarts the GPU's process, as a device fault" "1" \
  "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_restarts'")"
grep -q "a GPU failure left the GPU unusable: an emulated GPU failure" "$workdir/server.log" \
  && ok "the log says the context was broken" || bad "the log says the context was broken"

echo "== a result that fails its check is never used"
# the emulated GPU returns wrong results: a sort's first key changed, a
# rows job's first record read back with another key
export GPUSORT_SERVICE_EMULATE_WRONG=1
start_server gpusort 100 1 0
unset GPUSORT_SERVICE_EMULATE_WRONG
out=$(psql_q -c "\\set VERBOSITY verbose" -c "$fail_sort")
case "$out" in *"WARNING:  01000: GPU sort failed; sorted on the CPU instead"*"returned a result that is not the sort asked for"*"123457|t") ok "under auto a wrong array sort is not used: the CPU sorts it";;
  *) bad "under auto a wrong array sort is not used: the CPU sorts it" "$out";; esac
out=$(psql_q -c "SET gpusort.device = gpu; $fail_sort")
case "$out" in *"ERROR:  GPU sort failed: the GPU service returned a result that is not the sort asked for"*) ok "under gpu it is an error";;
  *) bad "under gpu it is an error" "$out";; esac
check "an ORDER BY within work_mem still returns PostgreSQL's rows" \
  "$(psql_q -c "SET gpusort.enabled = off; SELECT * FROM rows_t WHERE id <= 50000 ORDER BY k, id" | md5sum)" \
  "$(psql_q -c "SET work_mem = '64MB'; SET gpusort.min_rows = 0; SET enable_sort = off; SET gpusort.spill_to_gpu = off; SELECT * FROM rows_t WHERE id <= 50000 ORDER BY k, id" 2>/dev/null | grep -v -e '^WARNING' -e '^DETAIL' -e '^HINT' | md5sum)"
out=$(psql_q -c "$spill SELECT count(*) FROM (SELECT * FROM rows_t ORDER BY k, id) s")
case "$out" in *"ERROR:  gpusort: the GPU service lost the rows of a sort beyond work_mem"*"DETAIL:  the GPU service returned "*) ok "a sort beyond work_mem whose rows come back wrong fails: $(echo "$out" | grep DETAIL)";;
  *) bad "a sort beyond work_mem whose rows come back wrong fails" "$out";; esac
grep -q "returned a result that is not the sort asked for; it was not used" "$workdir/server.log" &&
  grep -q "returned rows that fail their check" "$workdir/server.log" \
  && ok "the log says so of both" || bad "the log says so of both"
# with room for every sorted row at once, GpuSort reads them in place from
# the slot (no merge), and the proof that they are those sent completes
# with the last row
export GPUSORT_SERVICE_EMULATE_WRONG=1
start_server gpusort 2048 1 0
unset GPUSORT_SERVICE_EMULATE_WRONG
out=$(psql_q -c "$spill SELECT count(*) FROM (SELECT * FROM rows_t ORDER BY k, id) s")
# (the changed key may also put the first row after the second, with the
# table's random keys: then the order check fails first)
lost="ERROR:  gpusort: the GPU service lost the rows of a sort beyond work_mem"
case "$out" in *"$lost"*"DETAIL:  the GPU service returned other rows than it was given"* | \
  *"$lost"*"DETAIL:  the GPU service returned rows out of order"*) ok "rows read in place that come back wrong fail, by the last row: $(echo "$out" | grep DETAIL)";;
  *) bad "rows read in place that come back wrong fail, by the last row" "$out";; esac

echo "== a gpusort-gpud that stops answering is replaced"
start_server gpusort 100 1 3000
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
stopped_start=$(date +%s%N)
psql_q -c "$auto_sql" > "$workdir/a.out" &
sleep 0.5
kill -STOP "$gpud_pid"
wait
stopped_ms=$(( ($(date +%s%N) - stopped_start) / 1000000 ))
check "a sort on a stopped process finished on the CPU under auto" "200000|t" "$(tail -n 1 "$workdir/a.out")"
[ "$stopped_ms" -lt 12000 ] && ok "within the worker's liveness bound (${stopped_ms} ms)" \
  || bad "within the worker's liveness bound" "${stopped_ms} ms"
grep -q "the process of GPU 0 (pid $gpud_pid) stopped answering for [0-9]* ms; killing it" "$workdir/server.log" \
  && ok "the worker killed the process that stopped answering" || bad "the worker killed the process that stopped answering"
wait_ready 1 && ok "a new one is ready" || bad "a new one is ready"
check "it counts as a hang" "1" "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_hangs'")"
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
psql_q -c "$sort_sql" > "$workdir/b.out" &
sleep 0.5
kill -STOP "$gpud_pid"; sleep 1; kill -CONT "$gpud_pid"
wait
check "a short stop only delays a sort" "200000|t $gpud_pid" \
  "$(tail -n 1 "$workdir/b.out") $(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")"
no_leaks "after the stops"

# ---- 4h. another OS user ----
echo "== another OS user cannot take the service's place"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  start_server gpusort 100 1 0
  impostor_dir=$(mktemp -d /tmp/gpusort-impostor.XXXXXX)
  chmod 777 "$impostor_dir"
  cp test/service/impostor.py "$impostor_dir/"
  runuser -u nobody -- /usr/bin/python3 "$impostor_dir/impostor.py" "$impostor_dir" 120 &
  impostor_pid=$!
  sleep 1
  before=$(psql_q -c "SELECT jobs FROM gpusort_stats WHERE gpu = 'total'")
  check "sorts go on beside it" "200000|t" "$(psql_q -c "$sort_sql" | tail -n 1)"
  # the worker stopped: the process killed, its name and pid stay published
  # while the impostor binds the name; backends that connect there leave
  gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
  worker_pid=$(ps -o ppid= -p "$gpud_pid" | tr -d ' ')
  kill -STOP "$worker_pid"
  kill -9 "$gpud_pid"
  for _ in $(seq 1 100); do [ -f "$impostor_dir/bound" ] && break; sleep 0.05; done
  [ -f "$impostor_dir/bound" ] && ok "the impostor bound the dead process's name" || bad "the impostor bound the dead process's name"
  check "a sort meanwhile runs on the CPU, right" "200000|t" "$(psql_q -c "$auto_sql" | tail -n 1)"
  kill -CONT "$worker_pid"
  wait_ready 1
  check "then on the GPU again" "200000|t" "$(psql_q -c "$sort_sql" | tail -n 1)"
  sleep 0.5
  kill "$impostor_pid"; wait "$impostor_pid"
  report=$(cat "$impostor_dir/report" 2>/dev/null)
  case "$report" in *"connected="[1-9]*"service_bytes=0 "*"accepted="[1-9]*"backend_bytes=0"*)
    ok "it knocked and was let in, got no byte from the service or a backend ($report)";;
    *) bad "it knocked and was let in, got no byte from the service or a backend" "$report";; esac
  grep -q "the socket of GPU 0's service is held by pid [0-9]* of uid $(id -u nobody), not by the service's process $gpud_pid: not using it" "$workdir/server.log" \
    && ok "the backend logged the impostor" || bad "the backend logged the impostor"
  grep -q "refused a connection from pid [0-9]*, uid $(id -u nobody): not the server's user" "$workdir/server.log" \
    && ok "the service logged the impostor's knock" || bad "the service logged the impostor's knock"
  rm -rf "$impostor_dir"
  no_leaks "after the impostor"
else
  echo "(skipped: needs root to run a process as nobody)"
fi

echo "== a gpusort-gpud that does not answer: statement_timeout still ends the sort"
start_server gpusort 100 1 0
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
kill -STOP "$gpud_pid"
stopped_start=$(date +%s%N)
stopped_out=$(psql_q -c "SET statement_timeout = '2s'; SET gpusort.device = gpu; SELECT count(*) FROM unnest(gpu_sort(array(SELECT g FROM generate_series(1, 100000) g)))")
stopped_ms=$(( ($(date +%s%N) - stopped_start) / 1000000 ))
# a sort beyond work_mem asks for a rows job, and its wait for the
# service's answer ends at statement_timeout too
rows_start=$(date +%s%N)
rows_out=$(psql_q -c "SET statement_timeout = '2s'; $spill SELECT count(*) FROM (SELECT * FROM rows_t ORDER BY k, id) s")
rows_ms=$(( ($(date +%s%N) - rows_start) / 1000000 ))
kill -CONT "$gpud_pid"
case "$stopped_out" in *"canceling statement due to statement timeout"*)
  if [ "$stopped_ms" -lt 6000 ]; then ok "the sort ended at statement_timeout (${stopped_ms} ms)"
  else bad "the sort ended at statement_timeout" "${stopped_ms} ms"; fi;;
  *) bad "the sort ended at statement_timeout" "$stopped_out";; esac
case "$rows_out" in *"canceling statement due to statement timeout"*)
  if [ "$rows_ms" -lt 6000 ]; then ok "a sort asking for a rows job ended at statement_timeout (${rows_ms} ms)"
  else bad "a sort asking for a rows job ended at statement_timeout" "${rows_ms} ms"; fi;;
  *) bad "a sort asking for a rows job ended at statement_timeout" "$rows_out";; esac

# ---- 5. a crash of the CUDA process ----
echo "== kill -9 of gpusort-gpud during a sort"
start_server gpusort 2048 1 2000
gpud_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
postmaster_pid=$(head -n 1 "$workdir/data/postmaster.pid")
psql_q -c "$auto_sql" > "$workdir/a.out" &
sleep 0.7
kill -9 "$gpud_pid"
wait
check "under auto the sort finished on the CPU" "200000|t" "$(tail -n 1 "$workdir/a.out")"
case "$(cat "$workdir/a.out")" in *"ended during the sort"*) ok "with a warning that says why";;
  *) bad "with a warning that says why" "$(cat "$workdir/a.out")";; esac
wait_ready 1 && ok "the process came back" || bad "the process came back"
check "its restart is counted" "1" "$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_restarts'")"
new_pid=$(psql_q -c "SELECT value FROM gpusort_info() WHERE name = 'gpu0_pid'")
[ "$new_pid" != "$gpud_pid" ] && ok "under a new pid" || bad "under a new pid"
psql_q -c "$sort_sql" > "$workdir/b.out" &
sleep 0.7
kill -9 "$new_pid"
wait
case "$(cat "$workdir/b.out")" in *"ERROR:  GPU sort failed: the GPU service's process for GPU 0 ended during the sort"*)
  ok "under gpu the sort fails with a clear error";;
  *) bad "under gpu the sort fails with a clear error" "$(cat "$workdir/b.out")";; esac
wait_ready 1
check "sorts run in the service again" "200000|t" "$(psql_q -c "$sort_sql" | tail -n 1)"
check "PostgreSQL did not restart (same postmaster)" "$postmaster_pid" "$(head -n 1 "$workdir/data/postmaster.pid")"
if grep -qE "terminated by signal|reinitializing|terminating any other active" "$workdir/server.log"; then
  bad "no server process crashed" "$(grep -E "terminated by signal|reinitializing|terminating any other" "$workdir/server.log" | head -3)"
else
  ok "no server process crashed"
fi
grep -q "gpusort GPU service: the process of GPU 0 (pid $gpud_pid) was killed by signal 9; restarting it" "$workdir/server.log" \
  && ok "the log says what happened" || bad "the log says what happened"

# ---- 6. no service ----
echo "== LOAD without shared_preload_libraries"
start_server "" 2048 1 0
out=$(psql_q -c "LOAD 'gpusort'" -c "SELECT value FROM gpusort_info() WHERE name = 'reason'")
case "$out" in *"add gpusort to shared_preload_libraries"*) ok "gpusort_info() says why there is no GPU";;
  *) bad "gpusort_info() says why there is no GPU" "$out";; esac
check "sorts run on the CPU" "{1,2,3}" "$(psql_q -c "CREATE EXTENSION IF NOT EXISTS gpusort" -c "SELECT gpu_sort(ARRAY[3,1,2])" | tail -n 1)"
out=$(psql_q -c "SET gpusort.device = gpu; SELECT gpu_sort(ARRAY[3,1,2])")
case "$out" in *"no usable GPU: the GPU service is not running"*) ok "under gpu: an error naming the fix";;
  *) bad "under gpu: an error naming the fix" "$out";; esac

echo "$passed passed, $failed failed"
