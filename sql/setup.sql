-- gpusort regression tests: the extension loads, and knows where it sorts.
-- Output here must be the same with and without a GPU.
CREATE EXTENSION gpusort;
SELECT setseed(0.5);  -- the same test data every run

SELECT name FROM gpusort_info() WHERE name IN ('built_with_cuda', 'gpu_usable', 'sorts_run_on') ORDER BY name;
SELECT value IN ('yes', 'no') AS answers FROM gpusort_info() WHERE name = 'gpu_usable';
-- when no GPU is usable, it says why
SELECT (SELECT value FROM gpusort_info() WHERE name = 'gpu_usable') = 'yes'
    OR EXISTS (SELECT FROM gpusort_info() WHERE name = 'reason' AND value <> '') AS explained;

-- settings live under one prefix
SELECT name, setting FROM pg_settings WHERE name LIKE 'gpusort.%'
  AND name NOT IN ('gpusort.device') ORDER BY name;

-- Reference helpers: PostgreSQL's own sort of the same elements.
CREATE FUNCTION ref_sort(a anyarray, descending boolean DEFAULT false)
RETURNS anyarray LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN descending
    THEN array(SELECT x FROM unnest(a) x ORDER BY x DESC)
    ELSE array(SELECT x FROM unnest(a) x ORDER BY x) END
$$;
CREATE FUNCTION ref_argsort(a anyarray, descending boolean DEFAULT false)
RETURNS integer[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN descending
    THEN array(SELECT i::int FROM unnest(a) WITH ORDINALITY u(x, i) ORDER BY x DESC, i)
    ELSE array(SELECT i::int FROM unnest(a) WITH ORDINALITY u(x, i) ORDER BY x, i) END
$$;

-- Test inputs: every size that matters, every distribution.
CREATE TABLE sizes(n int);
INSERT INTO sizes VALUES (0), (1), (2), (3), (4), (7), (8), (9), (31), (32), (33),
  (255), (256), (257), (1023), (1024), (1025), (4093), (65535), (65536), (65537), (100003);
CREATE TABLE inputs AS
SELECT n, dist,
  CASE dist
    WHEN 'random' THEN array(SELECT (random() * 4294967295 - 2147483648)::int4 FROM generate_series(1, n))
    WHEN 'sorted' THEN array(SELECT i FROM generate_series(1, n) i)
    WHEN 'reverse' THEN array(SELECT n - i FROM generate_series(1, n) i)
    WHEN 'equal' THEN array_fill(7, ARRAY[n])
    WHEN 'few' THEN array(SELECT (random() * 4)::int4 - 2 FROM generate_series(1, n))
    WHEN 'extremes' THEN array(SELECT (ARRAY[-2147483648, 2147483647, 0, -1, 1])[1 + (random() * 4)::int]
                               FROM generate_series(1, n))
    WHEN 'nulls' THEN array(SELECT CASE WHEN random() < 0.2 THEN NULL ELSE (random() * 1000)::int4 END
                            FROM generate_series(1, n))
  END AS a
FROM sizes, unnest(ARRAY['random', 'sorted', 'reverse', 'equal', 'few', 'extremes', 'nulls']) dist;
-- the reference answers, computed once
ALTER TABLE inputs ADD asc_ref int4[], ADD desc_ref int4[], ADD argasc_ref int4[], ADD argdesc_ref int4[];
UPDATE inputs SET asc_ref = ref_sort(a), desc_ref = ref_sort(a, true),
  argasc_ref = ref_argsort(a), argdesc_ref = ref_argsort(a, true);
SELECT count(*) AS cases FROM inputs;
