-- The approximate opt-in on real and double precision keys (quantile mode:
-- the equal widths keep to integers): NaN, the infinities, -0 and NULLs
-- among skewed values. Checked on the output, as in approximate.sql: the
-- input's rows, NULLs where ORDER BY puts them, every non-NULL row within
-- D of its exact rank (NaN after +Infinity, -0 tied with 0), and with a
-- LIMIT the exact top LIMIT - D rows among those returned.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA approximate_floats;
SET search_path = approximate_floats, public;
LOAD 'gpusort';
SELECT setseed(0.46);
SET gpusort.gpu_min_elements = 0;
SET gpusort.min_rows = 0;
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 0;
CREATE TABLE fl (id int, r real, d float8);
INSERT INTO fl SELECT i,
  CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'NaN' WHEN i % 83 = 0 THEN 'Infinity'
       WHEN i % 79 = 0 THEN '-Infinity' WHEN i % 73 = 0 THEN '-0' WHEN i % 71 = 0 THEN '0'
       ELSE (CASE WHEN random() < 0.3 THEN -1 ELSE 1 END / (random() ^ 2 + 1e-6))::real END,
  CASE WHEN i % 101 = 0 THEN NULL WHEN i % 61 = 0 THEN 'NaN' WHEN i % 59 = 0 THEN 'Infinity'
       WHEN i % 53 = 0 THEN '-Infinity' WHEN i % 47 = 0 THEN '-0' WHEN i % 43 = 0 THEN '0'
       ELSE (i % 5) * 1e12 + random() END
FROM generate_series(1, 30000) i;
ANALYZE fl;
SELECT count(*) FILTER (WHERE r = 'NaN') AS r_nan, count(*) FILTER (WHERE r IN ('Infinity', '-Infinity')) AS r_inf,
  count(*) FILTER (WHERE d = 'NaN') AS d_nan, count(*) FILTER (WHERE d = 0) AS d_zeros,
  count(*) - count(d) AS d_nulls FROM fl;
-- D, from the README's formula (as approximate.sql)
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
-- the statement the client sends: CREATE TABLE AS, which keeps the order
CREATE FUNCTION sort_statement(col text, descending boolean, lim int) RETURNS text
LANGUAGE sql AS $$
  SELECT format('CREATE TABLE out_%s_%s_%s AS SELECT %1$s AS v FROM fl ORDER BY %1$s %4$s %5$s',
                col, CASE WHEN descending THEN 'desc' ELSE 'asc' END, coalesce(lim::text, 'all'),
                CASE WHEN descending THEN 'DESC' ELSE '' END,
                CASE WHEN lim IS NULL THEN '' ELSE 'LIMIT ' || lim END)
