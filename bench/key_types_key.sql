-- bench/key_types_*.sql's cells for one key (:key) of :table (kt_bench
-- unless set): each work_mem and
-- worker count, the floor, PostgreSQL's sort, GpuSort.
\if :{?table}
\else
\set table kt_bench
\endif
\set q 'SELECT count(*) FROM (SELECT * FROM ' :table ' ORDER BY ' :key ' OFFSET 0) s'
\set floor 'SELECT count(*) FROM (SELECT * FROM ' :table ' OFFSET 0) s'
\echo === key :key
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 0;
\ir key_types_cell.sql
SET max_parallel_workers_per_gather = 8;
\ir key_types_cell.sql
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 0;
\ir key_types_cell.sql
SET max_parallel_workers_per_gather = 8;
\ir key_types_cell.sql
