#!/usr/bin/env bash
# GpuSort on a Citus cluster (issue #18), one command:
#   sudo test/citus/run.sh                 (test/run_tests.sh runs it)
#   sudo test/citus/run.sh --install-only  (step 1 alone: test/setup.sh)
# 1. builds Citus from ../shared/citus/ (next to the repository; or
#    GPUSORT_CITUS_ARCHIVE) and installs it into the server of PG_CONFIG
#    (default PostgreSQL 15): Citus 13.2.2 for 15, 14.0.1 for 18 (13.2 is
#    the last release for 15; 14.0 supports 16-18); unless that Citus is
#    installed already (the ~8-minute build runs once per major; the build
#    folders are kept in GPUSORT_CITUS_BUILD_DIR);
# 2. starts a coordinator and two workers on localhost (ports 9700-9702, or
#    GPUSORT_CITUS_PORT and the two after it) in a throwaway folder, each with
#    shared_preload_libraries = 'citus,gpusort', and stops them on exit;
# 3. makes distributed (hash on id), co-located and reference tables;
# 4. runs every query with GpuSort forced on every node, then with
#    gpusort.enabled = off on every node, and compares the answers;
# 5. checks with EXPLAIN (VERBOSE) where GpuSort ran (coordinator, workers).
# gpusort must be built and installed already (test/setup.sh). One line per
# check, then "N passed, M failed" as the last line; exit status 1 on failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
started=$(date +%s)

pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($pg_config --bindir)
pkglibdir=$($pg_config --pkglibdir)
sharedir=$($pg_config --sharedir)
major=$($pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
case $major in
  15) citus_version=13.2.2 citus_archive=citus-13.2.2-pg15.18.tar.xz ;;
  18) citus_version=14.0.1 citus_archive=citus-14.0.1.tar.xz ;;
  *) echo "no Citus release chosen for PostgreSQL $major"; echo "0 passed, 1 failed"; exit 1 ;;
esac
archive=${GPUSORT_CITUS_ARCHIVE:-$root/../shared/citus/$citus_archive}
builddir=${GPUSORT_CITUS_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpusort-citus}
base_port=${GPUSORT_CITUS_PORT:-9700}
ports=("$base_port" "$((base_port + 1))" "$((base_port + 2))")
coord=${ports[0]}

