#!/usr/bin/env bash
# Runs every test that needs no GPU and ends with one line "N passed, M failed":
#   test/run_tests.sh
# 1. the engine's unit tests (plain C, no PostgreSQL);
# 2. the pg_regress suite (make installcheck) against a throwaway
#    PostgreSQL 15 server started here and stopped afterwards.
# It expects gpusort built and installed (test/setup.sh). N counts every
# unit-test check and every regress test. Extra server options can be passed
# in GPUSORT_TEST_OPTIONS (e.g. "-c gpusort.device=gpu" on a GPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($pg_config --bindir)
export PATH="/usr/local/cuda/bin:$PATH"

passed=0
failed=0

# ---- 1. unit tests ----
echo "== engine unit tests"
if make -s unittest PG_CONFIG="$pg_config" > /tmp/gpusort-unit.log 2>&1; then :; fi
cat /tmp/gpusort-unit.log | grep -v "^$" | tail -n 20
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" /tmp/gpusort-unit.log | tail -n 1)
if [ -n "$line" ]; then
  passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
else
  echo "unit tests did not run to the end"
  failed=$((failed + 1))
fi

# ---- 2. pg_regress against a throwaway server ----
echo "== pg_regress"
workdir=$(mktemp -d /tmp/gpusort-test.XXXXXX)
port=${GPUSORT_TEST_PORT:-54329}
run_as=""
dbuser=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
  # the server refuses to run as root
  run_as="runuser -u postgres --"
  dbuser=postgres
  chown postgres "$workdir"
fi
cleanup() {
  $run_as "$bindir/pg_ctl" -D "$workdir/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$workdir"
}
trap cleanup EXIT

$run_as "$bindir/initdb" -D "$workdir/data" -A trust -U "$dbuser" >"$workdir/initdb.log" 2>&1 \
  || { cat "$workdir/initdb.log"; echo "0 passed, 1 failed"; exit 1; }
cat >> "$workdir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$workdir'
port = $port
max_parallel_workers_per_gather = 0
# loaded by the postmaster, as in production: it must not touch CUDA there
shared_preload_libraries = 'gpusort'
CONF
$run_as "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -w \
  -o "${GPUSORT_TEST_OPTIONS:-}" start >/dev/null \
  || { cat "$workdir/server.log"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

export PGHOST="$workdir" PGPORT="$port" PGUSER="$dbuser"
make -s installcheck PG_CONFIG="$pg_config" > "$workdir/regress.log" 2>&1
cat "$workdir/regress.log" | grep -E "^(ok|not ok|test |     |#|\S+ +\.\.\. )|tests|failed" | tail -n 40
total=$(grep -cE "^(ok|not ok) |^test .*\.\.\. |^     [a-z_]+ +\.\.\. " "$workdir/regress.log")
bad=$(grep -cE "^not ok |\.\.\. FAILED|\.\.\. failed" "$workdir/regress.log")
if [ "$total" -eq 0 ]; then
  cat "$workdir/regress.log"
  bad=1
  total=1
fi
if [ "$bad" -gt 0 ] && [ -f regression.diffs ]; then
  head -n 200 regression.diffs
fi
passed=$((passed + total - bad))
failed=$((failed + bad))

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
