-- One key of bench/key_types_words_ab.sql (:key; with :parallel set, 4MB
-- and 8 workers, else 64MB and none): bench/key_types_cell.sql with
-- GpuSort three times and its steps timed.
\set q 'SELECT count(*) FROM (SELECT * FROM kt_bench ORDER BY ' :key ' OFFSET 0) s'
\set timed 1
\set thrice 1
\if :{?parallel}
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 8;
\else
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 0;
\endif
\echo === key :key
\ir key_types_cell.sql
