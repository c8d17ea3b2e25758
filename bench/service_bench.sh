#!/usr/bin/env bash
# The GPU service under many clients: pgbench running
#   SELECT * FROM t1m ORDER BY k OFFSET 1000000     (1M rows)
# with PostgreSQL's sort (gpusort.enabled = off) and with GpuSort through the
# GPU service on every GPU and on GPU 0 only, at 1, 32 and 128 clients, T
# seconds each (default 12), work_mem 256MB, parallel query at its default,
# on one throwaway server with gpusort preloaded; then new-connection
# latency (pgbench -C), the processes that hold a CUDA context, and kill -9
# of a gpusort-gpud under 32 clients. Run from the repository root on the
# workplace's GPU machine (PostgreSQL from .device-carry, see
# ../shared/device/README.md, and a built tree in .device-carry/build.tgz):
#   OUT=outdir bench/service_bench.sh
# Writes OUT/service_bench.csv (mode,clients,tps,latency_ms,failed).
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
source .device-carry/pg-on-gpu.sh > /dev/null 2>&1
su pgrun -c "pg_ctl -D $PGDATA -m fast stop" >/dev/null 2>&1
git ls-files -z | xargs -0 touch -d '2001-01-01 00:00'; tar xzf .device-carry/build.tgz
make install PG_CONFIG=$PG_CONFIG > $OUT/install_b.log 2>&1 || tail -3 $OUT/install_b.log
B=/tmp/bench15; rm -rf $B; mkdir -p $B; chown pgrun $B
su pgrun -c "$PGROOT/bin/initdb -D $B/data -A trust -U pgrun" > /dev/null
cat >> $B/data/postgresql.conf <<CONF
listen_addresses = ''
unix_socket_directories = '$B'
port = 5440
shared_preload_libraries = 'gpusort'
max_connections = 300
shared_buffers = '4GB'
CONF
export PGHOST=$B PGPORT=5440 PGUSER=pgrun PGDATABASE=postgres
restart() { su pgrun -c "$PGROOT/bin/pg_ctl -D $B/data -m fast stop" >/dev/null 2>&1
  su pgrun -c "$PGROOT/bin/pg_ctl -D $B/data -l $B/server.log -o \"-c gpusort.devices=$1\" -w start" >/dev/null
  for i in $(seq 1 100); do r=$(psql -Atc "select count(*) from gpusort_info() where name like 'gpu%_state' and value='ready'" 2>/dev/null); [ "$r" = "$2" ] && break; sleep 0.1; done
  echo "devices=$1: $r GPU(s) ready"; }
restart all 2
psql -q -c "create extension gpusort" -c "create table t1m as select (random()*1e9)::int k, g, g::int8 * 7 b, md5(g::text) pad from generate_series(1,1000000) g" -c "vacuum analyze t1m"
echo "SELECT * FROM t1m ORDER BY k OFFSET 1000000;" > $B/q.sql
echo "mode,clients,tps,latency_ms,failed" > $OUT/service_bench.csv
T=${T:-12}
bench() { # mode enabled
  for c in 1 32 128; do
    j=$(( c < 16 ? c : 16 ))
    PGOPTIONS="-c work_mem=256MB -c gpusort.enabled=$2" pgbench -n -f $B/q.sql -c $c -j $j -T $T > $B/pgb.log 2>&1
    tps=$(grep -oP "tps = \K[0-9.]+" $B/pgb.log | head -1); lat=$(grep -oP "latency average = \K[0-9.]+" $B/pgb.log)
    fl=$(grep -oP "number of failed transactions: \K[0-9]+" $B/pgb.log); ab=$(grep -c "aborted\|ERROR" $B/pgb.log)
    echo "$1,$c,$tps,$lat,${fl:-?}/$ab" | tee -a $OUT/service_bench.csv
  done; }
PGOPTIONS="-c work_mem=256MB" psql -c "explain select * from t1m order by k offset 1000000" > $OUT/plans.txt
PGOPTIONS="-c work_mem=256MB -c gpusort.enabled=off" psql -c "explain select * from t1m order by k offset 1000000" >> $OUT/plans.txt
cat $OUT/plans.txt | grep -E "GpuSort|Sort|Gather"
bench postgres off
( sleep 3; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > $OUT/cuda_processes.txt; ps -eo pid,comm | grep -c postgres >> $OUT/cuda_processes.txt ) &
bench gpusort_2gpus on
wait; echo "processes holding a CUDA context during the 32/128-client runs:"; cat $OUT/cuda_processes.txt
psql -c "select gpu, jobs, rows_sorted, queued_jobs, round(queue_wait_ms) qwait, fallbacks_queue_timeout fq, fallbacks_too_large ft, errors, restarts from gpusort_stats"
restart 0 1
bench gpusort_1gpu on
echo "== new connection per query (pgbench -C), 8 clients"
for en in off on; do PGOPTIONS="-c work_mem=256MB -c gpusort.enabled=$en" pgbench -n -C -f $B/q.sql -c 8 -j 8 -T 8 > $B/pgc.log 2>&1
  echo "enabled=$en: $(grep -E 'latency average|tps =' $B/pgc.log | tr '\n' ' ')" | tee -a $OUT/connect_latency.txt; done
echo "== kill -9 of gpusort-gpud under 32 clients (gpusort.device = auto)"
restart all 2
PGOPTIONS="-c work_mem=256MB" pgbench -n -f $B/q.sql -c 32 -j 16 -T 10 > $B/kill.log 2>&1 &
sleep 4; pid=$(psql -Atc "select value from gpusort_info() where name='gpu0_pid'"); kill -9 $pid; echo "killed gpusort-gpud pid $pid"
wait; grep -E "tps =|failed|aborted" $B/kill.log; grep -c "WARNING" $B/kill.log
sleep 1; psql -Atc "select name, value from gpusort_info() where name in ('gpu0_state','gpu0_restarts','gpu0_pid')"
grep -E "gpusort GPU service" $B/server.log | tail -4
grep -E "terminated by signal|reinitializing" $B/server.log && echo "SERVER LOG: a server process crashed" || echo "server log: no server process terminated by a signal"
cp $B/server.log $OUT/bench_server.log
