-- Two builds on issue #44's uuid and C text keys, in the cells where the
-- path's cost shows most: 64MB with no workers, 4MB with 8 workers. Run
-- once per build on one server, the builds swapped between runs (the
-- first run with PostgreSQL's sort, the later ones without it), e.g. on
-- the GPU machine:
--   n=0; for b in base new base new; do n=$((n + 1)); \
--     BUILD=.device-carry/build-$b.tgz PSQL_ARGS="$([ $n = 1 ] || echo -v skip_pg=1)" \
--     PG_MAJOR=18icu bench/device_run.sh sql bench/key_types_ab.sql; done
-- GpuSort's EXPLAIN ANALYZE times its steps (gather, sort, emit).
\ir key_types_setup.sql
\set timed 1
\set floor 'SELECT count(*) FROM (SELECT * FROM kt_bench OFFSET 0) s'
\set key 'u'
\ir key_types_ab_key.sql
\set key 'h COLLATE "C"'
\ir key_types_ab_key.sql
\set key 'name COLLATE "C"'
\ir key_types_ab_key.sql
