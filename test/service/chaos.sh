#!/usr/bin/env bash
# The GPU service under fire (test/service/chaos.py): clients sort while
# the service's processes are killed, stopped and continued, backends are
# terminated, the configuration reloaded and the server restarted.
#   test/service/chaos.sh
# Starts a throwaway server (PostgreSQL's defaults, gpusort preloaded).
# Its GPUs are emulated by the CPU engine (GPUSORT_SERVICE_EMULATE: two of
# 2 GB) unless GPUSORT_CHAOS_REAL_GPU=1 (the GPU machine). Runs
# GPUSORT_CHAOS_SECONDS (default 90) with GPUSORT_CHAOS_CLIENTS clients
# (default 6), then checks, beside chaos.py's own checks, that no server
# process was terminated by a signal and no temporary file was left. Ends
# with "N passed, M failed". Expects gpusort built and installed.
set -uo pipefail
cd "$(dirname "$0")/../.."
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$($pg_config --bindir)
seconds=${GPUSORT_CHAOS_SECONDS:-90}
clients=${GPUSORT_CHAOS_CLIENTS:-6}
port=${GPUSORT_CHAOS_PORT:-54349}

# shellcheck source=test/lib/server.sh
. test/lib/server.sh
server_workdir chaos
emulate=""
[ "${GPUSORT_CHAOS_REAL_GPU:-0}" = 1 ] || emulate="GPUSORT_SERVICE_EMULATE=2048 GPUSORT_SERVICE_EMULATE_GPUS=2"
server_env=$emulate
cleanup() {
  server_stop "$workdir/data"
  [ -n "${GPUSORT_KEEP_LOG:-}" ] && cp "$workdir/server.log" "$GPUSORT_KEEP_LOG" 2>/dev/null
  server_cleanup
}
trap cleanup EXIT

server_init "$workdir/data" "$port" gpusort || { echo "0 passed, 1 failed"; exit 1; }
server_pg_ctl "$workdir/data" "$workdir/server.log" -w start >/dev/null ||
  { cat "$workdir/server.log"; echo "0 passed, 1 failed"; exit 1; }
export PGHOST="$workdir" PGPORT="$port" PGUSER="$dbuser"
"$bindir/psql" -X -q -d postgres -c "CREATE EXTENSION gpusort" >/dev/null

py=python3
for p in /usr/bin/python3 python3; do
  if "$p" -c "import psycopg2" >/dev/null 2>&1; then py=$p; break; fi
done
restart="$run_as env $emulate $bindir/pg_ctl -D $workdir/data -l $workdir/server.log -w -m fast restart"
"$py" test/service/chaos.py --dsn "host=$workdir port=$port user=$dbuser dbname=postgres" \
  --seconds "$seconds" --clients "$clients" --restart-cmd "$restart" \
  --killed-file "$workdir/killed" > "$workdir/chaos.log" 2>&1
cat "$workdir/chaos.log" | grep -v -E "^[0-9]+ passed, [0-9]+ failed$"
line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$workdir/chaos.log" | tail -n 1)
passed=$(echo "${line:-0 passed, 1 failed}" | cut -d' ' -f1)
failed=$(echo "${line:-0 passed, 1 failed}" | cut -d' ' -f3)

# the backends chaos.py killed with -9 on purpose are the only ones
# allowed to end by a signal
signalled=$(grep "terminated by signal" "$workdir/server.log" |
  grep -v -F -f <(sed 's/.*/(PID &) was terminated by signal 9/' "$workdir/killed" 2>/dev/null))
if [ -n "$signalled" ]; then
  echo "$signalled"
  echo "not ok - a server process was terminated by a signal (above)"
  failed=$((failed + 1))
else
  echo "ok - no server process terminated by a signal but the $(wc -l < "$workdir/killed" 2>/dev/null || echo 0) backends killed on purpose"
  passed=$((passed + 1))
fi
cores=$(find "$workdir/data" -maxdepth 1 -name 'core*' 2>/dev/null | head -n 3)
if [ -n "$cores" ]; then
  echo "not ok - a process left a core file in the data directory: $cores"
  failed=$((failed + 1))
else
  echo "ok - no core file in the data directory"
  passed=$((passed + 1))
fi
left=$(find "$workdir/data/base/pgsql_tmp" -type f 2>/dev/null | head -n 3)
if [ -n "$left" ]; then
  echo "not ok - temporary files left: $left"
  failed=$((failed + 1))
else
  echo "ok - no temporary file left"
  passed=$((passed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
