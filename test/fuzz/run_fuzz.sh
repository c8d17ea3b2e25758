#!/usr/bin/env bash
# What CI runs: the differential fuzzer (fuzz.py) twice against a running
# server that has gpusort installed and preloaded (shared_preload_libraries),
# reached through PGHOST/PGPORT/PGUSER:
#   1. a fixed seed (GPUSORT_FUZZ_SEED, default 20261123), the same every run;
#   2. a fresh random seed, printed, to rerun with fuzz.py --seed N.
# Each runs GPUSORT_FUZZ_SECONDS (default 90) in a database created here and
# dropped afterwards. GPUSORT_FUZZ_DEVICE (auto|gpu|cpu, default auto) is
# gpusort.device for the GpuSort side. Ends with "N passed, M failed"
# (queries, both runs together); exits non-zero if any failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
secs=${GPUSORT_FUZZ_SECONDS:-90}
fixed=${GPUSORT_FUZZ_SEED:-20261123}
device=${GPUSORT_FUZZ_DEVICE:-auto}
db=${GPUSORT_FUZZ_DB:-gpusort_fuzz}
pg_config=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
psql=psql
if [ -x "$pg_config" ]; then psql="$($pg_config --bindir)/psql"; fi

# a python3 with psycopg2 (Debian: python3-psycopg2) if there is one; any
# python3 otherwise (fuzz.py then speaks the protocol itself, pgwire.py)
py=python3
for p in /usr/bin/python3 python3; do
  if "$p" -c "import psycopg2" >/dev/null 2>&1; then py=$p; break; fi
done

"$psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null || {
  echo "run_fuzz.sh: cannot create database $db"; echo "0 passed, 1 failed"; exit 1; }

fresh=$("$py" -c "import random; print(random.SystemRandom().randrange(1, 10**9))")
passed=0
failed=0
for seed in "$fixed" "$fresh"; do
  echo "== fuzz.py --seed $seed --seconds $secs --device $device"
  log=$(mktemp /tmp/gpusort-fuzz.XXXXXX)
  # a bound on the whole run: a statement that ignores statement_timeout
  # (a loop that never checks for interrupts) fails the run, named by its
  # seed, instead of holding CI until its own time is up
  timeout -k 10 $(( ${secs%.*} + 600 )) \
    "$py" "$here/fuzz.py" --seed "$seed" --seconds "$secs" --device "$device" --small \
    --dsn "dbname=$db" ${GPUSORT_FUZZ_OPTIONS:-} 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -ge 124 ] && echo "fuzz.py --seed $seed was stopped after $(( ${secs%.*} + 600 )) s"
  line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$log" | tail -n 1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  else
    echo "fuzz.py --seed $seed did not run to the end"
    failed=$((failed + 1))
  fi
  rm -f "$log"
done

"$psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
echo "fuzz: seeds $fixed (fixed) and $fresh (fresh)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
