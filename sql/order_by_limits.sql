-- LIMIT forms over GpuSort, cached plans and parallel query: the bound and
-- the approximate opt-in are decided when the node runs, never baked into a
-- plan, and every LIMIT form gives PostgreSQL's rows. Each query is
-- compared with PostgreSQL's own sort (gpusort.enabled = off), planned anew.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_limits;  -- this file's tables and functions
SET search_path = order_by_limits, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;

-- ten rows for each value of thousand, as in PostgreSQL's onek
-- (created, then filled: PostgreSQL 18 extends a table being created
-- by CREATE TABLE AS by many pages at once, and its page count would differ)
CREATE TABLE tk (unique1 int, thousand int, k int);
INSERT INTO tk SELECT i, i % 1000, (i * 7919) % 10007
FROM generate_series(0, 9999) i;
ANALYZE tk;

-- rows(query): the query's rows as text, in order, run with GpuSort
-- (which it must use) and with PostgreSQL's sort; 'same' or what differs.
CREATE FUNCTION both_ways(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan text;
  used boolean := false;
  gpu text[];
  pg text[];
BEGIN
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    used := used OR plan LIKE '%GpuSort%';
  END LOOP;
  EXECUTE format('SELECT array(SELECT q::text FROM (%s) q)', query) INTO gpu;
  SET LOCAL gpusort.enabled = off;
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    IF plan LIKE '%GpuSort%' THEN RAISE EXCEPTION 'GpuSort used with gpusort.enabled = off'; END IF;
  END LOOP;
  EXECUTE format('SELECT array(SELECT q::text FROM (%s) q)', query) INTO pg;
  SET LOCAL gpusort.enabled = on;
  RETURN CASE WHEN NOT used THEN 'GpuSort not used'
              WHEN gpu IS DISTINCT FROM pg THEN format('differ: %s rows against %s: %s / %s',
                   cardinality(gpu), cardinality(pg), gpu[1:12], pg[1:12])
              ELSE 'same ' || cardinality(pg) || ' rows' END;
END $$;

-- FETCH FIRST ... WITH TIES: the Limit reads past its count, so the sort
-- below it must not be bounded by the count (PostgreSQL's limit test)
EXPLAIN (COSTS OFF)
SELECT thousand FROM tk WHERE thousand < 5 ORDER BY thousand FETCH FIRST 2 ROWS WITH TIES;
SELECT thousand FROM tk WHERE thousand < 5 ORDER BY thousand FETCH FIRST 2 ROWS WITH TIES;
SELECT q, both_ways(q) FROM (VALUES
  ('SELECT thousand FROM tk WHERE thousand < 5 ORDER BY thousand FETCH FIRST 2 ROWS WITH TIES'),
  ('SELECT thousand FROM tk ORDER BY thousand DESC FETCH FIRST 11 ROWS WITH TIES'),
  ('SELECT thousand FROM tk ORDER BY thousand OFFSET 15 ROWS FETCH FIRST 3 ROWS WITH TIES'),
  ('SELECT thousand, unique1 FROM tk ORDER BY thousand, unique1 FETCH FIRST 4 ROWS WITH TIES')
) v(q);

-- every other LIMIT form
SELECT q, both_ways(q) FROM (VALUES
  ('SELECT k FROM tk ORDER BY k LIMIT 7'),
  ('SELECT k FROM tk ORDER BY k LIMIT 5 OFFSET 9990'),
  ('SELECT k FROM tk ORDER BY k OFFSET 9995'),
  ('SELECT k FROM tk ORDER BY k DESC LIMIT ALL OFFSET 9996'),
  ('SELECT k FROM tk ORDER BY k LIMIT NULL OFFSET 9997'),
  ('SELECT k FROM tk ORDER BY k LIMIT 3 OFFSET NULL'),
  ('SELECT k FROM tk ORDER BY k LIMIT (SELECT 4)'),
  ('SELECT k FROM tk ORDER BY k LIMIT 2 + 1 OFFSET (SELECT 10)'),
  ('SELECT k FROM tk ORDER BY k FETCH FIRST 6 ROWS ONLY'),
  ('SELECT k FROM tk ORDER BY k LIMIT 0')
) v(q);
-- a volatile LIMIT is evaluated once, by the Limit: no bound below it
EXPLAIN (COSTS OFF) SELECT k FROM tk ORDER BY k LIMIT (random() * 0 + 3)::int;
SELECT both_ways('SELECT k FROM tk ORDER BY k LIMIT (random() * 0 + 3)::int') AS volatile_limit;
-- a set-returning function in the target list runs between the sort and
-- the Limit and turns one row into any number: no bound
SELECT both_ways('SELECT generate_series(1, k % 3) AS g, k FROM tk ORDER BY k LIMIT 5') AS srf_limit;
SELECT both_ways('SELECT unnest(ARRAY[]::int[]) AS none, k FROM tk ORDER BY k LIMIT 5') AS srf_empty;
-- a LIMIT from the outer query: each rescan evaluates it anew
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT both_ways('SELECT x, s.k FROM generate_series(1, 4) x,
  LATERAL (SELECT k FROM tk WHERE thousand < 50 ORDER BY k LIMIT x OFFSET x) s') AS lateral_limit;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- EXPLAIN shows the bound as the plan has it: a number for constants, the
-- LIMIT's expressions otherwise; under ANALYZE the value used
EXPLAIN (COSTS OFF) SELECT k FROM tk ORDER BY k LIMIT 10 OFFSET 5;
EXPLAIN (COSTS OFF) SELECT k FROM tk ORDER BY k LIMIT current_setting('my.n', true)::int;
EXPLAIN (COSTS OFF) SELECT k FROM tk ORDER BY k FETCH FIRST 2 ROWS WITH TIES;
EXPLAIN (COSTS OFF) SELECT k FROM tk ORDER BY k LIMIT ALL;

-- A generic plan keeps no stale bound: the LIMIT is evaluated when the
-- node runs, from the parameters and settings of that execution.
SET plan_cache_mode = force_generic_plan;
SET my.n = 3;
PREPARE by_setting AS SELECT k FROM tk ORDER BY k LIMIT current_setting('my.n')::int;
EXECUTE by_setting;
SET my.n = 7;
EXECUTE by_setting;
EXPLAIN (COSTS OFF) EXECUTE by_setting;
SELECT explain_stable('EXECUTE by_setting', 'ANALYZE') AS "QUERY PLAN";
PREPARE by_param(int, int) AS SELECT k FROM tk ORDER BY k DESC LIMIT $1 OFFSET $2;
EXPLAIN (COSTS OFF) EXECUTE by_param(2, 0);
EXECUTE by_param(2, 0);
EXECUTE by_param(5, 1);
EXECUTE by_param(NULL, 9997);
EXECUTE by_param(1, NULL);
-- the same statements with PostgreSQL's sort, for comparison
SET gpusort.enabled = off;
PREPARE pg_by_param(int, int) AS SELECT k FROM tk ORDER BY k DESC LIMIT $1 OFFSET $2;
SELECT array(SELECT 1) AS marker;
EXECUTE pg_by_param(5, 1);
EXECUTE pg_by_param(NULL, 9997);
SET gpusort.enabled = on;
RESET plan_cache_mode;
DEALLOCATE ALL;

-- The approximate opt-in is read when the node runs: a plan made while it
-- was on runs exactly once it is off, and the other way round.
CREATE TABLE rough AS SELECT i AS id, (i * 7919) % 10007 AS k FROM generate_series(1, 20000) i;
ANALYZE rough;
SET gpusort.approximate_intervals = 3;
PREPARE top8 AS SELECT k FROM rough ORDER BY k LIMIT 8;
EXPLAIN (COSTS OFF) EXECUTE top8;
CREATE TABLE approx_top8 AS EXECUTE top8;
-- roughly: eight values from the first of three intervals
SELECT count(*) AS rows, bool_and(k < 10007 / 3 + 1) AS first_interval FROM approx_top8;
RESET gpusort.approximate_intervals;
EXPLAIN (COSTS OFF) EXECUTE top8;
EXECUTE top8;
SET gpusort.approximate_intervals = 3;
EXPLAIN (COSTS OFF) EXECUTE top8;
RESET gpusort.approximate_intervals;
DEALLOCATE top8;
-- Only the statement the client sent is approximated: a query run inside
-- another (a function's; a subplan Citus runs for the outer query) feeds a
-- result the guarantee would have to be about. PL/pgSQL caches its plans
-- for the session: a generic plan from a call made while the opt-in was on
-- is exact there and stays exact after it.
CREATE FUNCTION top_rough(n int) RETURNS SETOF int LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT k FROM rough ORDER BY k LIMIT n;
END $$;
SET plan_cache_mode = force_generic_plan;
SET gpusort.approximate_intervals = 3;
SELECT count(*) AS rows,
  array(SELECT top_rough(8)) = array(SELECT k FROM rough ORDER BY k LIMIT 8) AS exact_in_a_function
FROM top_rough(8) k;
RESET gpusort.approximate_intervals;
SELECT array(SELECT top_rough(8)) AS exact_again;
SELECT array(SELECT k FROM rough ORDER BY k LIMIT 8) AS expected;
RESET plan_cache_mode;

-- Parallel query on (PostgreSQL's default): gpusort.min_rows = 0 and the
-- approximate opt-in still give GpuSort, not Gather Merge over a Sort; the
-- approximate order never feeds a Gather Merge. Parallel costs at zero
-- make parallel plans on a small table.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT k FROM rough ORDER BY k LIMIT 10;
SELECT both_ways('SELECT k, id FROM rough ORDER BY k, id LIMIT 10') AS parallel_limit;
SELECT both_ways('SELECT k, id FROM rough WHERE id % 3 = 0 ORDER BY k DESC, id') AS parallel_full;
-- a full sort: Gather Merge over partial GpuSorts, each process sorting its
-- share; the same again with NULLs, several keys and an int8 key
EXPLAIN (COSTS OFF) SELECT k, id FROM rough WHERE id % 3 = 0 ORDER BY k DESC, id;
CREATE TABLE rough_nulls AS
  SELECT id, CASE WHEN id % 11 = 0 THEN NULL ELSE k END AS k, (k::int8 * 1000003) % 977 AS b
  FROM rough;
ANALYZE rough_nulls;
SELECT both_ways('SELECT k, b, id FROM rough_nulls ORDER BY k NULLS FIRST, b DESC, id')
  AS parallel_partial_nulls;
SELECT both_ways('SELECT b, id FROM rough_nulls ORDER BY b, id') AS parallel_partial_int8;
SET gpusort.approximate_intervals = 1000;
EXPLAIN (COSTS OFF) SELECT k FROM rough ORDER BY k LIMIT 10;
RESET gpusort.approximate_intervals;
-- a presorted input path that the ordered rel rejected is freed by
-- PostgreSQL, though the input rel still points at it: GpuSort must read
-- another (this planned into freed memory and crashed the backend)
CREATE TABLE few AS SELECT i AS id, (i * 7) % 13 AS v FROM generate_series(1, 15) i;
ANALYZE few;
SET enable_hashjoin = off;
SELECT both_ways('SELECT f.v, r.id FROM few f JOIN rough r ON r.id = f.id ORDER BY f.v, r.id')
  AS presorted_input_freed;
SELECT count(*) FROM (SELECT f.v, r.k FROM few f JOIN rough r ON r.id = f.id ORDER BY f.v) s;
RESET enable_hashjoin;
-- Under a LIMIT each process's GpuSort keeps the best LIMIT + OFFSET rows
-- of its share, and Gather Merge reads the top of those: keys with ties,
-- DESC, NULLs, an int8 key, OFFSET, and a bound past the rows there are.
SELECT q, both_ways(q) FROM (VALUES
  ('SELECT k, id FROM rough ORDER BY k DESC, id LIMIT 25 OFFSET 7'),
  ('SELECT k, b, id FROM rough_nulls ORDER BY k NULLS FIRST, b DESC, id LIMIT 40'),
  ('SELECT b, id FROM rough_nulls ORDER BY b DESC, id LIMIT 30 OFFSET 19950'),
  ('SELECT k, id FROM rough WHERE id % 5 = 0 ORDER BY k, id LIMIT 5000'),
  ('SELECT id % 7 AS r, k, id FROM rough ORDER BY id % 7, k, id LIMIT 3 OFFSET 2')
) v(q);
-- The bound of a generic plan: each process evaluates $1 and $2 itself.
-- An initplan's output is not theirs to evaluate: no bound below the
-- Gather Merge then, and the Limit above keeps its rows.
SET plan_cache_mode = force_generic_plan;
PREPARE par_top(int, int) AS SELECT k, id FROM rough ORDER BY k, id LIMIT $1 OFFSET $2;
EXPLAIN (COSTS OFF) EXECUTE par_top(6, 3);
EXECUTE par_top(6, 3);
EXECUTE par_top(4, 19990);
-- with no Gather Merge, the parallel sort under the generic LIMIT: its
-- shares and merge are unbounded (the Limit above cuts)
SET enable_gathermerge = off;
PREPARE par_top_merged(int, int) AS SELECT k, id FROM rough ORDER BY k, id LIMIT $1 OFFSET $2;
EXPLAIN (COSTS OFF) EXECUTE par_top_merged(6, 3);
EXECUTE par_top_merged(6, 3);
EXECUTE par_top_merged(4, 19990);
RESET enable_gathermerge;
CREATE FUNCTION top_par(n int, skip int) RETURNS SETOF rough LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT * FROM rough ORDER BY k DESC, id LIMIT n OFFSET skip;
END $$;
SELECT array(SELECT top_par(12, 100)) AS gpusort_generic \gset
SET gpusort.enabled = off;
DISCARD PLANS;
SELECT array(SELECT top_par(12, 100)) = :'gpusort_generic' AS same_as_postgresql;
SELECT k, id FROM rough ORDER BY k, id LIMIT 6 OFFSET 3;
SELECT k, id FROM rough ORDER BY k, id LIMIT 4 OFFSET 19990;
RESET gpusort.enabled;
RESET plan_cache_mode;
SELECT explain_stable('SELECT k, id FROM rough ORDER BY k, id LIMIT (SELECT 5)') AS "QUERY PLAN";
SELECT both_ways('SELECT k, id FROM rough ORDER BY k, id LIMIT (SELECT 5)') AS initplan_limit;
-- A LIMIT or OFFSET that is also an output column ($1 AS n ... LIMIT $1,
-- a LATERAL reference in both, a SQL function's argument): the plan's
-- bound names that column of the sort's input, and evaluating it before
-- any row was read crashed the backend. Parallel (Gather Merge), then
-- serial (a LATERAL LIMIT is evaluated above the Gather, so PostgreSQL's
-- Sort wins there), each against PostgreSQL's rows.
SET plan_cache_mode = force_generic_plan;
PREPARE limit_in_output(bigint, bigint) AS
  SELECT $1 AS n, $1 + $2 AS m, k, id FROM rough ORDER BY k, id LIMIT $1 OFFSET $1 + $2;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE limit_in_output(4, 2);
EXECUTE limit_in_output(4, 2);
CREATE FUNCTION top_keys(n int) RETURNS SETOF int8 LANGUAGE sql AS
  'SELECT n::int8 + k FROM rough ORDER BY k, id LIMIT n';
SELECT array(SELECT top_keys(5)) AS gpusort_sql_function \gset
RESET plan_cache_mode;
SET max_parallel_workers_per_gather = 0;
SELECT q, both_ways(q) FROM (VALUES
  ('SELECT o.n, s.* FROM (VALUES (2::int8), (5), (0)) o(n) CROSS JOIN LATERAL
     (SELECT o.n AS m, k, id FROM rough ORDER BY k DESC, id LIMIT o.n OFFSET o.n) s')
) v(q);
SET plan_cache_mode = force_generic_plan;
PREPARE limit_in_output_serial(bigint) AS
  SELECT $1 AS n, k, id FROM rough ORDER BY k, id LIMIT $1;
EXPLAIN (COSTS OFF) EXECUTE limit_in_output_serial(3);
EXECUTE limit_in_output_serial(3);
RESET plan_cache_mode;
SET gpusort.enabled = off;
SELECT array(SELECT top_keys(5)) = :'gpusort_sql_function' AS same_as_postgresql;
SELECT 4 AS n, 4 + 2 AS m, k, id FROM rough ORDER BY k, id LIMIT 4 OFFSET 6;
SELECT 3 AS n, k, id FROM rough ORDER BY k, id LIMIT 3;
RESET gpusort.enabled;
RESET max_parallel_workers_per_gather;
SET max_parallel_workers_per_gather = 2;
SET gpusort.min_rows = 1000000000;
-- with the cost model deciding, whatever it picks is right
SELECT both_ways('SELECT k, id FROM rough ORDER BY k, id LIMIT 10') IN
  ('same 10 rows', 'GpuSort not used') AS cost_based;
RESET gpusort.min_rows;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
RESET gpusort.gpu_min_elements;
RESET gpusort.explain_details;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA order_by_limits CASCADE;
RESET client_min_messages;
