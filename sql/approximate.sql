-- Approximate ORDER BY (opt-in): rows in interval order over the key's
-- observed [min, max]; within an interval, any order.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA approximate;  -- this file's tables and functions
SET search_path = approximate, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
SELECT setseed(0.5);  -- the same test data every run
SET gpusort.gpu_min_elements = 0;
SET work_mem = '64MB';
CREATE TABLE scores AS
SELECT i AS id,
  CASE WHEN i % 50 = 0 THEN NULL ELSE (random() * 1000000)::int END AS score,
  ((random() + random() + random() + random()) * 250000)::bigint AS gauss
FROM generate_series(1, 50000) i;
ANALYZE scores;

-- without the opt-in nothing is approximated
SET gpusort.min_rows = 0;
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score LIMIT 10;

SET gpusort.approximate_intervals = 1000;
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score;
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score DESC LIMIT 100;
-- the opt-in applies even when the cost model would not pick GpuSort
RESET gpusort.min_rows;
EXPLAIN (COSTS OFF) SELECT id FROM scores ORDER BY gauss LIMIT 5;
SET gpusort.min_rows = 0;
-- ... but never where exact order matters below the top level, nor for
-- several keys or non-integer keys: there GpuSort (or Sort) stays exact
EXPLAIN (COSTS OFF) SELECT * FROM (SELECT * FROM scores ORDER BY score LIMIT 100) s;
EXPLAIN (COSTS OFF) WITH top AS MATERIALIZED (SELECT * FROM scores ORDER BY score LIMIT 100) SELECT * FROM top;
SELECT explain_stable('SELECT id, rank() OVER (ORDER BY score) FROM scores') AS "QUERY PLAN";
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score, id LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score::float8 LIMIT 5;
EXPLAIN (COSTS OFF) SELECT DISTINCT score FROM scores ORDER BY score LIMIT 5;
EXPLAIN (COSTS OFF) SELECT * FROM scores s1 JOIN (SELECT * FROM scores ORDER BY gauss LIMIT 10) s2 USING (id) ORDER BY s1.score;
-- ... nor in a shard query a Citus coordinator sent (it feeds the
-- coordinator's merge; the guarantee is about the whole result)
SET application_name = 'citus_internal gpid=10000000001';
EXPLAIN (COSTS OFF) SELECT * FROM scores ORDER BY score LIMIT 5;
RESET application_name;

-- The guarantee, checked on the output. check_order(query, intervals,
-- descending, limit): the output holds the right number of rows; NULLs sit
-- where ORDER BY puts them; any two values out of order differ by less than
-- one interval width, (max - min + 1) / intervals over the whole column;
-- with a LIMIT, every row is within one width of the exact top-n boundary.
-- The sort's output comes from a CREATE TABLE AS that the client sent
-- (\gexec below): one run inside the function would be nested, hence
-- exact. It keeps the output order, which row_number() over it reads.
CREATE FUNCTION output_table(col text, descending boolean, lim int, tab text DEFAULT 'scores')
RETURNS text LANGUAGE sql AS $$
  SELECT format('out_%s_%s_%s_%s', tab, col, CASE WHEN descending THEN 'desc' ELSE 'asc' END,
                coalesce(lim::text, 'all'))
$$;
CREATE FUNCTION sort_into_table(col text, descending boolean, lim int, tab text DEFAULT 'scores')
RETURNS text LANGUAGE sql AS $$
  SELECT format('CREATE TABLE %I AS SELECT %I AS v FROM %I ORDER BY %2$I %4$s %5$s',
                output_table(col, descending, lim, tab), col, tab,
                CASE WHEN descending THEN 'DESC' ELSE '' END,
                CASE WHEN lim IS NULL THEN '' ELSE 'LIMIT ' || lim END)
$$;
CREATE FUNCTION check_order(col text, intervals int, descending boolean, lim int, tab text DEFAULT 'scores') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  width numeric;
  worst numeric;
  beyond numeric;
  got bigint;
  expected bigint;
  nulls_ok boolean;
  boundary numeric;
  nulls bigint;
  missing bigint;
  extra bigint;
BEGIN
  EXECUTE format('SELECT count(*) - count(%s) FROM %s', col, tab) INTO nulls;
  EXECUTE format('SELECT (max(%1$s) - min(%1$s) + 1)::numeric / %2$s, count(*) FROM %3$s', col, intervals, tab)
    INTO width, expected;
  IF lim IS NOT NULL THEN expected := least(expected, lim); END IF;
  EXECUTE format('CREATE TEMP TABLE approx_out AS SELECT row_number() OVER (ORDER BY ctid) AS pos, v FROM %I',
                 output_table(col, descending, lim, tab));
  EXECUTE format('DROP TABLE %I', output_table(col, descending, lim, tab));
  SELECT count(*) INTO got FROM approx_out;
  -- a permutation of the input (of a part of it, under a LIMIT)
  EXECUTE format('SELECT count(*) FROM (SELECT v FROM approx_out EXCEPT ALL SELECT %1$s FROM %2$s) d',
                 col, tab) INTO extra;
  EXECUTE format('SELECT count(*) FROM (SELECT %1$s FROM %2$s EXCEPT ALL SELECT v FROM approx_out) d',
                 col, tab) INTO missing;
  -- NULLs last ascending, first descending, as ORDER BY does
  SELECT coalesce(bool_and((v IS NULL) = CASE WHEN descending THEN pos <= n ELSE pos > got - n END), true)
    INTO nulls_ok FROM approx_out, (SELECT count(*) - count(v) AS n FROM approx_out) c;
  SELECT coalesce(max(abs(run - v)), 0) INTO worst FROM
    (SELECT v, CASE WHEN descending THEN min(v) OVER w ELSE max(v) OVER w END AS run
     FROM approx_out WHERE v IS NOT NULL WINDOW w AS (ORDER BY pos)) r;
  beyond := 0;
  IF lim IS NOT NULL THEN
    SET LOCAL gpusort.approximate_intervals = 0;
    EXECUTE format('SELECT %1$s FROM %4$s WHERE %1$s IS NOT NULL ORDER BY %1$s %2$s OFFSET %3$s LIMIT 1', col,
                   CASE WHEN descending THEN 'DESC' ELSE '' END,
                   greatest(lim - 1 - CASE WHEN descending THEN nulls ELSE 0 END, 0), tab)
      INTO boundary;
    SET LOCAL gpusort.approximate_intervals = 1000;
    SELECT coalesce(max(CASE WHEN descending THEN boundary - v ELSE v - boundary END), 0) INTO beyond
      FROM approx_out WHERE v IS NOT NULL;
  END IF;
  DROP TABLE approx_out;
  RETURN format('%s rows%s, %s, nulls %s, inversions %s, past the boundary %s',
                got, CASE WHEN got = expected THEN '' ELSE ' (expected ' || expected || ')' END,
                CASE WHEN extra > 0 THEN extra || ' rows not in the input'
                     WHEN lim IS NULL AND missing > 0 THEN missing || ' input rows missing'
                     WHEN lim IS NULL THEN 'a permutation' ELSE 'from the input' END,
                CASE WHEN nulls_ok THEN 'placed' ELSE 'misplaced' END,
                CASE WHEN worst < width THEN 'within a width' ELSE 'TOO WIDE' END,
                CASE WHEN beyond < width THEN 'within a width' ELSE 'TOO FAR' END);
END $$;
SELECT sort_into_table(col, descending, lim)
FROM unnest(ARRAY['score', 'gauss']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 100, 2500]) lim \gexec
SELECT col, descending, lim, check_order(col, 1000, descending, lim)
FROM unnest(ARRAY['score', 'gauss']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 100, 2500]) lim
ORDER BY col, descending, lim NULLS FIRST;

