-- bench/key_types_ab.sql's two cells for one key (:key).
\set q 'SELECT count(*) FROM (SELECT * FROM kt_bench ORDER BY ' :key ' OFFSET 0) s'
\echo === key :key
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 0;
\ir key_types_cell.sql
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 8;
\ir key_types_cell.sql