$$;
CREATE FUNCTION check_output(col text, intervals int, descending boolean, lim int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  tab text := format('out_%s_%s_%s', col, CASE WHEN descending THEN 'desc' ELSE 'asc' END,
                     coalesce(lim::text, 'all'));
  n bigint;
  nulls bigint;
  got bigint;
  extra bigint;
  missing bigint;
  nulls_ok boolean;
  worst bigint;
  bound bigint;
  sure bigint;
  covered bigint := 0;
BEGIN
  EXECUTE format('SELECT count(%1$s), count(*) - count(%1$s) FROM fl', col) INTO n, nulls;
  bound := rank_bound(n, intervals);
  EXECUTE format('CREATE TEMP TABLE o AS SELECT row_number() OVER (ORDER BY ctid) AS pos, v FROM %I', tab);
  EXECUTE format('DROP TABLE %I', tab);
  SELECT count(*) INTO got FROM o;
  EXECUTE format('SELECT count(*) FROM (SELECT v FROM o EXCEPT ALL SELECT %s FROM fl) x', col) INTO extra;
  EXECUTE format('SELECT count(*) FROM (SELECT %s FROM fl EXCEPT ALL SELECT v FROM o) x', col) INTO missing;
  SELECT coalesce(bool_and((v IS NULL) = CASE WHEN descending THEN pos <= least(nulls, got)
                                              ELSE pos > n END), true) INTO nulls_ok FROM o;
  EXECUTE format('CREATE TEMP TABLE e AS SELECT v, sum(c) OVER (ORDER BY v %1$s) - c AS first, '
                 'sum(c) OVER (ORDER BY v %1$s) - 1 AS last '
                 'FROM (SELECT %2$s AS v, count(*) AS c FROM fl WHERE %2$s IS NOT NULL GROUP BY 1) x',
                 CASE WHEN descending THEN 'DESC' ELSE '' END, col);
  SELECT coalesce(max(greatest(e.first - o2.p, o2.p - e.last, 0)), 0) INTO worst
  FROM (SELECT row_number() OVER (ORDER BY pos) - 1 AS p, v FROM o WHERE v IS NOT NULL) o2 JOIN e USING (v);
  IF lim IS NOT NULL THEN
    sure := greatest(lim - CASE WHEN descending THEN nulls ELSE 0 END - bound, 0);
    EXECUTE format('SELECT count(*) FROM (SELECT %1$s FROM (SELECT %1$s FROM fl WHERE %1$s IS NOT NULL '
                   'ORDER BY %1$s %2$s LIMIT %3$s) t EXCEPT ALL SELECT v FROM o) x',
                   col, CASE WHEN descending THEN 'DESC' ELSE '' END, sure) INTO covered;
  END IF;
  DROP TABLE o;
  DROP TABLE e;
  RETURN format('%s, nulls %s, %s',
                CASE WHEN extra > 0 THEN extra || ' rows not in the input'
                     WHEN lim IS NULL AND missing > 0 THEN missing || ' input rows missing'
                     WHEN lim IS NOT NULL AND got <> least(lim, n + nulls) THEN got || ' rows'
                     ELSE 'from the input' END,
                CASE WHEN nulls_ok THEN 'placed' ELSE 'misplaced' END,
                CASE WHEN worst > bound THEN 'rank error ' || worst || ' PAST the bound ' || bound
                     WHEN covered > 0 THEN covered || ' of the exact top MISSING'
                     ELSE 'within the bound' END);
END $$;
SET gpusort.approximate_mode = quantile;
SET gpusort.approximate_intervals = 50;
-- both approximated, in this mode
EXPLAIN (COSTS OFF) SELECT r FROM fl ORDER BY r;
EXPLAIN (COSTS OFF) SELECT d FROM fl ORDER BY d DESC LIMIT 100;
SELECT sort_statement(col, descending, lim)
FROM unnest(ARRAY['r', 'd']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 700, 5000]) lim \gexec
SELECT col, descending, lim, check_output(col, 50, descending, lim)
FROM unnest(ARRAY['r', 'd']) col, unnest(ARRAY[false, true]) descending,
     unnest(ARRAY[NULL, 1, 700, 5000]) lim
ORDER BY col, descending, lim NULLS FIRST;
-- the check can fail: the same 50-interval output held to the bound of
-- 5000 intervals
SELECT sort_statement('r', false, NULL) \gexec
SELECT check_output('r', 5000, false, NULL) LIKE '%PAST the bound%' AS check_fails_past_a_smaller_bound;
-- really approximate: with so few intervals the output is not in exact order
CREATE TABLE out_d_inexact AS SELECT d FROM fl ORDER BY d;
SELECT count(*) FILTER (WHERE d < prev) > 0 AS some_rows_out_of_order
FROM (SELECT d, lag(d) OVER (ORDER BY ctid) AS prev FROM out_d_inexact) x;
-- the equal widths do not take float keys: the sort stays exact
SET gpusort.approximate_mode = width;
EXPLAIN (COSTS OFF) SELECT r FROM fl ORDER BY r;
CREATE TABLE out_d_width AS SELECT d FROM fl ORDER BY d;
SELECT count(*) FILTER (WHERE d < prev) AS out_of_order
FROM (SELECT d, lag(d) OVER (ORDER BY ctid) AS prev FROM out_d_width) x;
RESET gpusort.approximate_mode;
RESET gpusort.approximate_intervals;
RESET max_parallel_workers_per_gather;
RESET work_mem;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA approximate_floats CASCADE;
RESET client_min_messages;
