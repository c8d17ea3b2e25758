-- Two builds on issue #44's keys of several words (a uuid, a 32-char md5
-- under C): 64MB with no workers, and the uuid at 4MB with 8 workers,
-- three timed runs each and an EXPLAIN ANALYZE for GpuSort's steps. Run
-- once per build on one server, builds taking turns, PostgreSQL's own
-- sort in the first call only, e.g. on the GPU machine:
--   n=0; for b in base new base new base new; do n=$((n + 1)); \
--     BUILD=.device-carry/build-$b.tgz PSQL_ARGS="$([ $n = 1 ] || echo -v skip_pg=1)" \
--     OUT=$OUT/r$n-$b PG_MAJOR=18 MWP=8 bench/device_run.sh sql bench/key_types_words_ab.sql; done
\ir key_types_setup.sql
\set floor 'SELECT count(*) FROM (SELECT * FROM kt_bench OFFSET 0) s'
\set key 'u'
\ir key_types_words_ab_key.sql
\set key 'h COLLATE "C"'
\ir key_types_words_ab_key.sql
\set parallel 1
\set key 'u'
\ir key_types_words_ab_key.sql
