#!/usr/bin/env bash
# Runs a tree built on this machine on the workplace's GPU machine, where
# building the kernels would spend minutes of device time.
#
# Here, after building for the H100 (make ... CUDA_ARCH_FLAGS="-gencode
# arch=compute_90,code=sm_90"), with ../shared/device copied to .device-carry:
#
#   bench/device_run.sh pack          # the built files into $BUILD
#
# There (the device tool's run, carry [".device-carry"]), from the root:
#
#   bench/device_run.sh tests         # unit tests driving the GPU, then
#                                     # test/run_tests.sh with gpusort.device = gpu
#   bench/device_run.sh matrix        # bench/sql_matrix.sh (ROWS, WORK_MEMS,
#                                     # WORKERS, SHAPES, REPEAT, REUSE_TABLE)
#   bench/device_run.sh sites         # bench/sort_sites_bench.sh: issue #45's
#                                     # cells (ROWS, U_ROWS, N_GROUPS, WORK_MEMS,
#                                     # SHAPES, REPEAT, WORKERS, FORCE, REUSE_TABLE)
#   bench/device_run.sh sql FILE      # psql -f FILE (PSQL_ARGS: more of psql's
#                                     # arguments, such as -v NAME=VALUE)
#   bench/device_run.sh chaos         # test/service/chaos.sh on the GPU, for
#                                     # GPUSORT_CHAOS_SECONDS (600), in the
#                                     # background: it outlives the call
#   bench/device_run.sh chaos-wait    # waits for it, its logs to $OUT
#   bench/device_run.sh quantile      # the quantile mode (issue 46): kernels
#                                     # against CUB at 2^24 and 2^26, rank
#                                     # quality at QUANTILE_SIZES (10M), the
#                                     # ORDER BY ... LIMIT opt-in against the
#                                     # exact GpuSort at QUANTILE_ROWS (10M);
#                                     # CSVs and logs to $OUT; QUANTILE_STEPS
#                                     # (default "kernels quality limit"),
#                                     # QUANTILE_LOGS the kernels' sizes
#                                     # (default "24 26")
#                                     # picks some (100M: QUANTILE_STEPS=quality
#                                     # QUANTILE_SIZES=100000000 QUANTILE_REPS=1)
#
# Each mode installs the built files into the portable PostgreSQL of
# .device-carry/pg-on-gpu.sh, starts that server with gpusort preloaded (so
# the GPU service runs; MWP sets max_worker_processes) and waits for the
# service's GPU, and ends by checking the server log for processes
# terminated by a signal. Logs and CSVs go to $OUT. BUILD names the packed
# build (default .device-carry/build.tgz, build-18.tgz for 18): keep an
# earlier one under another name to compare two builds in one run.
#
# PostgreSQL 18: PG_MAJOR=18 for every step, here and there. Here, build
# against the portable 18 (the objects are the server's: make compiles them
# again when pg_config names another major), then pack:
#
#   tar xJf ../shared/device/pg18-portable.tar.xz -C /tmp
#   make clean && make -j2 PG_CONFIG=/tmp/gpusort-pg18/bin/pg_config \
#     CUDA_ARCH_FLAGS="-gencode arch=compute_90,code=sm_90"
#   PG_MAJOR=18 bench/device_run.sh pack
#
# and there: PG_MAJOR=18 bench/device_run.sh tests (pg-on-gpu.sh then
# starts the 18 server and installs build-18.tgz; a server refuses a
# gpusort.so built for the other major at LOAD: "incompatible library").
set -uo pipefail
mode=${1:?usage: bench/device_run.sh pack|tests|matrix|sites|sql FILE}
major=${PG_MAJOR:-15}
export PG_MAJOR=$major
if [ "$major" = 15 ]; then
  build=${BUILD:-.device-carry/build.tgz}
else
  build=${BUILD:-.device-carry/build-$major.tgz}
fi
# (.pg_build_stamp: without it, make there would find every object older
# than a fresh stamp and compile gpusort.so again from the copy's sources)
built="gpusort.so service/gpusort-gpud test/unit/test_engine kernels/*.o src/*.o engine/*.o service/*.o .pg_build_stamp"
# the benchmarks' programs, where they were built (make bench/bench_kernels
# bench/quantile_quality)
for program in bench/bench_kernels bench/quantile_quality; do
  [ -x "$program" ] && built="$built $program"
done

if [ "$mode" = pack ]; then
  # shellcheck disable=SC2086
  tar czf "$build" $built && ls -l "$build"
  exit
fi

OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

if [ "$mode" = chaos-wait ]; then
  while pgrep -f "test/service/chaos.sh" > /dev/null; do sleep 2; done
  cp /tmp/gpusort-chaos.log /tmp/gpusort-chaos-server.log "$OUT/" 2>/dev/null
  grep -v -E "^  [0-9:]+ " /tmp/gpusort-chaos.log | tail -n 30
  echo "disturbances: $(grep -c -E "^  [0-9:]+ " /tmp/gpusort-chaos.log)"
  exit
