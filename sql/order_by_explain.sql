-- What EXPLAIN shows for GpuSort. Machine-dependent details (device,
-- memory, timings) are hidden so the output is the same everywhere.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_explain;  -- this file's tables and functions
SET search_path = order_by_explain, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
SET gpusort.min_rows = 0;
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;
CREATE TABLE e (id int, k int, b bigint, g int, txt text);
INSERT INTO e SELECT i, (i * 37) % 1000, i * 1000000000::bigint, i % 10, md5(i::text)
FROM generate_series(1, 5000) i;
ANALYZE e;

EXPLAIN (COSTS OFF) SELECT * FROM e ORDER BY k;
EXPLAIN (COSTS OFF) SELECT * FROM e ORDER BY g DESC, k NULLS FIRST;
EXPLAIN (COSTS OFF) SELECT * FROM e ORDER BY b DESC NULLS LAST, g NULLS FIRST;
EXPLAIN (COSTS OFF) SELECT id FROM e ORDER BY k LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM e ORDER BY k LIMIT 10 OFFSET 5;
EXPLAIN (COSTS OFF) SELECT id, k % 10 FROM e ORDER BY k % 10, id;
EXPLAIN (COSTS OFF) SELECT e1.id FROM e e1 JOIN e e2 ON e1.id = e2.k ORDER BY e2.b;
EXPLAIN (COSTS OFF, VERBOSE) SELECT id, k FROM e ORDER BY k;
EXPLAIN (COSTS OFF) SELECT * FROM (SELECT * FROM e ORDER BY k LIMIT 100) s ORDER BY g;
SET gpusort.algorithm = bitonic;
EXPLAIN (COSTS OFF) SELECT * FROM e ORDER BY k;
RESET gpusort.algorithm;

-- The cost model, with the costs deciding (the default gpusort.min_rows):
-- ten million rows go to GpuSort in memory, and also beyond work_mem,
-- where it sorts runs and merges them from disk as PostgreSQL's external
-- sort does, with cheaper runs and comparisons. EXPLAIN only plans: the
-- ten million rows are never made.
RESET gpusort.min_rows;
SET work_mem = '4GB';
EXPLAIN (COSTS OFF) SELECT g FROM generate_series(1, 10000000) g ORDER BY g;
SET work_mem = '4MB';
EXPLAIN (COSTS OFF) SELECT g FROM generate_series(1, 10000000) g ORDER BY g;
-- a LIMIT above a subquery's scan reaches PostgreSQL's Sort as a bound at
-- run time (a top-N heapsort) but not GpuSort, which would sort every
-- row: a small one leaves the subquery's sort to PostgreSQL, a large one
-- (where the heapsort is no cheaper) does not
SET work_mem = '4GB';
EXPLAIN (COSTS OFF)
SELECT * FROM (SELECT g FROM generate_series(1, 10000000) g ORDER BY g) s LIMIT 10;
EXPLAIN (COSTS OFF)
SELECT * FROM (SELECT g FROM generate_series(1, 10000000) g ORDER BY g) s LIMIT 5000000;
RESET work_mem;
-- a bound of any size over a table's own Seq Scan (no parallel workers):
-- rows past the threshold cost a key read, and GpuSort reads the pages
-- itself; a filter leaving fewer than gpusort.min_rows rows stays with
-- PostgreSQL
CREATE TABLE topn AS SELECT i AS id, (i * 7919) % 100003 AS k FROM generate_series(1, 100000) i;
ANALYZE topn;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM topn ORDER BY k LIMIT 10;
EXPLAIN (COSTS OFF) SELECT * FROM topn WHERE id % 10 = 0 ORDER BY k LIMIT 10;
RESET max_parallel_workers_per_gather;
SET gpusort.min_rows = 0;

