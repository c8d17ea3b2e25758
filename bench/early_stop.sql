-- A LIMIT the parallel GpuSort cannot see (above a subquery's scan): the
-- leader stops reading after 5 rows. Times gpusort with the workers' range
-- merge (gpusort.parallel_merge on), with the leader merging alone (off),
-- and PostgreSQL's own plan, three times each, on the t of bench/sql_matrix.sh.
--   bench/device_run.sh sql bench/early_stop.sql
-- The planner leaves such a query to PostgreSQL where the outer LIMIT is
-- small (planner.c, outer_limit_favours_postgres), so gpusort.min_rows = 0
-- forces GpuSort here: this measures how soon its workers stop.
\timing on
SET gpusort.min_rows = 0;
SET enable_gathermerge = off;	-- the parallel GpuSort's plan, not partial sorts
SELECT count(*) AS rows_in_t FROM t;
\set q 'SELECT count(*) FROM (SELECT * FROM (SELECT * FROM t ORDER BY k OFFSET 0) s LIMIT 5) x'
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
\echo 4MB 2 workers: ranges
:q; :q; :q;
SET gpusort.parallel_merge = off;
\echo 4MB 2 workers: leader alone
:q; :q; :q;
SET gpusort.enabled = off;
RESET enable_gathermerge;	-- PostgreSQL's own best plan
\echo 4MB 2 workers: PostgreSQL
:q; :q; :q;
RESET gpusort.enabled;
RESET gpusort.parallel_merge;
SET enable_gathermerge = off;
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 8;
\echo 64MB 8 workers: ranges
:q; :q; :q;
SET gpusort.parallel_merge = off;
\echo 64MB 8 workers: leader alone
:q; :q; :q;
SET gpusort.enabled = off;
RESET enable_gathermerge;
\echo 64MB 8 workers: PostgreSQL
:q; :q; :q;