-- a larger input, where a bounded approximate sort keeps only candidate
-- rows while reading (the intervals still span the whole input)
-- (created, then filled: PostgreSQL 18 extends a table being created
-- by CREATE TABLE AS by many pages at once, and its page count would differ)
CREATE TABLE many (v int);
INSERT INTO many SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE (random() * 1e7)::int END
FROM generate_series(1, 200000) i;
ANALYZE many;
SELECT sort_into_table('v', descending, lim, 'many')
FROM unnest(ARRAY[false, true]) descending, unnest(ARRAY[1, 100, 5000]) lim \gexec
SELECT descending, lim, check_order('v', 1000, descending, lim, 'many')
FROM unnest(ARRAY[false, true]) descending, unnest(ARRAY[1, 100, 5000]) lim
ORDER BY descending, lim;
SET gpusort.explain_details = off;
-- (not through explain_stable(): the opt-in is the client's own query's
-- only. The same output on 15 and 18: buffers off, and 18's actual rows,
-- "100.00", through sed as 15 prints them, unaligned as the widths differ)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT * FROM many ORDER BY v LIMIT 100 \g (format=unaligned) |sed -E 's/(rows=[0-9]+)\.00 /\1 /'
RESET gpusort.explain_details;

-- it really is approximate: with few intervals the order is not exact
SET gpusort.approximate_intervals = 3;
CREATE TABLE rough AS SELECT gauss FROM scores ORDER BY gauss;
SELECT count(*) FILTER (WHERE v < prev) > 0 AS some_inversions
FROM (SELECT gauss AS v, lag(gauss) OVER (ORDER BY ctid) AS prev FROM rough) s;
SELECT NOT EXISTS (SELECT gauss FROM rough EXCEPT ALL SELECT gauss FROM scores)
   AND NOT EXISTS (SELECT gauss FROM scores EXCEPT ALL SELECT gauss FROM rough) AS a_permutation;