-- ANALYZE: rows sorted, bound, and the runs of an external sort
SELECT explain_stable('SELECT * FROM e ORDER BY k', 'ANALYZE') AS "QUERY PLAN";
SELECT explain_stable('SELECT * FROM e ORDER BY g, k LIMIT 20', 'ANALYZE') AS "QUERY PLAN";
SET work_mem = '64kB';
SET gpusort.spill_to_gpu = off;   -- temporary files even with the GPU service
SELECT explain_stable('SELECT * FROM e ORDER BY k', 'ANALYZE') AS "QUERY PLAN";
RESET work_mem;
RESET gpusort.spill_to_gpu;
SELECT explain_stable('SELECT id FROM e ORDER BY k DESC LIMIT 3', 'ANALYZE, FORMAT JSON') AS "QUERY PLAN";

-- GpuSort's runs in temporary files take up to twice tuplesort's disk: a
-- sort whose files would pass temp_file_limit stays PostgreSQL's, which
-- runs within it
CREATE TABLE narrow AS SELECT (g * 7919) % 20011 AS k, g AS id FROM generate_series(1, 20000) g;
ANALYZE narrow;
SET work_mem = '64kB';
SET gpusort.spill_to_gpu = off;
SET temp_file_limit = '1MB';
EXPLAIN (COSTS OFF) SELECT id FROM narrow ORDER BY k, id;
SELECT count(*), count(DISTINCT id), min(id), max(id),
  bool_and(prev_k IS NULL OR (k, id) > (prev_k, prev_id)) AS in_order
FROM (SELECT k, id, lag(k) OVER () AS prev_k, lag(id) OVER () AS prev_id
      FROM (SELECT k, id FROM narrow ORDER BY k, id) o) s;
SET temp_file_limit = '10MB';
EXPLAIN (COSTS OFF) SELECT id FROM narrow ORDER BY k, id;
-- and GpuSort's files stay within it
SELECT count(*), count(DISTINCT id), min(id), max(id),
  bool_and(prev_k IS NULL OR (k, id) > (prev_k, prev_id)) AS in_order
FROM (SELECT k, id, lag(k) OVER () AS prev_k, lag(id) OVER () AS prev_id
      FROM (SELECT k, id FROM narrow ORDER BY k, id) o) s;
RESET temp_file_limit;
RESET work_mem;
RESET gpusort.spill_to_gpu;

-- with details on, the device and timings appear (masked here)
SET gpusort.explain_details = on;
CREATE FUNCTION explain_lines(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN SELECT explain_stable(query, 'ANALYZE, TIMING ON') LOOP
    CONTINUE WHEN line ~ 'GPU Memory|GPU Queue Wait';  -- only where a GPU sorted
    line := regexp_replace(line, 'actual time=[0-9.]+\.\.[0-9.]+', 'actual time=N..N');
    line := regexp_replace(line, 'Device: .*', 'Device: X');
    line := regexp_replace(line, '=[0-9.]+', '=N', 'g');
    line := regexp_replace(line, ': [0-9]+ ?kB', ': N kB');
    line := regexp_replace(line, 'Algorithm Used: .*', 'Algorithm Used: X');
    RETURN NEXT line;
  END LOOP;
END $$;
SELECT explain_lines('SELECT * FROM e ORDER BY k') AS plan;
-- PostgreSQL 18 also takes the setting for one EXPLAIN, as the option
-- GPUSORT_DETAILS (15 has no EXPLAIN options of extensions: true there)
CREATE FUNCTION details_shown(options text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RETURN EXISTS (SELECT FROM explain_stable('SELECT * FROM e ORDER BY k', 'ANALYZE, ' || options) line
                 WHERE line ~ '^ *Memory: ');
END $$;
SELECT CASE WHEN current_setting('server_version_num')::int < 180000 THEN true
            ELSE NOT details_shown('GPUSORT_DETAILS off') END AS option_hides_details;
SET gpusort.explain_details = off;
SELECT CASE WHEN current_setting('server_version_num')::int < 180000 THEN true
            ELSE details_shown('GPUSORT_DETAILS') AND NOT details_shown('GPUSORT_DETAILS false')
       END AS option_shows_details;
RESET gpusort.explain_details;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA order_by_explain CASCADE;
RESET client_min_messages;
