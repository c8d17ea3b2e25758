#!/usr/bin/env bash
# The GPU test runner, for a machine with an NVIDIA GPU (run from the
# repository root there):
#
#   test/gpu/run_on_gpu.sh OUTDIR [tests,kernels,sql | all]   (default: tests)
#
# Builds gpusort with the kernels, installs it into a throwaway PostgreSQL,
# and runs, each logged under OUTDIR:
#   1. the engine unit tests, on the CPU and again driving the GPU;
#   2. test/gpu/check_gpu: every GPU algorithm against the CPU engine on
#      random inputs up to 2^26 elements;
#   3. test/run_tests.sh with gpusort.device = gpu (so every sort in it
#      runs on the GPU or fails): the regress and isolation suites and the
#      differential fuzzer on a server with PostgreSQL's default settings,
#      failing if a server process was terminated by a signal;
#   4. kernels: the kernel benchmark against CUB (bench/bench_kernels, up
#      to 2^26) and its plots (bench/plot.py);
#   approx (not in all): the approximate sort and its variants against
#      CUB's radix sort, 2^24..2^26 (bench/bench_kernels --approx);
#   host (not in all; kernels includes it): gpu_sort host to host with its
#      transfers overlapped with the sort or not, 2^20..2^26 (--host);
#   5. sql: the approximate sort's quality (bench/approx_quality), the
#      GPU/CPU crossover (bench/crossover) and the SQL benchmark
#      (bench/sql_bench.sh, sizes in GPUSORT_BENCH_ROWS, default 1000000
#      10000000).
# With GPUSORT_PACK=1 everything but summary.txt ends up in OUTDIR/run.tar.gz
# (the workplace's device tool brings back at most 8 files).
# On the workplace's GPU machine, PostgreSQL comes from .device-carry (see
# ../shared/device/README.md); elsewhere set PG_CONFIG/PGHOST/... yourself.
set -uo pipefail
out=${1:?usage: test/gpu/run_on_gpu.sh OUTDIR [tests|kernels|sql|all]}
what=${2:-tests}
want() { { [ "$what" = all ] && [ "$1" != approx ] && [ "$1" != host ]; } || [[ ",$what," == *",$1,"* ]]; }
mkdir -p "$out"
export PATH="/usr/local/cuda/bin:$PATH"
if [ -f .device-carry/pg-on-gpu.sh ]; then
  # shellcheck disable=SC1091
  source .device-carry/pg-on-gpu.sh > "$out/postgres_setup.log" 2>&1
fi
run_as=""
if [ "$(id -u)" -eq 0 ] && id pgrun >/dev/null 2>&1; then run_as="pgrun"; fi

summary=()
step() { echo; echo "===== $*"; }
record() { summary+=("$1: $2"); }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

step "build"
make clean >/dev/null 2>&1
if make -j"$(nproc)" PG_CONFIG="$PG_CONFIG" > "$out/build.log" 2>&1 &&
   make install PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1; then
  record build ok
else
  tail -n 40 "$out/build.log"; record build FAILED
  printf '%s\n' "${summary[@]}"; exit 1
fi
chmod -R a+rwX .
# The benchmark server (pg-on-gpu.sh's) must preload gpusort: the GPU is
# reached only through the GPU service, which starts with the server.
if [ -n "${PGDATA:-}" ] && [ -f "$PGDATA/postgresql.conf" ] &&
   ! grep -q "^shared_preload_libraries = 'gpusort'" "$PGDATA/postgresql.conf"; then
  echo "shared_preload_libraries = 'gpusort'" >> "$PGDATA/postgresql.conf"
  restart="$(dirname "$PG_CONFIG")/pg_ctl -D $PGDATA -l /tmp/gpusort-pg.log -w restart"
  if [ -n "$run_as" ]; then su "$run_as" -c "$restart"; else $restart; fi >/dev/null
fi

if want tests; then
step "unit tests (CPU, then GPU)"
make test/unit/test_engine PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
test/unit/test_engine > "$out/unit_cpu.log" 2>&1; tail -n 3 "$out/unit_cpu.log"
record "unit tests" "$(tail -n 1 "$out/unit_cpu.log")"
test/unit/test_engine --gpu > "$out/unit_gpu.log" 2>&1; tail -n 3 "$out/unit_gpu.log"
record "unit tests with --gpu" "$(tail -n 1 "$out/unit_gpu.log")"