-- but only the statement the client sent: a DO block's query (run at the
-- same executor depth) sorts exactly
DO $$ BEGIN CREATE TABLE rough_in_do AS SELECT gauss FROM scores ORDER BY gauss; END $$;
SELECT count(*) FILTER (WHERE v < prev) = 0 AS exact_in_do, count(*) AS rows
FROM (SELECT gauss AS v, lag(gauss) OVER (ORDER BY ctid) AS prev FROM rough_in_do) s;
-- nor a function's folded into a constant while the plan is made, a
-- trigger's under COPY FROM or at commit, an event trigger's
CREATE FUNCTION inversions(tab text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FILTER (WHERE v < prev) FROM (SELECT gauss AS v, '
                 'lag(gauss) OVER (ORDER BY ctid) AS prev FROM %I) s', tab) INTO n;
  RETURN n;
END $$;
CREATE FUNCTION folded_inversions() RETURNS bigint IMMUTABLE LANGUAGE plpgsql AS $$
DECLARE prev int; n bigint := 0; r record;
BEGIN
  FOR r IN SELECT gauss FROM scores ORDER BY gauss LOOP
    IF r.gauss < prev THEN n := n + 1; END IF;
    prev := coalesce(r.gauss, prev);
  END LOOP;
  RETURN n;
END $$;
SELECT folded_inversions() AS folded_at_plan_time;
CREATE TABLE fired(a int);
CREATE FUNCTION sort_in_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE %I AS SELECT gauss FROM scores ORDER BY gauss', TG_ARGV[0]);
  RETURN NULL;
END $$;
CREATE TRIGGER on_copy AFTER INSERT ON fired FOR EACH ROW EXECUTE FUNCTION sort_in_trigger('by_copy');
COPY fired FROM STDIN;
1
\.
DROP TRIGGER on_copy ON fired;
CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON fired DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION sort_in_trigger('at_commit');
INSERT INTO fired VALUES (2);
DROP TRIGGER at_commit ON fired;
CREATE FUNCTION sort_in_event_trigger() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('by_event_trigger') IS NULL THEN
    CREATE TABLE by_event_trigger AS SELECT gauss FROM scores ORDER BY gauss;
  END IF;
END $$;
CREATE EVENT TRIGGER approximate_test ON ddl_command_end WHEN TAG IN ('CREATE TABLE AS')
  EXECUTE FUNCTION sort_in_event_trigger();
CREATE TABLE by_client AS SELECT gauss FROM scores ORDER BY gauss;
DROP EVENT TRIGGER approximate_test;
SELECT inversions('by_copy') AS copy_trigger, inversions('at_commit') AS commit_trigger,
  inversions('by_event_trigger') AS event_trigger, inversions('by_client') > 0 AS client_approximated;

-- EXPLAIN ANALYZE gives the interval width
SET gpusort.approximate_intervals = 1000;
SET gpusort.explain_details = off;
CREATE TABLE fixed (k int);  -- (not CREATE TABLE AS: see many)
INSERT INTO fixed SELECT i FROM generate_series(0, 9999) i;
ANALYZE fixed;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT * FROM fixed ORDER BY k LIMIT 25 \g (format=unaligned) |sed -E 's/(rows=[0-9]+)\.00 /\1 /'
CREATE TABLE top25 AS SELECT k FROM fixed ORDER BY k LIMIT 25;
SELECT count(*) AS rows, bool_and(k < 30) AS from_the_first_three_intervals,
  count(DISTINCT k) = 25 AS distinct_input_rows FROM top25;

-- The quantile mode: intervals at a sample's quantiles, so skewed keys
-- spread over all of them, and every row's position is within D of its
-- exact rank (README). D computed here from the README's formula, on its
-- own: sample s = min(256 m, n / 4), at least m, at most 2^24;
-- g = ceil(s / m); a = ln(n / 1e-6); mu = ((sqrt(2a) + sqrt(2a + 4g)) / 2)^2;
-- D = ceil(mu n / s) - 1, at most n - 1.
CREATE FUNCTION rank_bound(n bigint, m int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  s numeric := least(greatest(least(256::numeric * m, floor(n / 4.0)), m), 16777216);
  g numeric := ceil(s / m);
  a float8 := ln(n / 1e-6);
  mu float8 := ((sqrt(2 * a) + sqrt(2 * a + 4 * g)) / 2) ^ 2;
BEGIN
  IF n <= 1 THEN RETURN 0; END IF;
  RETURN least(ceil(mu * n / s) - 1, n - 1);
END $$;
-- Pareto-like integers (most rows tiny, a long tail), clustered floats,
-- and a few NULLs
CREATE TABLE skewed (id int, k int, f float8);
INSERT INTO skewed SELECT i,
  CASE WHEN i % 101 = 0 THEN NULL ELSE (1 / (random() ^ 2 + 1e-7))::int END,
  CASE WHEN i % 103 = 0 THEN NULL ELSE (i % 4) * 1e9 + random() END
FROM generate_series(1, 40000) i;
ANALYZE skewed;
-- check_ranks(col, intervals, descending, limit): the output (a table
-- written by a client statement, as above) is the input's rows (all of
-- them without a limit), NULLs where ORDER BY puts them, and every
-- non-NULL row's position among the non-NULL outputs is within D of its
-- exact rank (the nearest place its ties take); with a limit, it holds the
-- exact top limit - D rows (and the rows kept need not be all).
CREATE FUNCTION check_ranks(col text, intervals int, descending boolean, lim int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  nulls bigint;
  got bigint;
  extra bigint;
  missing bigint;
  nulls_ok boolean;
  worst bigint;
  bound bigint;
  sure bigint;
  covered bigint;
BEGIN
  EXECUTE format('SELECT count(%1$s), count(*) - count(%1$s) FROM skewed', col) INTO n, nulls;
  bound := rank_bound(n, intervals);
  EXECUTE format('CREATE TEMP TABLE ranks_out AS SELECT row_number() OVER (ORDER BY ctid) AS pos, v FROM %I',
                 output_table(col, descending, lim, 'skewed'));
  EXECUTE format('DROP TABLE %I', output_table(col, descending, lim, 'skewed'));
  SELECT count(*) INTO got FROM ranks_out;
  EXECUTE format('SELECT count(*) FROM (SELECT v FROM ranks_out EXCEPT ALL SELECT %s FROM skewed) d', col)
    INTO extra;
  EXECUTE format('SELECT count(*) FROM (SELECT %s FROM skewed EXCEPT ALL SELECT v FROM ranks_out) d', col)
    INTO missing;
  SELECT coalesce(bool_and((v IS NULL) = CASE WHEN descending THEN pos <= c.k ELSE pos > got - c.k END), true)
    INTO nulls_ok FROM ranks_out, (SELECT count(*) - count(v) AS k FROM ranks_out) c;
  -- exact rank ranges (first .. last, 0-based) of each value among the
  -- input's non-NULL values
  EXECUTE format('CREATE TEMP TABLE exact_ranks AS SELECT v, '
                 'sum(c) OVER (ORDER BY v %1$s) - c AS first, sum(c) OVER (ORDER BY v %1$s) - 1 AS last '
                 'FROM (SELECT %2$s AS v, count(*) AS c FROM skewed WHERE %2$s IS NOT NULL GROUP BY 1) d',
                 CASE WHEN descending THEN 'DESC' ELSE '' END, col);
  SELECT coalesce(max(greatest(e.first - o.p, o.p - e.last, 0)), 0) INTO worst
  FROM (SELECT row_number() OVER (ORDER BY pos) - 1 AS p, v FROM ranks_out WHERE v IS NOT NULL) o
  JOIN exact_ranks e USING (v);
  covered := NULL;
  sure := NULL;
  IF lim IS NOT NULL THEN
    -- the exact top lim - D non-NULL values (after the NULLs first, DESC)
    sure := greatest(lim - CASE WHEN descending THEN nulls ELSE 0 END - bound, 0);
    EXECUTE format('SELECT count(*) FROM (SELECT %1$s FROM (SELECT %1$s FROM skewed WHERE %1$s IS NOT NULL '
                   'ORDER BY %1$s %2$s LIMIT %3$s) t EXCEPT ALL SELECT v FROM ranks_out) d',
                   col, CASE WHEN descending THEN 'DESC' ELSE '' END, sure) INTO covered;
  END IF;
  DROP TABLE exact_ranks;
  DROP TABLE ranks_out;
  RETURN format('%s, nulls %s, %s',
                CASE WHEN extra > 0 THEN extra || ' rows not in the input'
                     WHEN lim IS NULL AND missing > 0 THEN missing || ' input rows missing'
                     WHEN lim IS NULL THEN 'a permutation'
                     WHEN got < lim THEN 'only ' || got || ' rows'
                     ELSE 'from the input' END,
                CASE WHEN nulls_ok THEN 'placed' ELSE 'misplaced' END,
                CASE WHEN lim IS NULL AND worst <= bound THEN 'rank error within the bound'
                     WHEN lim IS NULL THEN 'rank error PAST the bound'
                     WHEN covered = 0 THEN 'the exact top ' || sure || ' all returned'
                     ELSE covered || ' of the exact top ' || sure || ' MISSING' END);
END $$;
SET gpusort.approximate_mode = quantile;
SET gpusort.approximate_intervals = 100;
EXPLAIN (COSTS OFF) SELECT * FROM skewed ORDER BY k;
-- a float key is approximated too, in this mode only
EXPLAIN (COSTS OFF) SELECT * FROM skewed ORDER BY f DESC LIMIT 10;
SET gpusort.approximate_mode = width;
EXPLAIN (COSTS OFF) SELECT * FROM skewed ORDER BY f DESC LIMIT 10;
SET gpusort.approximate_mode = quantile;
SELECT sort_into_table(col, descending, lim, 'skewed')
FROM unnest(ARRAY['k', 'f']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 2000, 5000]) lim \gexec
SELECT col, descending, lim, check_ranks(col, 100, descending, lim)
FROM unnest(ARRAY['k', 'f']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 2000, 5000]) lim
ORDER BY col, descending, lim NULLS FIRST;
-- the equal widths on the same skewed key break that bound: the check can fail
SET gpusort.approximate_mode = width;
SELECT sort_into_table('k', false, NULL, 'skewed') \gexec
SELECT check_ranks('k', 100, false, NULL) AS width_mode_on_skewed_keys;
SET gpusort.approximate_mode = quantile;
-- EXPLAIN ANALYZE: the sample, the fullest interval (about n / intervals
-- rows: 2 * 100 - 1 buckets, the ties of the head value in one of their
-- own) and D (of the non-NULL rows), as computed here
SET gpusort.explain_details = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) SELECT * FROM skewed ORDER BY k \g (format=unaligned) |sed -E 's/(rows=[0-9]+)\.00 /\1 /'
SELECT rank_bound(count(k), 100) AS rank_bound FROM skewed;
RESET gpusort.explain_details;
-- arrays: gpu_approx_sort(..., mode => 'quantile'), integers and floats
CREATE TABLE array_ranks AS
SELECT v, row_number() OVER () - 1 AS pos
FROM unnest(gpu_approx_sort((SELECT array_agg(k ORDER BY id) FROM skewed WHERE k IS NOT NULL),
                            50, mode => 'quantile')) v;
