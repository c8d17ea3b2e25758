-- gpu_sort() and gpu_argsort(): every algorithm, every size and
-- distribution, both directions, compared element by element with
-- PostgreSQL's own sort (which checks order and permutation at once).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA array_sort;  -- this file's tables and functions
SET search_path = array_sort, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
\getenv abs_srcdir PG_ABS_SRCDIR
\set array_inputs :abs_srcdir '/sql/array_inputs.include'
\i :array_inputs
SELECT setseed(0.5);  -- the same test data every run
SET gpusort.gpu_min_elements = 0;

-- a first example
SELECT gpu_sort(ARRAY[5, 3, 9, 1, 3]);
SELECT gpu_sort(ARRAY[5, 3, 9, 1, 3], 'bitonic', true);
SELECT gpu_sort(ARRAY[5, NULL, 1, NULL, 3]);
SELECT gpu_sort(ARRAY[5, NULL, 1, NULL, 3], 'radix', true);
SELECT gpu_argsort(ARRAY[30, 10, 20, 10]);
SELECT gpu_argsort(ARRAY[30, 10, 20, 10], 'butterfly', true);
SELECT gpu_sort('{}'::int4[]), gpu_sort(NULL::int4[]), gpu_argsort('{}'::int8[]);
-- the lower bound is kept; argsort positions are ordinal (1 = first)
SELECT gpu_sort('[5:7]={3,1,2}'::int4[]), gpu_argsort('[5:7]={3,1,2}'::int4[]);

-- every algorithm against the reference, ascending and descending
SELECT alg, dist,
       bool_and(gpu_sort(a, alg) IS NOT DISTINCT FROM asc_ref) AS asc_ok,
       bool_and(gpu_sort(a, alg, true) IS NOT DISTINCT FROM desc_ref) AS desc_ok,
       bool_and(gpu_argsort(a, alg) = argasc_ref) AS argsort_ok,
       bool_and(gpu_argsort(a, alg, true) = argdesc_ref) AS argsort_desc_ok
FROM inputs, unnest(ARRAY['auto', 'bitonic', 'butterfly', 'radix']) alg
GROUP BY alg, dist ORDER BY alg, dist;

-- other element types: smallint, bigint (full range), date, timestamp, float
CREATE TEMP TABLE typed AS
  SELECT n,
    array(SELECT (random() * 65535 - 32768)::int2 FROM generate_series(1, n)) s,
    array(SELECT CASE WHEN random() < 0.1 THEN NULL
                 ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END FROM generate_series(1, n)) b,
    array(SELECT date '2000-01-01' + (random() * 20000)::int FROM generate_series(1, n)) d,
    array(SELECT timestamp '2000-01-01' + random() * interval '9000 days' FROM generate_series(1, n)) ts,
    array(SELECT timestamptz '2000-01-01 UTC' + random() * interval '9000 days' FROM generate_series(1, n)) tz,
    array(SELECT (ARRAY[(random() - 0.5) * 1e6, 'NaN', '-Infinity', 'Infinity', 0, -0.0, NULL]::float8[])
                 [1 + (random() * 6)::int] FROM generate_series(1, n)) f,
    array(SELECT ((random() - 0.5) * 1e3)::float4 FROM generate_series(1, n)) r
  FROM sizes WHERE n <= 4093 OR n = 65537;
SELECT alg,
  bool_and(gpu_sort(s, alg) IS NOT DISTINCT FROM ref_sort(s)) AS int2,
  bool_and(gpu_sort(b, alg) IS NOT DISTINCT FROM ref_sort(b)) AS int8,
  bool_and(gpu_sort(b, alg, true) IS NOT DISTINCT FROM ref_sort(b, true)) AS int8_desc,
  bool_and(gpu_sort(d, alg) IS NOT DISTINCT FROM ref_sort(d)) AS date,
  bool_and(gpu_sort(ts, alg) IS NOT DISTINCT FROM ref_sort(ts)) AS timestamp,
  bool_and(gpu_sort(tz, alg, true) IS NOT DISTINCT FROM ref_sort(tz, true)) AS timestamptz,
  bool_and(gpu_sort(f, alg) IS NOT DISTINCT FROM ref_sort(f)) AS float8,
  bool_and(gpu_sort(r, alg, true) IS NOT DISTINCT FROM ref_sort(r, true)) AS float4,
  bool_and(gpu_argsort(b, alg) = ref_argsort(b)) AS int8_argsort
FROM typed,
  unnest(ARRAY['auto', 'bitonic', 'butterfly', 'radix']) alg
GROUP BY alg ORDER BY alg;

-- extremes of int8 and special dates keep their order
SELECT gpu_sort(ARRAY[9223372036854775807, -9223372036854775808, 0, -1]::int8[]);
SELECT gpu_sort(ARRAY['infinity', '-infinity', '2020-01-01']::date[], 'bitonic');
-- -0 and NaN come back as they went in (floats are moved, not re-encoded)
SELECT gpu_sort(ARRAY['NaN', 1.5, '-0', '-Infinity', 0, 'Infinity']::float8[]);

-- the CPU gives the same answers as wherever auto runs
SET gpusort.device = cpu;
CREATE TEMP TABLE cpu_results AS
SELECT n, dist, alg, gpu_sort(a, alg) s, gpu_argsort(a, alg, true) p
FROM inputs, unnest(ARRAY['bitonic', 'butterfly', 'radix']) alg;
RESET gpusort.device;
SELECT bool_and(c.s IS NOT DISTINCT FROM gpu_sort(i.a, c.alg) AND c.p = gpu_argsort(i.a, c.alg, true)) AS same_everywhere
FROM cpu_results c JOIN inputs i USING (n, dist);
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA array_sort CASCADE;
RESET client_min_messages;