fi
# shellcheck disable=SC1091
source .device-carry/pg-on-gpu.sh > "$OUT/pg_setup.log" 2>&1
# the sources are older than the built files, so make installs without building
# (-c: a path git still lists but the copy lacks is not made, empty)
git ls-files -z 2>/dev/null | xargs -0 touch -c -d '2001-01-01 00:00' 2>/dev/null
tar xzf "$build"
make install PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes > "$OUT/install.log" 2>&1 ||
  tail -n 20 "$OUT/install.log"
chmod -R a+rwX .
grep -q "^shared_preload_libraries = 'gpusort'" "$PGDATA/postgresql.conf" ||
  echo "shared_preload_libraries = 'gpusort'" >> "$PGDATA/postgresql.conf"
[ -n "${MWP:-}" ] && echo "max_worker_processes = $MWP" >> "$PGDATA/postgresql.conf"
su pgrun -c "$PGROOT/bin/pg_ctl -D $PGDATA -l /tmp/gpusort-pg.log -w restart" > /dev/null
ready=0
for _ in $(seq 1 100); do
  ready=$(psql -Atc "SELECT count(*) FROM gpusort_info() WHERE name LIKE 'gpu%_state' AND value = 'ready'" 2>/dev/null)
  [ "$ready" = 1 ] && break
  psql -qc "CREATE EXTENSION IF NOT EXISTS gpusort" > /dev/null 2>&1
  sleep 0.2
done
echo "GPU service ready: ${ready:-0}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

case "$mode" in
  tests)
    test/unit/test_engine --gpu > "$OUT/unit_gpu.log" 2>&1
    tail -n 1 "$OUT/unit_gpu.log"
    GPUSORT_TEST_USER=pgrun GPUSORT_TEST_OPTIONS="-c gpusort.device=gpu" \
      GPUSORT_FUZZ_DEVICE=gpu GPUSORT_TEST_LOG_COPY="$OUT/server.log" PG_CONFIG="$PG_CONFIG" \
      GPUSORT_SERVICE_TEST=0 GPUSORT_CHAOS_SECONDS=0 timeout 480 test/run_tests.sh \
      > "$OUT/run_tests.log" 2>&1
    grep -E "^(test |==|fuzz|ok|not ok|[0-9]+ passed)|terminated by signal" "$OUT/run_tests.log" | tail -n 60
    [ -f regression.diffs ] && cp regression.diffs "$OUT/"
    ;;
  chaos)
    # a session of its own (setsid), so that it outlives this call
    setsid env GPUSORT_TEST_USER=pgrun GPUSORT_CHAOS_REAL_GPU=1 \
      GPUSORT_CHAOS_SECONDS="${GPUSORT_CHAOS_SECONDS:-600}" PG_CONFIG="$PG_CONFIG" \
      GPUSORT_KEEP_LOG=/tmp/gpusort-chaos-server.log \
      test/service/chaos.sh > /tmp/gpusort-chaos.log 2>&1 < /dev/null &
    echo "chaos test started (log: /tmp/gpusort-chaos.log)"
    ;;
  matrix)
    chown -R pgrun "$OUT"
    bench/sql_matrix.sh "$OUT/matrix" 2>&1 | tail -n 60
    ;;
  sites)
    chown -R pgrun "$OUT"
    bench/sort_sites_bench.sh "$OUT/sites" 2>&1 | tail -n 60
    ;;
  sql)
    # shellcheck disable=SC2086
    psql -X ${PSQL_ARGS:-} -f "${2:?usage: bench/device_run.sh sql FILE}" > "$OUT/sql.log" 2>&1
    tail -n 80 "$OUT/sql.log"
    ;;
  quantile)
    steps=" ${QUANTILE_STEPS:-kernels quality limit} "
    # 1. the kernels on device-resident keys: CUB / quantile per size
    [[ $steps == *" kernels "* ]] && for log in ${QUANTILE_LOGS:-24 26}; do
      bench/bench_kernels --csv "$OUT/quantile_kernels_2e$log.csv" --quantile \
        --min-log $log --max-log $log > "$OUT/quantile_kernels_2e$log.log" 2>&1
      grep -E "CUB / quantile|WRONG" "$OUT/quantile_kernels_2e$log.log"
    done
    # 2. rank quality and time host to host, both modes, against radix
    [[ $steps == *" quality "* ]] && bench/quantile_quality "$OUT/quantile_quality.csv" "${QUANTILE_SIZES:-10000000}" \
      "${QUANTILE_REPS:-3}" "${QUANTILE_INTERVALS:-1000,100000}" > "$OUT/quantile_quality.log" 2>&1
    [[ $steps == *" quality "* ]] && tail -n 1 "$OUT/quantile_quality.log"
    # 3. ORDER BY ... LIMIT: exact GpuSort, the width opt-in, the quantile
    # opt-in (and all rows, OFFSET past the end), REPEAT times each
    [[ $steps == *" limit "* ]] && bench/quantile_limit.sh "$OUT" "${QUANTILE_ROWS:-10000000}" 2>&1 | tail -n 20
    ;;
  *)
    echo "unknown mode: $mode" >&2
    exit 2
    ;;
esac
if grep -q "terminated by signal" /tmp/gpusort-pg.log; then
  echo "benchmark server: a process was terminated by a signal"
else
  echo "benchmark server log: no process terminated by a signal"
fi
cp /tmp/gpusort-pg.log "$OUT/bench_server.log"