SELECT count(*) AS elements,
  NOT EXISTS (SELECT v FROM array_ranks EXCEPT ALL SELECT k FROM skewed WHERE k IS NOT NULL)
  AND NOT EXISTS (SELECT k FROM skewed WHERE k IS NOT NULL EXCEPT ALL SELECT v FROM array_ranks) AS a_permutation,
  max(greatest(e.first - a.pos, a.pos - e.last, 0)) <= rank_bound(count(*), 50) AS within_the_bound
FROM array_ranks a JOIN (SELECT v, sum(c) OVER (ORDER BY v) - c AS first, sum(c) OVER (ORDER BY v) - 1 AS last
                         FROM (SELECT k AS v, count(*) AS c FROM skewed WHERE k IS NOT NULL GROUP BY 1) d) e USING (v);
-- (two intervals: NULLs first as DESC puts them, then the intervals in
-- order, any order within one)
SELECT gpu_approx_sort(ARRAY[2.5, -1, 'NaN', NULL, 0, '-Infinity']::float8[], 2, true, 'quantile') AS floats_desc;
SELECT gpu_approx_sort(ARRAY[3, 1, 2]::int4[], 1, mode => 'width') AS one_interval;
-- real too: every element back, each within the bound of its rank (D = n - 1
-- for so few: the check is the permutation)
SELECT array_agg(v ORDER BY v) = ARRAY[-2.5, 0, 0.25, 1, 7]::real[] AS reals_back
FROM unnest(gpu_approx_sort(ARRAY[1, 0.25, -2.5, 7, 0]::real[], 2, mode => 'quantile')) v;
-- the equal widths keep to integers; a mode that is neither is an error
SELECT gpu_approx_sort(ARRAY[2.5, 1]::float8[], 2, mode => 'width');
SELECT gpu_approx_sort(ARRAY[1, 2], 10, mode => 'median');
SELECT gpu_approx_sort(ARRAY[1, 2], 40000000, mode => 'quantile');
SELECT gpu_approx_sort(ARRAY[1, 2], 40000000) AS width_takes_more_intervals;
RESET gpusort.approximate_mode;

