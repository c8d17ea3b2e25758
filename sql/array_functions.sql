-- gpu_sort_pairs(), gpu_approx_sort() and gpu_minmax().
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA array_functions;  -- this file's tables and functions
SET search_path = array_functions, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
\getenv abs_srcdir PG_ABS_SRCDIR
\set array_inputs :abs_srcdir '/sql/array_inputs.include'
\i :array_inputs
SELECT setseed(0.5);  -- the same test data every run
SET gpusort.gpu_min_elements = 0;

-- pairs: lexicographic by (a, b); returns both arrays reordered
SELECT * FROM gpu_sort_pairs(ARRAY[2, 1, 2, 1], ARRAY[5, 9, 3, 9]);
SELECT * FROM gpu_sort_pairs(ARRAY[2, 1, 2, 1], ARRAY[5, 9, 3, 9]::int8[], 'bitonic', true);
SELECT * FROM gpu_sort_pairs(ARRAY[1, NULL, 1, 2], ARRAY[NULL, 4, 3, 2]);
-- as rows
SELECT x, y FROM gpu_sort_pairs(ARRAY[3, 1, 2], ARRAY[30, 10, 20]) p, unnest(p.sorted_a, p.sorted_b) u(x, y);

-- against PostgreSQL's sort of the pairs (ties broken by position: stable)
CREATE FUNCTION ref_sort_pairs(a anyarray, b anycompatiblearray, descending boolean,
                               OUT sorted_a anyarray, OUT sorted_b anycompatiblearray)
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN descending THEN array_agg(x ORDER BY x DESC, y DESC, i) ELSE array_agg(x ORDER BY x, y, i) END,
         CASE WHEN descending THEN array_agg(y ORDER BY x DESC, y DESC, i) ELSE array_agg(y ORDER BY x, y, i) END
  FROM unnest(a, b) WITH ORDINALITY u(x, y, i)
$$;
SELECT alg, descending,
  bool_and(row(p.*) IS NOT DISTINCT FROM row(r.*)) AS narrow_ok,
  bool_and(row(q.*) IS NOT DISTINCT FROM row(s.*)) AS wide_ok
FROM (SELECT n,
        array(SELECT (random() * 20)::int FROM generate_series(1, n)) a,
        array(SELECT CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 20)::int END FROM generate_series(1, n)) b,
        array(SELECT ((random() - 0.5) * 1.8e19)::numeric::int8 FROM generate_series(1, n)) c,
        array(SELECT CASE WHEN random() < 0.1 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END
              FROM generate_series(1, n)) d
      FROM sizes WHERE n > 0 AND n <= 4093 OR n = 65537) t,
  unnest(ARRAY['auto', 'bitonic', 'butterfly', 'radix']) alg,
  unnest(ARRAY[false, true]) descending,
  LATERAL gpu_sort_pairs(a, b, alg, descending) p,
  LATERAL ref_sort_pairs(a, b, descending) r,
  LATERAL gpu_sort_pairs(c, d, alg, descending) q,
  LATERAL ref_sort_pairs(c, d, descending) s
GROUP BY alg, descending ORDER BY alg, descending;

-- approximate interval sort: ordered between intervals, any order within one
SELECT gpu_approx_sort(ARRAY[9, 1, 8, 2, 7, 3], 3);
SELECT gpu_approx_sort(ARRAY[9, 1, 8, 2, 7, 3], 3, true);
SELECT gpu_approx_sort(ARRAY[5, NULL, 1], 10), gpu_approx_sort(ARRAY[5, NULL, 1], 10, true);
SELECT gpu_approx_sort('{}'::int4[]);
-- the guarantee, checked on the output: it is a permutation of the input,
-- and any two elements out of order differ by less than one interval width,
-- (max - min + 1) / intervals
CREATE FUNCTION approx_ok(a anyarray, intervals int, descending boolean) RETURNS boolean
LANGUAGE sql AS $$
  WITH out AS (SELECT gpu_approx_sort(a, intervals, descending) AS o),
  e AS (SELECT x::numeric AS x, i FROM out, unnest(o) WITH ORDINALITY u(x, i)),
  v AS (SELECT x, CASE WHEN descending THEN min(x) OVER w ELSE max(x) OVER w END AS run
        FROM e WHERE x IS NOT NULL WINDOW w AS (ORDER BY i)),
  stats AS (SELECT (max(x) - min(x) + 1) / intervals AS width, max(abs(run - x)) AS worst FROM v),
  counts AS (SELECT count(*) AS n, count(*) - count(x) AS nulls FROM e)
  SELECT (SELECT ref_sort(o) IS NOT DISTINCT FROM ref_sort(a) FROM out)   -- a permutation
     AND (SELECT coalesce(worst < width, true) FROM stats)                 -- inversions < width
     AND (SELECT coalesce(bool_and((x IS NULL) = CASE WHEN descending THEN i <= nulls
                                                 ELSE i > n - nulls END), true)
          FROM e, counts)                                                  -- NULLs at the end
$$;
SELECT dist, k, bool_and(approx_ok(a, k, false)) AS asc_ok, bool_and(approx_ok(a, k, true)) AS desc_ok
FROM inputs, unnest(ARRAY[1, 2, 10, 1000, 1000000]) k
WHERE n > 0 AND (n <= 1025 OR n = 65537)
GROUP BY dist, k ORDER BY dist, k;
-- with as many intervals as values it is exact
SELECT gpu_approx_sort(a, 1000000) = ref_sort(a) AS exact
FROM (SELECT array(SELECT (random() * 1000)::int FROM generate_series(1, 5000)) a) t;
SELECT bool_and(approx_ok(a, 100, false)) AS bigint_ok
FROM (SELECT array(SELECT ((random() - 0.5) * 1.8e19)::numeric::int8 FROM generate_series(1, n)) a
      FROM sizes WHERE n > 0 AND n <= 4093) t;

-- min and max by the min-max butterfly
SELECT * FROM gpu_minmax(ARRAY[5, -3, 9, NULL, 0]);
SELECT * FROM gpu_minmax(ARRAY['2020-01-01', '1999-12-31']::date[]);
SELECT * FROM gpu_minmax(ARRAY[1.5, 'NaN', -2]::float8[]);
SELECT * FROM gpu_minmax('{}'::int4[]) empty, gpu_minmax(ARRAY[NULL]::int8[]) all_null;
SELECT bool_and((m.min, m.max) IS NOT DISTINCT FROM (SELECT (min(x), max(x)) FROM unnest(a) x)) AS minmax_ok
FROM inputs, gpu_minmax(a) m;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA array_functions CASCADE;
RESET client_min_messages;
