-- One cell of bench/key_types.sql: the floor, PostgreSQL's sort, GpuSort.
SHOW work_mem;
SHOW max_parallel_workers_per_gather;
\echo floor
:floor;
:floor;
\echo postgresql
SET gpusort.enabled = off;
:q;
:q;
\echo gpusort
SET gpusort.enabled = on;
:q;
:q;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
