-- Issue #44's keys of several words, every cell: a uuid, and the md5 and
-- name-like texts under C, at work_mem 4MB and 64MB with 0 and 8 workers
-- (bench/key_types_key.sql), GpuSort three times a cell and its steps
-- timed (EXPLAIN ANALYZE):
--   PG_MAJOR=18 MWP=8 bench/device_run.sh sql bench/key_types_words.sql
\ir key_types_setup.sql
\set timed 1
\set thrice 1
\set key 'u'
\ir key_types_key.sql
\set key 'h COLLATE "C"'
\ir key_types_key.sql
\set key 'name COLLATE "C"'
\ir key_types_key.sql
