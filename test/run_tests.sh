#!/usr/bin/env bash
# Runs every test that needs no GPU and ends with one line "N passed, M failed":
#   test/run_tests.sh                  every major of debian/pgversions (15
#                                      and 18), one after the other, each
#                                      against its server in
#                                      /usr/lib/postgresql/NN; the last line
#                                      counts them all
#   PG_CONFIG=.../pg_config test/run_tests.sh    that server's major only
# For each major:
# 1. the engine's unit tests (plain C, no PostgreSQL), and the kernels'
#    sorting networks emulated on the CPU (make emulate-networks);
# 2. the pg_regress and isolation suites (make installcheck) against a
#    throwaway PostgreSQL server started here with PostgreSQL's default
#    settings (parallel query on, work_mem 4MB) and gpusort preloaded; a
#    test that needs a plan shape sets what it needs itself;
# 3. the differential fuzzer (test/fuzz/), a bounded time with a fixed seed
#    and a fresh one (GPUSORT_FUZZ_SECONDS per seed, 0 skips it);
# 4. the README's settings table against the server's settings and its SQL
#    examples against their stated results (test/check_readme.py), PGXN's
#    META.json (test/check_meta.py), sorts fetched a few rows at a time
#    through the extended protocol (test/check_fetch_size.py), that the
#    layers depend one way (test/check_layers.py), and, where
#    gpusort was installed from its Debian package (test/setup.sh), that
#    the server loads it from there
#    (test/check_package.sh);
# 5. the server log: a backend "terminated by signal" is a failure;
# 6. the GPU service end to end (test/service/run.sh): its own server, whose
#    GPU processes play GPUs with the CPU engine; GPUSORT_SERVICE_TEST=0
#    skips it; then the service under fire (test/service/chaos.sh) for
#    GPUSORT_CHAOS_SECONDS (default 90; 0 skips it);
# 7. gpusort on a Citus cluster (test/citus/run.sh), where Citus is
#    installed (test/setup.sh installs it) or this runs as root.
# It expects gpusort built and installed (test/setup.sh). N counts every
# unit-test check, every regress and isolation test, every fuzzed query and
# the log check. Extra server options can be passed in GPUSORT_TEST_OPTIONS
# (e.g. "-c gpusort.device=gpu" on a GPU machine); the server runs as
# GPUSORT_TEST_USER (default postgres) when this script runs as root.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ -z "${PG_CONFIG:-}" ]; then
  # every major, each line of a major's counts marked with it
  passed=0
  failed=0
  for major in $(sed -n 's/^\([0-9][0-9]*\)$/\1/p' debian/pgversions); do
    echo "=== PostgreSQL $major"
    log=$(mktemp /tmp/gpusort-tests-$major.XXXXXX)
    pgc=/usr/lib/postgresql/$major/bin/pg_config
    if [ -x "$pgc" ]; then
      PG_CONFIG=$pgc "$root/test/run_tests.sh" 2>&1 |
        sed -u -E "s/^([0-9]+ passed, [0-9]+ failed)$/PostgreSQL $major: \1/" | tee "$log"
    else
      echo "PostgreSQL $major is not installed ($pgc): sudo test/setup.sh installs it"
    fi
    line=$(grep -E "^PostgreSQL $major: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -n 1)
    if [ -n "$line" ]; then
      passed=$((passed + $(echo "${line#*: }" | cut -d' ' -f1)))
      failed=$((failed + $(echo "${line#*: }" | cut -d' ' -f3)))
    else
      echo "the tests on PostgreSQL $major did not run to the end"
      failed=$((failed + 1))
    fi
    rm -f "$log"
  done
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
export PG_CONFIG
pg_config=$PG_CONFIG
bindir=$($pg_config --bindir)
export PATH="/usr/local/cuda/bin:$PATH"

passed=0
failed=0
# adds the counts of the last "N passed, M failed" line of a log
count_from() {
  local line
  line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$1" | tail -n 1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  else
    echo "$2 did not run to the end"
    failed=$((failed + 1))
  fi
}

# bounded SECONDS NAME COMMAND...: runs COMMAND, stopped after SECONDS
# (far beyond its usual time), so that a hang fails its stage, named, and
# the stages after it still run, rather than holding CI until its own time
# is up with nothing said
bounded() {
  local secs=$1 name=$2 rc
  shift 2
  timeout -k 30 "$secs" "$@"
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "$name was stopped after $secs s"
    stopped="$stopped $name;"
  fi
  return "$rc"
}
stopped=""

# shellcheck source=test/lib/server.sh
. "$root/test/lib/server.sh"
server_workdir test

# ---- 1. unit tests ----
echo "== engine unit tests"
bounded 1800 "the unit tests" make -s unittest PG_CONFIG="$pg_config" > "$workdir/unit.log" 2>&1
grep -v "^$" "$workdir/unit.log" | tail -n 20
count_from "$workdir/unit.log" "unit tests"
# the kernels' sorting networks, run on the CPU as a GPU's threads would
# run them (test/gpu/emulate_networks.cpp): their layouts and results
echo "== the kernels' networks, emulated on the CPU"
bounded 1800 "the network emulation" make -s emulate-networks PG_CONFIG="$pg_config" > "$workdir/networks.log" 2>&1
tail -n 1 "$workdir/networks.log"
count_from "$workdir/networks.log" "the network emulation"

# ---- 2. pg_regress against a throwaway server ----
echo "== pg_regress and isolation tests (server with default settings)"
port=${GPUSORT_TEST_PORT:-54329}
trap 'server_cleanup "$workdir/data"' EXIT

# Only what a test server needs: its socket, and gpusort loaded by the
# postmaster as in production (it must not touch CUDA there). Everything
# else keeps PostgreSQL's defaults.
server_init "$workdir/data" "$port" gpusort ||
  { echo "$passed passed, $((failed + 1)) failed"; exit 1; }
server_pg_ctl "$workdir/data" "$workdir/server.log" -w -o "${GPUSORT_TEST_OPTIONS:-}" start >/dev/null \
  || { cat "$workdir/server.log"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

export PGHOST="$workdir" PGPORT="$port" PGUSER="$dbuser"
bounded 2400 "the regress suite" make -s installcheck PG_CONFIG="$pg_config" > "$workdir/regress.log" 2>&1
grep -E "^(ok|not ok|test |     |#|\S+ +\.\.\. )|tests|failed" "$workdir/regress.log" | tail -n 40
total=$(grep -cE "^(ok|not ok) |^test .*\.\.\. |^     [a-z_]+ +\.\.\. " "$workdir/regress.log")
bad=$(grep -cE "^not ok |\.\.\. FAILED|\.\.\. failed" "$workdir/regress.log")
if [ "$total" -eq 0 ] || grep -q "^the regress suite was stopped" "$workdir/regress.log"; then
  cat "$workdir/regress.log"
  bad=1
  total=1
fi
if [ "$bad" -gt 0 ]; then
  for diffs in regression.diffs output_iso/regression.diffs; do
    [ -f "$diffs" ] && head -n 200 "$diffs"
  done
fi
passed=$((passed + total - bad))
failed=$((failed + bad))

# ---- 3. the differential fuzzer ----
if [ -x test/fuzz/run_fuzz.sh ] && [ "${GPUSORT_FUZZ_SECONDS:-90}" != 0 ]; then
  echo "== differential fuzzer (GpuSort against PostgreSQL's sort)"
  test/fuzz/run_fuzz.sh > "$workdir/fuzz.log" 2>&1
  grep -vE "^ *$" "$workdir/fuzz.log" | tail -n 30
  count_from "$workdir/fuzz.log" "the fuzzer"
fi

# ---- 4. README, PGXN metadata, the installed package ----
echo "== README settings and examples, META.json, fetching in batches, layers, package"
for check in "test/check_readme.py all" "test/check_meta.py" "test/check_fetch_size.py" \
    "test/check_layers.py"; do
  python3 $check > "$workdir/check.log" 2>&1
  grep -E "^(FAILED|not ok)|^[0-9]+ passed" "$workdir/check.log"
  count_from "$workdir/check.log" "$check"
done
major=$($pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
# the package's files are checked where the server is the one they went
# into (not another server of the same major, such as a portable build)
if [ "$pg_config" = "/usr/lib/postgresql/$major/bin/pg_config" ] &&
   dpkg -s "postgresql-$major-gpusort" >/dev/null 2>&1; then
  test/check_package.sh > "$workdir/check.log" 2>&1
  grep -E "^(FAILED|not ok)|^[0-9]+ passed" "$workdir/check.log"
  count_from "$workdir/check.log" "test/check_package.sh"
else
  echo "gpusort is not installed from its Debian package into this server: package checks skipped"
fi

# ---- 5. the server log ----
echo "== server log"
if grep -n "terminated by signal" "$workdir/server.log"; then
  echo "a server process died (above): failed"
  failed=$((failed + 1))
else
  echo "no process terminated by a signal"
  passed=$((passed + 1))
fi
[ -n "${GPUSORT_TEST_LOG_COPY:-}" ] && cp "$workdir/server.log" "$GPUSORT_TEST_LOG_COPY"

# ---- 6. the GPU service ----
if [ "${GPUSORT_SERVICE_TEST:-1}" != 0 ]; then
  echo "== the GPU service (emulated GPUs: queue, cancellation, crashes)"
  server_stop "$workdir/data" fast
  bounded 2400 "the GPU service test" test/service/run.sh > "$workdir/service.log" 2>&1
  grep -E "^(not ok|==)|^[0-9]+ passed" "$workdir/service.log"
  count_from "$workdir/service.log" "the GPU service test"
fi
if [ "${GPUSORT_CHAOS_SECONDS:-90}" != 0 ]; then
  echo "== the GPU service under fire (kill -9, SIGSTOP, terminations, reloads, restarts)"
  server_stop "$workdir/data" fast
  bounded 1200 "the chaos test" test/service/chaos.sh > "$workdir/chaos.log" 2>&1
  grep -E "^(not ok|ok|sorts right|chaos for|WRONG|ERROR)|^[0-9]+ passed" "$workdir/chaos.log"
  count_from "$workdir/chaos.log" "the chaos test"
fi

# ---- 7. Citus ----
citus_lib="$($pg_config --pkglibdir)/citus.so"
if [ "${GPUSORT_CITUS:-1}" != 0 ] && { [ -f "$citus_lib" ] || [ "$(id -u)" -eq 0 ]; } &&
   [[ $($pg_config --bindir) == /usr/lib/postgresql/*/bin ]]; then
  echo "== gpusort on a Citus cluster"
  bounded 1800 "the Citus test" test/citus/run.sh > "$workdir/citus.log" 2>&1
  grep -E "^(FAILED|ok )|^[0-9]+ passed|run time" "$workdir/citus.log" | grep -v "^ok " | tail -n 20
  count_from "$workdir/citus.log" "the Citus test"
else
  echo "== Citus test skipped (Citus is not installed: sudo test/setup.sh installs it)"
fi

[ -n "$stopped" ] && echo "stopped for running far beyond their usual time:$stopped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
