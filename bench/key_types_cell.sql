-- One cell of bench/key_types_*.sql: the floor, PostgreSQL's sort, GpuSort
-- (the EXPLAIN ANALYZE is GpuSort's second run).
SHOW work_mem;
SHOW max_parallel_workers_per_gather;
\echo floor
:floor;
\echo postgresql
SET gpusort.enabled = off;
:q;
\echo gpusort
SET gpusort.enabled = on;
:q;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