step "GPU against the CPU engine on random inputs"
make test/gpu/check_gpu PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
test/gpu/check_gpu > "$out/check_gpu.log" 2>&1; tail -n 15 "$out/check_gpu.log"
record "check_gpu" "$(tail -n 1 "$out/check_gpu.log")"

step "test/run_tests.sh with gpusort.device = gpu: regress, isolation, fuzzer, server log"
# its own throwaway server with PostgreSQL's default settings (parallel
# query on), every session on the GPU; the fuzzer runs GPUSORT_FUZZ_SECONDS
# per seed
GPUSORT_TEST_USER=${run_as:-postgres} GPUSORT_TEST_OPTIONS="-c gpusort.device=gpu" \
  GPUSORT_FUZZ_DEVICE=gpu GPUSORT_TEST_LOG_COPY="$out/server.log" PG_CONFIG="$PG_CONFIG" \
  test/run_tests.sh > "$out/run_tests.log" 2>&1
grep -E "^(test |==|fuzz|[0-9]+ passed)|tests|terminated by signal" "$out/run_tests.log"
[ -f regression.diffs ] && cp regression.diffs "$out/"
record "run_tests.sh (device=gpu)" "$(tail -n 1 "$out/run_tests.log")"

fi

if want kernels; then
  step "kernel benchmark against CUB"
  make bench/bench_kernels PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
  bench/bench_kernels --csv "$out/kernels.csv" --max-log 26 > "$out/kernels.log" 2>&1
  tail -n 45 "$out/kernels.log"
  mkdir -p "$out/plots"
  python3 bench/plot.py "$out/kernels.csv" "$out/plots" > "$out/plot.log" 2>&1 || tail -n 5 "$out/plot.log"
fi

if want approx; then
  step "approximate sort against CUB's radix sort, 2^24..2^26"
  make bench/bench_kernels PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
  bench/bench_kernels --csv "$out/approx.csv" --approx --min-log 24 --max-log 26 \
    > "$out/approx.log" 2>&1
  grep -E "^(device|2\^)" "$out/approx.log"
fi

if want host; then
  step "gpu_sort host to host: transfers overlapped with the sort or not, 2^20..2^26"
  make bench/bench_kernels PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
  bench/bench_kernels --csv "$out/host.csv" --host --min-log 20 --max-log 26 \
    > "$out/host.log" 2>&1
  grep -E "^2\^" "$out/host.log"
fi

if want sql; then
  step "approximate sort: quality and speed"
  make bench/approx_quality PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
  bench/approx_quality "$out/approx_quality.csv" 24 > "$out/approx_quality.log" 2>&1
  grep -E "^(device|dist|[a-z]+ +16777216)" "$out/approx_quality.log"
  step "GPU against CPU, host to host, by size"
  make bench/crossover PG_CONFIG="$PG_CONFIG" >> "$out/build.log" 2>&1
  bench/crossover "$out/crossover.csv" > "$out/crossover.log" 2>&1
  cat "$out/crossover.log"
  step "SQL benchmark"
  if [ -n "$run_as" ]; then chown -R "$run_as" "$out"; fi
  bench/sql_bench.sh "$out" ${GPUSORT_BENCH_ROWS:-1000000 10000000} > "$out/sql_bench.log" 2>&1
  tail -n 22 "$out/sql_bench.log"
fi

if [ -f /tmp/gpusort-pg.log ]; then
  # the benchmark server's log: no process may have died
  if grep -q "terminated by signal" /tmp/gpusort-pg.log; then
    grep "terminated by signal" /tmp/gpusort-pg.log
    record "benchmark server log" "a process terminated by a signal: FAILED"
  else
    record "benchmark server log" "clean"
  fi
fi

step "summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
if [ "${GPUSORT_PACK:-0}" = 1 ]; then
  tar czf /tmp/gpusort-run.tar.gz -C "$out" --exclude summary.txt . &&
    find "$out" -mindepth 1 ! -name summary.txt -delete &&
    mv /tmp/gpusort-run.tar.gz "$out/run.tar.gz"
fi