passed=0
failed=0
ok() { echo "ok     $1"; passed=$((passed + 1)); }
bad() { echo "FAILED $1"; failed=$((failed + 1)); }
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }
info() { echo "  info: $*"; }
finish() {
  echo "run time $(($(date +%s) - started)) s"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
die() { bad "$1"; finish; }

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

# ---- 1. Citus, built once -------------------------------------------------
citus_installed() {
  [ -f "$pkglibdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ] &&
    grep -qaF "Citus $citus_version on" "$pkglibdir/citus.so"
}

build_citus() {
  local src="$builddir/citus-$citus_version"
  if [ ! -f "$src/.built" ] && [ ! -f "$archive" ]; then
    die "Citus source archive not found: $archive (put Citus's archive there, the shared/citus/ folder beside the repository, or set GPUSORT_CITUS_ARCHIVE)"
  fi
  # (PostgreSQL 18's headers come with its server: test/setup_pg18.sh)
  local deps="build-essential $([ "$major" = 15 ] && echo postgresql-server-dev-15) libcurl4-openssl-dev
    liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev libxslt1-dev
    libpam0g-dev libreadline-dev uuid-dev libicu-dev" missing="" p
  for p in $deps; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "installing Citus's build dependencies:$missing"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get install -y -qq $missing >/dev/null 2>&1 ||
      { $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq $missing >/dev/null; } ||
      die "could not install Citus's build dependencies:$missing"
  fi
  mkdir -p "$builddir"
  echo "installing Citus $citus_version from $src"
  if [ ! -f "$src/.built" ]; then
    echo "building Citus $citus_version in $src (about 8 minutes on 2 cores)"
    rm -rf "$src"
    tar xJf "$archive" -C "$builddir" || die "could not unpack $archive"
    [ -d "$src" ] || die "$archive does not hold citus-$citus_version/"
    # (no LLVM bitcode: it serves only JIT inlining, which a test cluster
    # does without, and would double the build where clang is installed)
    (cd "$src" && ./configure PG_CONFIG="$pg_config" && make -j"$(nproc)" with_llvm=no) \
      >"$src.build.log" 2>&1 ||
      { tail -n 30 "$src.build.log"; die "Citus build failed (log: $src.build.log)"; }
    touch "$src/.built"
  fi
  (cd "$src" && $sudo_cmd make install PG_CONFIG="$pg_config" with_llvm=no) >"$src.install.log" 2>&1 ||
    { tail -n 30 "$src.install.log"; die "Citus install failed (log: $src.install.log)"; }
  citus_installed || die "Citus $citus_version is still not installed in $pkglibdir"
}

if citus_installed; then
  echo "Citus $citus_version is installed in $pkglibdir (build skipped)"
else
  build_citus
fi
# test/setup.sh installs Citus this way, so that the tests need no root
[ "${1:-}" = "--install-only" ] && exit 0
[ -f "$pkglibdir/gpusort.so" ] ||
  die "gpusort is not installed in $pkglibdir (build and install it first: sudo test/setup.sh)"

# ---- 2. a coordinator and two workers --------------------------------------
# shellcheck source=test/lib/server.sh
. "$root/test/lib/server.sh"
server_workdir citus
cleanup() {
  local p
  for p in "${ports[@]}"; do
    [ -d "$workdir/n$p" ] && server_stop "$workdir/n$p"
  done
  # GPUSORT_CITUS_KEEP=DIR keeps the plans, answers and server logs there
  if [ -n "${GPUSORT_CITUS_KEEP:-}" ]; then
    mkdir -p "$GPUSORT_CITUS_KEEP" && cp -r "$workdir"/{on,off,*.txt,*.log} "$GPUSORT_CITUS_KEEP"/ 2>/dev/null
  fi
  server_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PGHOST=localhost PGUSER="$dbuser" PGDATABASE=postgres PGCONNECT_TIMEOUT=10
for p in "${ports[@]}"; do
  if "$bindir/pg_isready" -q -h localhost -p "$p"; then
    die "port $p is taken: stop what listens there or set GPUSORT_CITUS_PORT"
  fi
  # the nodes reach each other over localhost; no calls home from a test
  # cluster
  server_init "$workdir/n$p" "$p" "citus,gpusort" "listen_addresses = 'localhost'
citus.enable_statistics_collection = off" || die "initdb for port $p failed"
  server_pg_ctl "$workdir/n$p" "$workdir/server-$p.log" -w start >/dev/null ||
    { tail -n 20 "$workdir/server-$p.log"; die "node on port $p did not start"; }
done
echo "coordinator on $coord, workers on ${ports[1]} and ${ports[2]} ($workdir)"

# psql on one node: quiet, unaligned, tab-separated, stop at the first error
q() {
  local port=$1
  shift
  "$bindir/psql" -X -q -A -t -F $'\t' -P null=NULL -v ON_ERROR_STOP=1 -p "$port" "$@"
}

# ---- 3. the cluster and its tables ------------------------------------------
for p in "${ports[@]}"; do
  q "$p" -c "CREATE EXTENSION citus" >"$workdir/setup.log" 2>&1 ||
    { cat "$workdir/setup.log"; die "CREATE EXTENSION citus on port $p failed"; }
done
q "$coord" >"$workdir/setup.log" 2>&1 <<SQL || { cat "$workdir/setup.log"; die "adding the nodes failed"; }
SELECT citus_set_coordinator_host('localhost', $coord);
SELECT citus_add_node('localhost', ${ports[1]});
SELECT citus_add_node('localhost', ${ports[2]});
-- propagated to the workers by Citus (the shared library is not: each
-- node preloads it itself)
CREATE EXTENSION gpusort;
SQL
got=$(q "$coord" -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$\$SELECT extversion FROM pg_extension WHERE extname = 'gpusort'\$\$)")
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" gpusort.control)
[ "$got" = "$version,$version" ]
check $? "CREATE EXTENSION gpusort $version reached both workers (got '$got')"
got=$(q "$coord" -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(\$\$SHOW shared_preload_libraries\$\$)")
[ "$got" = "citus,gpusort,citus,gpusort" ]
check $? "workers preload citus,gpusort (got '$got')"

# Deterministic data: int4/int8/date/timestamp/float8 keys with duplicates,
# NULLs and float8 specials; events2 has 0, 2 or 3 rows per id (co-located
# with events); ref is a reference table; big has one ~10 MB shard per worker,
# large enough for parallel plans there.
load_start=$(date +%s)
q "$coord" >"$workdir/setup.log" 2>&1 <<'SQL' || { cat "$workdir/setup.log"; die "creating the tables failed"; }
CREATE TABLE events (id int8 NOT NULL, g int4, k4 int4, k8 int8, d date,
                     ts timestamp, f float8, payload text);
SELECT create_distributed_table('events', 'id', shard_count := 8);
INSERT INTO events
SELECT i,
       CASE WHEN i % 101 = 0 THEN NULL ELSE i % 20 END,
       CASE WHEN i % 37 = 0 THEN NULL ELSE (i * 7919) % 5000 - 2500 END,
       CASE WHEN i % 53 = 0 THEN NULL
            ELSE ((i * 2654435761) % 1000000007 - 500000000) * 1000 END,
       CASE WHEN i % 41 = 0 THEN NULL ELSE date '2000-01-01' + (i * 31) % 9000 END,
       CASE WHEN i % 43 = 0 THEN NULL
            ELSE timestamp '2020-01-01' + ((i * 104729) % 1000000) * interval '1 second' END,
       CASE WHEN i % 61 = 0 THEN NULL
            WHEN i % 97 = 0 THEN 'NaN'
            WHEN i % 89 = 0 THEN 'Infinity'
            WHEN i % 83 = 0 THEN '-Infinity'
            ELSE ((i * 7727) % 20000) / 8.0 - 1000 END,
       'p' || i
FROM generate_series(1, 20000) i;

CREATE TABLE events2 (id int8 NOT NULL, seq int4, k4 int4, v float8);
SELECT create_distributed_table('events2', 'id', colocate_with := 'events');
INSERT INTO events2
SELECT (s * 7) % 12000 + 1, s,
       CASE WHEN s % 29 = 0 THEN NULL ELSE (s * 31) % 700 END,
       ((s * 31) % 1000) / 1000.0
FROM generate_series(1, 30000) s;

CREATE TABLE ref (g int4 PRIMARY KEY, name text, weight int4);
SELECT create_reference_table('ref');
INSERT INTO ref SELECT g, 'group ' || g, (g * 7) % 10 FROM generate_series(0, 19) g;

CREATE TABLE big (id int8 NOT NULL, k int4, v float8);
SELECT create_distributed_table('big', 'id', shard_count := 2, colocate_with := 'none');
INSERT INTO big SELECT i, (i::int8 * 7919) % 100000, i / 3.0 FROM generate_series(1, 400000) i;

VACUUM ANALYZE events;
VACUUM ANALYZE events2;
VACUUM ANALYZE ref;
VACUUM ANALYZE big;
SQL
info "tables loaded in $(($(date +%s) - load_start)) s"

# ---- settings on every node --------------------------------------------------
# ALTER SYSTEM + reload on each node: a plain SET reaches only the
# coordinator's session, never the shard queries on the workers. A reload
# reaches a backend at its next command, and new connections fork from the
# postmaster once it has reloaded, so wait until a new connection to every
# node (and the workers, seen from the coordinator) shows the new values;
# every query below runs in a new coordinator session, hence on new worker
# connections.
set_mode() {
  local enabled=$1 p want got i
  for p in "${ports[@]}"; do
    q "$p" >>"$workdir/settings.log" 2>&1 <<SQL || die "ALTER SYSTEM on port $p failed"
ALTER SYSTEM SET gpusort.enabled = $enabled;
ALTER SYSTEM SET gpusort.min_rows = 0;
ALTER SYSTEM SET gpusort.gpu_min_elements = 0;
SELECT pg_reload_conf();
SQL
  done
  want="$enabled/0/0"
  local show="SELECT current_setting('gpusort.enabled') || '/' || current_setting('gpusort.min_rows') || '/' || current_setting('gpusort.gpu_min_elements')"
  for i in $(seq 1 50); do
    got=""
    for p in "${ports[@]}"; do got="$got $(q "$p" -c "$show" 2>&1)"; done
    got="$got $(q "$coord" -c "SELECT string_agg(result, ' ' ORDER BY nodeport) FROM run_command_on_workers(\$\$$show\$\$)" 2>&1)"
    [ "$got" = " $want $want $want $want $want" ] && break
    sleep 0.2
  done
  [ "$got" = " $want $want $want $want $want" ]
  check $? "settings gpusort.enabled/min_rows/gpu_min_elements = $want on coordinator and both workers (seen:$got)"
}

# ---- queries --------------------------------------------------------------------
# name, number of leading sort-key columns, mode, SQL. Every query selects
# its ORDER BY keys first. Mode rows: the keys must match position by
# position and the whole rows as multisets; mode keys: the keys only (a LIMIT
# whose ties cross the boundary may pick different rows).
names=()
nkeys=()
modes=()
sqls=()
add() { names+=("$1"); nkeys+=("$2"); modes+=("$3"); sqls+=("$4"); }

# ORDER BY ... LIMIT: pushed down to the workers, merged on the coordinator
add limit_int4            2 rows "SELECT k4, id, payload FROM events ORDER BY k4, id LIMIT 25"
add limit_int8_desc       2 rows "SELECT k8, id FROM events ORDER BY k8 DESC, id LIMIT 400"
add limit_date_nulls_last 2 rows "SELECT d, id FROM events ORDER BY d DESC NULLS LAST, id LIMIT 20"
add limit_ts_nulls_first  2 rows "SELECT ts, id FROM events ORDER BY ts NULLS FIRST, id DESC OFFSET 450 LIMIT 40"
add limit_float8_desc     2 rows "SELECT f, id FROM events ORDER BY f DESC NULLS LAST, id LIMIT 15"
add limit_float8_asc      2 rows "SELECT f, id FROM events WHERE f IS NOT NULL ORDER BY f, id LIMIT 15"
add limit_offset          2 rows "SELECT k4, id FROM events ORDER BY k4 DESC NULLS LAST, id OFFSET 100 LIMIT 20"
add limit_ties_cross      1 keys "SELECT k4, id FROM events ORDER BY k4 LIMIT 50"
add limit_three_keys      4 rows "SELECT g, d, f, id FROM events ORDER BY g, d DESC, f, id LIMIT 30"
add limit_expression      2 rows "SELECT k8 % 1000, id FROM events ORDER BY k8 % 1000, id LIMIT 20"
add limit_where           2 rows "SELECT ts, id FROM events WHERE g BETWEEN 3 AND 7 ORDER BY ts DESC, id LIMIT 10"
add limit_join_colocated  3 rows "SELECT e.k8, e.id, e2.seq, e2.v FROM events e JOIN events2 e2 ON e.id = e2.id ORDER BY e.k8, e.id, e2.seq LIMIT 20"
add limit_join_reference  2 rows "SELECT r.weight, e.id, r.name FROM events e JOIN ref r ON e.g = r.g ORDER BY r.weight DESC, e.id LIMIT 20"
add limit_group_by_dist   2 rows "SELECT count(*) AS n, id FROM events2 GROUP BY id ORDER BY n DESC, id LIMIT 10"
add limit_group_by_other  1 rows "SELECT g, count(*), sum(k4) FROM events GROUP BY g ORDER BY g LIMIT 5"
add limit_subquery_in     2 rows "SELECT k4, id FROM events WHERE id IN (SELECT id FROM events2 WHERE v > 0.5) ORDER BY k4 NULLS FIRST, id LIMIT 25"
add limit_big_parallel    2 rows "SELECT k, id FROM big ORDER BY k DESC, id LIMIT 20"
add limit_text_key        2 rows "SELECT payload, id FROM events ORDER BY payload, id LIMIT 10"
add fetch_with_ties       1 rows "SELECT g, id FROM events ORDER BY g FETCH FIRST 10 ROWS WITH TIES"
add fetch_with_ties_desc  1 rows "SELECT k4, id FROM events ORDER BY k4 DESC NULLS LAST FETCH FIRST 5 ROWS WITH TIES"
add distinct_on           3 rows "SELECT DISTINCT ON (g) g, k8, id FROM events ORDER BY g, k8 DESC NULLS LAST, id"
add distinct_on_limit     2 rows "SELECT DISTINCT ON (k4) k4, id FROM events ORDER BY k4, id LIMIT 12"
# full ORDER BY: the workers return rows unsorted, the coordinator sorts
add full_int4_nulls_first 1 rows "SELECT k4, id, payload FROM events ORDER BY k4 NULLS FIRST"
add full_int8_desc        1 rows "SELECT k8, id FROM events WHERE g < 5 ORDER BY k8 DESC"
add full_date_ts          2 rows "SELECT d, ts, id FROM events ORDER BY d, ts DESC"
add full_float8           1 rows "SELECT f, id FROM events ORDER BY f NULLS FIRST"
add full_three_keys       3 rows "SELECT g, k4, f, id FROM events ORDER BY g DESC, k4, f"
add full_expression       2 rows "SELECT k4 % 7, id, k4 FROM events ORDER BY k4 % 7, id"
add full_join_colocated   2 rows "SELECT e.ts, e2.seq, e.id FROM events e JOIN events2 e2 USING (id) ORDER BY e.ts, e2.seq"
add full_join_reference   2 rows "SELECT r.weight, e.k4, e.id FROM events e JOIN ref r USING (g) WHERE e.k4 < 100 ORDER BY r.weight, e.k4"
add full_group_by_other   1 rows "SELECT g, count(*), sum(k4) FROM events GROUP BY g ORDER BY g"
add full_order_by_agg     2 rows "SELECT count(*) AS n, g FROM events GROUP BY g ORDER BY n DESC, g"
add limit_order_by_agg    2 rows "SELECT count(*) AS n, k4 FROM events GROUP BY k4 ORDER BY n DESC, k4 LIMIT 5"
add full_subquery_from    2 rows "SELECT cnt, id FROM (SELECT id, count(*) AS cnt FROM events2 GROUP BY id) s WHERE cnt > 2 ORDER BY cnt, id"
add subquery_limit_outer  2 rows "SELECT k8, id FROM (SELECT id, k8 FROM events ORDER BY k8 DESC NULLS LAST, id LIMIT 100) s ORDER BY k8, id"
add cte_join              2 rows "WITH top AS (SELECT id, k4 FROM events WHERE k4 IS NOT NULL ORDER BY k4, id LIMIT 40) SELECT e2.seq, top.id, top.k4 FROM top JOIN events2 e2 USING (id) ORDER BY e2.seq, top.id"
add union_all             1 rows "SELECT k4 FROM events WHERE g = 1 UNION ALL SELECT k4 FROM events2 WHERE seq < 500 ORDER BY 1 LIMIT 30"
add router_single_shard   1 rows "SELECT seq, v FROM events2 WHERE id = 14 ORDER BY seq"
add reference_only        2 rows "SELECT weight, g, name FROM ref ORDER BY weight DESC, g"
add big_full_where        2 rows "SELECT k, id FROM big WHERE k < 3000 ORDER BY k, id"
# the approximate opt-in (coordinator session only) and a subquery that
# Citus plans apart as a top-level query (recursive planning): its ORDER BY
# picks rows for the outer query, so its order must stay exact
add approx_subquery_limit  2 rows "SET gpusort.approximate_intervals = 4;
SELECT k8, id FROM (SELECT id, k8 FROM events ORDER BY k8 LIMIT 100) s ORDER BY k8, id"
add approx_subquery_offset 2 rows "SET gpusort.approximate_intervals = 4;
SELECT k8, id FROM (SELECT id, k8 FROM events ORDER BY k8 OFFSET 50 LIMIT 20) s ORDER BY k8, id"
add approx_cte_offset      2 rows "SET gpusort.approximate_intervals = 4;
WITH t AS MATERIALIZED (SELECT id, k8 FROM events WHERE k8 IS NOT NULL ORDER BY k8 DESC OFFSET 30 LIMIT 10) SELECT k8, id FROM t ORDER BY k8, id"
add approx_ref_subquery    2 rows "SET gpusort.approximate_intervals = 2;
SELECT r.g, e.id FROM events e JOIN (SELECT g FROM ref ORDER BY weight * 100 + g DESC LIMIT 3) r USING (g) ORDER BY r.g, e.id LIMIT 40"
# prepared statements: custom plans first, then (after five) a generic one
add prepared_limit        2 rows "PREPARE p(int8) AS SELECT k4, id FROM events ORDER BY k4, id LIMIT \$1;
EXECUTE p(3); EXECUTE p(5); EXECUTE p(1); EXECUTE p(8); EXECUTE p(2); EXECUTE p(7); EXECUTE p(4); EXECUTE p(9); EXECUTE p(6)"
add prepared_offset       2 rows "PREPARE p(int8, int8) AS SELECT k8, id FROM events WHERE k8 IS NOT NULL ORDER BY k8 DESC, id OFFSET \$1 LIMIT \$2;
EXECUTE p(3, 4); EXECUTE p(10, 2); EXECUTE p(0, 5); EXECUTE p(7, 3); EXECUTE p(1, 1); EXECUTE p(20, 6); EXECUTE p(5, 5); EXECUTE p(2, 9)"
add prepared_full         2 rows "PREPARE p(int4) AS SELECT k4, id FROM events WHERE g = \$1 ORDER BY k4, id;
EXECUTE p(3); EXECUTE p(5); EXECUTE p(1); EXECUTE p(8); EXECUTE p(2); EXECUTE p(7); EXECUTE p(4)"
add prepared_router       1 rows "PREPARE p(int8) AS SELECT seq, v FROM events2 WHERE id = \$1 ORDER BY seq;
EXECUTE p(14); EXECUTE p(15); EXECUTE p(16); EXECUTE p(17); EXECUTE p(18); EXECUTE p(19); EXECUTE p(20)"
# row locks: only a router query may lock rows in Citus
add router_for_update     2 rows "BEGIN; SELECT seq, v FROM events2 WHERE id = 14 ORDER BY seq FOR UPDATE; COMMIT"
add router_limit_for_share 2 rows "BEGIN; SELECT seq, v FROM events2 WHERE id = 15 ORDER BY seq DESC LIMIT 2 FOR SHARE; COMMIT"

run_queries() {
  local phase=$1 i
  mkdir -p "$workdir/$phase"
  for i in "${!names[@]}"; do
    q "$coord" -f - <<<"${sqls[$i]}" >"$workdir/$phase/$i.out" 2>"$workdir/$phase/$i.err"
    echo $? >"$workdir/$phase/$i.rc"
  done
}

compare_queries() {
  local i n d e f err
  for i in "${!names[@]}"; do
    n=${nkeys[$i]}
    d="$workdir/on/$i.out"
    e="$workdir/off/$i.out"
    err=""
    if [ "$(cat "$workdir/on/$i.rc")" != 0 ]; then
      err="error with GpuSort: $(head -c 300 "$workdir/on/$i.err")"
    elif [ "$(cat "$workdir/off/$i.rc")" != 0 ]; then
      err="error with gpusort.enabled = off: $(head -c 300 "$workdir/off/$i.err")"
    elif [ ! -s "$e" ]; then
      err="no rows"
    elif ! cmp -s <(cut -f1-"$n" "$d") <(cut -f1-"$n" "$e"); then
      f=$(diff <(cut -f1-"$n" "$d") <(cut -f1-"$n" "$e") | head -n 6 | tr '\n' ' ')
      err="sort keys differ ($(wc -l <"$d") vs $(wc -l <"$e") rows): $f"
    elif [ "${modes[$i]}" = rows ] && ! cmp -s <(LC_ALL=C sort "$d") <(LC_ALL=C sort "$e"); then
      err="rows differ as multisets"
    fi
    if [ -z "$err" ]; then
      ok "query ${names[$i]} ($(wc -l <"$e") rows, ${modes[$i]})"
    else
      bad "query ${names[$i]}: $err"
      echo "       SQL: ${sqls[$i]}"
    fi
  done
}

# ---- EXPLAIN: where GpuSort ran -------------------------------------------------
# Summarises an EXPLAIN (VERBOSE, COSTS OFF) of a distributed query, shown
# with every task (citus.explain_all_tasks): the lines under "->  Task" are a
# worker's plan of one shard query, the rest is the coordinator's. Prints
# "coord=<GpuSorts> csort=<Sorts> tasks=<tasks> wgs=<tasks with a GpuSort>
#  wsort=<Sorts on workers> capprox=<approximate GpuSorts> wapprox=<...>
#  ties=<shard queries with WITH TIES>".
summarise_plan() {
  awk '
  {
    line = $0; sub(/^ +/, "", line); ind = length($0) - length(line)
    if (intask && ind <= taskind) intask = 0
    if (line ~ /^->  Task$/) { intask = 1; taskind = ind; ntask++; next }
    if (line ~ /Custom Scan \(GpuSort\)/) { if (intask) gs[ntask] = 1; else coord++ }
    if (line ~ /^(->  )?(Incremental )?Sort( |$)/ && line !~ /Sort Key/) { if (intask) wsort++; else csort++ }
    if (line ~ /^Algorithm: approximate/) { if (intask) wapprox++; else capprox++ }
    if (intask && line ~ /^Query: .*WITH TIES/) ties++
  }
  END {
    n = 0; for (t in gs) n++
    printf "coord=%d csort=%d tasks=%d wgs=%d wsort=%d capprox=%d wapprox=%d ties=%d\n",
      coord, csort, ntask, n, wsort, capprox, wapprox, ties
  }'
}

# explain NAME SQL [settings before the EXPLAIN]: plan saved, summary printed
explain() {
  local name=$1 sql=$2 pre=${3:-}
  q "$coord" >"$workdir/plan-$name.txt" 2>&1 <<SQL
SET citus.explain_all_tasks = on;
$pre
EXPLAIN (VERBOSE, COSTS OFF) $sql;
SQL
  if [ $? -ne 0 ]; then
    echo "error"
    return
  fi
  summarise_plan <"$workdir/plan-$name.txt"
}

# expect_plan NAME SQL 'awk condition on the summary fields' [pre-SQL] [what]
expect_plan() {
  local name=$1 sql=$2 cond=$3 pre=${4:-} what=${5:-$3} s
  s=$(explain "$name" "$sql" "$pre")
  if echo "$s" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] + 0 } ok = ('"$cond"'); exit !ok }'; then
    ok "plan $name: $what [$s]"
  else
    bad "plan $name: $what [$s]"
    echo "       SQL: $sql"
    sed 's/^/       | /' "$workdir/plan-$name.txt" | head -n 60
  fi
}

cond_workers='v["tasks"] > 0 && v["wgs"] == v["tasks"] && v["wsort"] == 0'
cond_coord='v["coord"] >= 1 && v["csort"] == 0'

# ---- phase 1: GpuSort on every node ----------------------------------------------
echo "== GpuSort forced on every node"
set_mode on
expect_plan limit_on_workers "SELECT k4, id FROM events ORDER BY k4, id LIMIT 25" \
  "$cond_workers && $cond_coord" "" \
  "ORDER BY ... LIMIT: GpuSort in every worker's task and on the coordinator"
expect_plan limit_desc_nulls "SELECT k8, id FROM events ORDER BY k8 DESC NULLS LAST, id LIMIT 10" \
  "$cond_workers && $cond_coord" "" "DESC NULLS LAST LIMIT: GpuSort on workers and coordinator"
expect_plan full_on_coordinator "SELECT k4, id FROM events ORDER BY k4 NULLS FIRST" \
  "$cond_coord && v[\"wgs\"] == 0 && v[\"wsort\"] == 0" "" \
  "full ORDER BY: GpuSort on the coordinator only (workers do not sort)"
expect_plan join_colocated "SELECT e.k8, e.id FROM events e JOIN events2 e2 ON e.id = e2.id ORDER BY e.k8, e.id LIMIT 20" \
  "$cond_workers && $cond_coord" "" "co-located join with LIMIT: GpuSort on workers and coordinator"
expect_plan join_reference "SELECT r.weight, e.id FROM events e JOIN ref r ON e.g = r.g ORDER BY r.weight DESC, e.id LIMIT 20" \
  "$cond_workers && $cond_coord" "" "reference-table join with LIMIT: GpuSort on workers and coordinator"
expect_plan router "SELECT seq, v FROM events2 WHERE id = 14 ORDER BY seq" \
  'v["tasks"] == 1 && v["wgs"] == 1 && v["coord"] == 0 && v["csort"] == 0' "" \
  "router query (one shard): GpuSort in the worker's task, nothing on the coordinator"
expect_plan group_by_dist "SELECT count(*) AS n, id FROM events2 GROUP BY id ORDER BY n DESC, id LIMIT 10" \
  "$cond_workers && $cond_coord" "" "GROUP BY distribution column, ORDER BY count(*) LIMIT: GpuSort on workers and coordinator"
expect_plan with_ties "SELECT g, id FROM events ORDER BY g FETCH FIRST 10 ROWS WITH TIES" \
  'v["tasks"] > 0 && v["ties"] == v["tasks"]' "" \
  "FETCH FIRST ... WITH TIES is pushed down to every shard query"
expect_plan parallel_big "SELECT k, id FROM big ORDER BY k DESC, id LIMIT 20" \
  'v["tasks"] == 2' "" "big table (one shard per worker): two tasks"
expect_plan text_key "SELECT payload, id FROM events ORDER BY payload, id LIMIT 10" \
  'v["coord"] == 0 && v["wgs"] == 0' "" "text key: no GpuSort anywhere"

# the approximate opt-in is the coordinator's session setting only
approx_sql="SELECT k8, id FROM events ORDER BY k8 LIMIT 25"
expect_plan approx_set_on_coordinator "$approx_sql" \
  'v["wapprox"] == 0 && v["wgs"] == v["tasks"] && v["tasks"] > 0' \
  "SET gpusort.approximate_intervals = 64;" \
  "approximate_intervals SET on the coordinator does not reach the workers' plans"
info "approximate_intervals on the coordinator, $approx_sql: $(explain approx_info "$approx_sql" "SET gpusort.approximate_intervals = 64;")"
info "  same, full ORDER BY k8: $(explain approx_full "SELECT k8, id FROM events ORDER BY k8" "SET gpusort.approximate_intervals = 64;")"
info "  same, inside a subquery planned apart (recursive planning): $(explain approx_sub "SELECT k8, id FROM (SELECT id, k8 FROM events ORDER BY k8 LIMIT 100) s ORDER BY id" "SET gpusort.approximate_intervals = 64;")"
expect_plan approx_propagate_local "$approx_sql" 'v["wapprox"] == 0' \
  "BEGIN; SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL gpusort.approximate_intervals = 64;" \
  "approximate_intervals SET LOCAL with citus.propagate_set_commands = local stays out of the shard queries"

# how the plans look (not checks): shapes where GpuSort may or may not apply
for spec in \
  "distinct_on|SELECT DISTINCT ON (g) g, k8, id FROM events ORDER BY g, k8 DESC NULLS LAST, id" \
  "order_by_agg_limit|SELECT count(*) AS n, k4 FROM events GROUP BY k4 ORDER BY n DESC, k4 LIMIT 5" \
  "subquery_limit|SELECT k8, id FROM (SELECT id, k8 FROM events ORDER BY k8 DESC NULLS LAST, id LIMIT 100) s ORDER BY k8, id" \
  "union_all|SELECT k4 FROM events WHERE g = 1 UNION ALL SELECT k4 FROM events2 WHERE seq < 500 ORDER BY 1 LIMIT 30" \
  "reference_only|SELECT weight, g, name FROM ref ORDER BY weight DESC, g" \
  "with_ties_plan|SELECT g, id FROM events ORDER BY g FETCH FIRST 10 ROWS WITH TIES" \
  "parallel_big_plan|SELECT k, id FROM big ORDER BY k DESC, id LIMIT 20" \
  "ref_subquery|SELECT r.g, e.id FROM events e JOIN (SELECT g FROM ref ORDER BY weight * 100 + g DESC LIMIT 3) r USING (g) ORDER BY r.g, e.id LIMIT 40"; do
  info "${spec%%|*}: $(explain "${spec%%|*}" "${spec#*|}")"
done
grep -E "Custom Scan \(Citus|Gather|Parallel" "$workdir/plan-parallel_big_plan.txt" | sort | uniq -c |
  sed 's/^/  info:   big: /'

# the coordinator's combine query over Citus's scan, under default thresholds
q "$coord" >"$workdir/plan-rows.txt" 2>&1 <<'SQL'
EXPLAIN (VERBOSE) SELECT k4, id FROM events ORDER BY k4 NULLS FIRST;
SQL
info "Citus's scan on the coordinator claims: $(grep -oE 'Custom Scan \(Citus[^)]*\)  \(cost=[^)]*\)' "$workdir/plan-rows.txt" | head -n 1)"
# that count is no ground for costs: at the default gpusort.min_rows a full
# ORDER BY there is GpuSort's whatever the count (it picks GPU or CPU when
# it runs), and the top-N merge of at most LIMIT rows per shard is
# PostgreSQL's
defaults="SET gpusort.min_rows = 50000; SET gpusort.gpu_min_elements = 16384;"
expect_plan default_full "SELECT k4, id FROM events WHERE id < 10 ORDER BY k4" \
  "$cond_coord" "$defaults" \
  "default gpusort.min_rows: a full ORDER BY on the coordinator is GpuSort's, whatever Citus's scan claims"
expect_plan default_limit "SELECT k4, id FROM events ORDER BY k4, id LIMIT 25" \
  'v["coord"] == 0 && v["csort"] >= 1' "$defaults" \
  "default gpusort.min_rows: the coordinator's top-N over the shards' LIMIT rows stays PostgreSQL's"

run_queries on

# ---- phase 2: gpusort.enabled = off on every node ---------------------------------
echo "== gpusort.enabled = off on every node"
set_mode off
expect_plan off_limit "SELECT k4, id FROM events ORDER BY k4, id LIMIT 25" \
  'v["coord"] == 0 && v["wgs"] == 0 && v["tasks"] > 0 && v["wsort"] > 0' "" \
  "with gpusort.enabled = off everywhere no GpuSort on any node (Sorts instead)"
expect_plan off_full "SELECT k4, id FROM events ORDER BY k4 NULLS FIRST" \
  'v["coord"] == 0 && v["wgs"] == 0 && v["csort"] == 1' "" \
  "with gpusort.enabled = off the coordinator sorts with Sort"
run_queries off

echo "== answers compared (GpuSort forced vs gpusort.enabled = off)"
compare_queries

finish
