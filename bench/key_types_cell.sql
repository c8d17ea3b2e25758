-- One cell of bench/key_types_*.sql: the floor, PostgreSQL's sort, GpuSort
-- (the EXPLAIN ANALYZE is GpuSort's second run). With skip_pg set
-- (\set skip_pg 1), PostgreSQL's sort is left out (a second build's round
-- in an A/B); with timed set, the EXPLAIN ANALYZE times GpuSort's steps;
-- with thrice set, GpuSort runs three times before it.
SHOW work_mem;
SHOW max_parallel_workers_per_gather;
\echo floor
:floor;
\if :{?skip_pg}
\else
\echo postgresql
SET gpusort.enabled = off;
:q;
\endif
\echo gpusort
SET gpusort.enabled = on;
:q;
\if :{?thrice}
:q;
:q;
\endif
\if :{?timed}
EXPLAIN (ANALYZE, COSTS OFF) :q;
\else
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
\endif
