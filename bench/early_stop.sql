-- A LIMIT the parallel GpuSort cannot see (above a subquery's scan): the
-- leader stops reading after 5 rows. Times gpusort with the workers' range
-- merge (gpusort.parallel_merge on), with the leader merging alone (off),
-- and PostgreSQL's own plan, three times each, per cell (work_mem and
-- workers, bench/early_stop_cell.sql), on the t of bench/sql_matrix.sh.
--   bench/device_run.sh sql bench/early_stop.sql
-- The planner leaves such a query to PostgreSQL where the outer LIMIT is
-- small (planner.c, outer_limit_favours_postgres), so gpusort.min_rows = 0
-- forces GpuSort here: this measures how soon its workers stop.
\timing on
SET gpusort.min_rows = 0;
SELECT count(*) AS rows_in_t FROM t;
\set q 'SELECT count(*) FROM (SELECT * FROM (SELECT * FROM t ORDER BY k OFFSET 0) s LIMIT 5) x'
SET enable_gathermerge = off;
SET work_mem = '4MB';
SET max_parallel_workers_per_gather = 2;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
\set cell '4MB 2 workers'
\ir early_stop_cell.sql
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 8;
\set cell '64MB 8 workers'
\ir early_stop_cell.sql