-- keys over the whole range of int8: a bounded result's check searches
-- from its last key up to the largest one (it once looped for ever here)
CREATE TABLE extremes AS
SELECT i AS id, (CASE i % 4 WHEN 0 THEN -9223372036854775808
                            WHEN 1 THEN 9223372036854775807
                            ELSE i * 1000003 END)::int8 AS k
FROM generate_series(1, 2000) i;
ANALYZE extremes;
SET gpusort.approximate_intervals = 100;
EXPLAIN (COSTS OFF) SELECT k FROM extremes ORDER BY k NULLS LAST LIMIT 3;
SELECT k, count(*) FROM (SELECT k FROM extremes ORDER BY k NULLS LAST LIMIT 3) s GROUP BY k;
SELECT k, count(*) FROM (SELECT k FROM extremes ORDER BY k DESC LIMIT 3) s GROUP BY k;
SET gpusort.approximate_mode = quantile;
SELECT k, count(*) FROM (SELECT k FROM extremes ORDER BY k NULLS LAST LIMIT 3) s GROUP BY k;
SELECT k, count(*) FROM (SELECT k FROM extremes ORDER BY k DESC LIMIT 3) s GROUP BY k;
RESET gpusort.approximate_mode;

-- and turning it off restores the exact order
RESET gpusort.approximate_intervals;
CREATE TABLE smooth AS SELECT gauss FROM scores ORDER BY gauss;
SELECT bool_and(v >= prev) AS exact FROM
  (SELECT gauss AS v, lag(gauss) OVER (ORDER BY ctid) AS prev FROM smooth) s;
RESET gpusort.explain_details;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET work_mem;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA approximate CASCADE;
RESET client_min_messages;
