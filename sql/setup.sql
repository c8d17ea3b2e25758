-- gpusort regression tests: the extension loads, and knows where it sorts.
-- Output here must be the same with and without a GPU.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;

SELECT name FROM gpusort_info() WHERE name IN ('built_with_cuda', 'gpu_usable', 'sorts_run_on') ORDER BY name;
SELECT value IN ('yes', 'no') AS answers FROM gpusort_info() WHERE name = 'gpu_usable';
-- when no GPU is usable, it says why
SELECT (SELECT value FROM gpusort_info() WHERE name = 'gpu_usable') = 'yes'
    OR EXISTS (SELECT FROM gpusort_info() WHERE name = 'reason' AND value <> '') AS explained;

-- settings live under one prefix
SELECT name, setting FROM pg_settings WHERE name LIKE 'gpusort.%'
  AND name NOT IN ('gpusort.device') ORDER BY name;

-- the GPU service reports its state (test/service/ tests the service itself)
SELECT count(*) AS service_state_rows FROM gpusort_info() WHERE name = 'service_state';

-- explain_stable(query, options): the query's EXPLAIN (COSTS OFF, options)
-- as the tests show it, the same on PostgreSQL 15 and 18 (every test may
-- call it: it lives in public). With ANALYZE: TIMING OFF, SUMMARY OFF and
-- BUFFERS OFF (18 shows buffers by default) unless options say otherwise. Of what 18 prints
-- differently: actual rows with two decimals are shown as 15 rounds them,
-- "InitPlan 1 (returns $0)" as 18's "InitPlan 1", a window 18 names
-- (OVER w1) and 15 does not (OVER (?)) as OVER w, and a WindowAgg's
-- "Window:" line, 18's "Storage:" lines and JSON's "Disabled": false (every
-- node's) are left out.
CREATE FUNCTION explain_stable(query text, options text DEFAULT '') RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  value text;
BEGIN
  IF options ~* '\mANALYZE\M' THEN  -- (options named last win)
    options := 'TIMING OFF, SUMMARY OFF, BUFFERS OFF, ' || options;
  END IF;
  FOR line IN EXECUTE format('EXPLAIN (COSTS OFF%s) %s', ', ' || nullif(options, ''), query) LOOP
    CONTINUE WHEN line ~ '^ *(Window|Storage): ';
    LOOP
      value := substring(line from '(?:rows=|"Actual Rows": )(\d+\.\d+)');
      EXIT WHEN value IS NULL;
      line := regexp_replace(line, '(rows=|"Actual Rows": )\d+\.\d+', '\1' || round(value::numeric));
    END LOOP;
    line := regexp_replace(line, '(InitPlan \d+) \(returns [^)]*\)', '\1');
    line := regexp_replace(line, 'OVER (w\d+|\(\?\))', 'OVER w', 'g');
    line := regexp_replace(line, ',\n *"Disabled": false', '', 'g');
    RETURN NEXT line;
  END LOOP;
END $$;

-- same_order(query, keys): runs the query with GpuSort and without, and
-- compares the sort keys row by row (position included), and the whole rows
-- as multisets (PostgreSQL's sort orders ties arbitrarily; GpuSort keeps
-- them in input order). Also checks that the first run used GpuSort.
CREATE FUNCTION same_order(query text, keys text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan text;
  used boolean := false;
  key_differences bigint;
  row_differences bigint;
  total bigint;
BEGIN
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    used := used OR plan LIKE '%GpuSort%';
  END LOOP;
  EXECUTE format('CREATE TEMP TABLE gpu_result AS SELECT row_number() OVER () AS pos, q.* FROM (%s) q', query);
  SET LOCAL gpusort.enabled = off;
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    IF plan LIKE '%GpuSort%' THEN RAISE EXCEPTION 'GpuSort used with gpusort.enabled = off'; END IF;
  END LOOP;
  EXECUTE format('CREATE TEMP TABLE pg_result AS SELECT row_number() OVER () AS pos, q.* FROM (%s) q', query);
  SET LOCAL gpusort.enabled = on;
  SELECT count(*) INTO total FROM pg_result;
  EXECUTE format('SELECT count(*) FROM ((SELECT pos, %1$s FROM gpu_result EXCEPT ALL SELECT pos, %1$s FROM pg_result)
                  UNION ALL (SELECT pos, %1$s FROM pg_result EXCEPT ALL SELECT pos, %1$s FROM gpu_result)) d', keys)
    INTO key_differences;
  SELECT count(*) INTO row_differences FROM (
    (SELECT to_jsonb(gpu_row) - 'pos' FROM gpu_result gpu_row
     EXCEPT ALL SELECT to_jsonb(pg_row) - 'pos' FROM pg_result pg_row)
    UNION ALL
    (SELECT to_jsonb(pg_row) - 'pos' FROM pg_result pg_row
     EXCEPT ALL SELECT to_jsonb(gpu_row) - 'pos' FROM gpu_result gpu_row)) d;
  DROP TABLE gpu_result;
  DROP TABLE pg_result;
  RETURN CASE WHEN NOT used THEN 'GpuSort not used'
              WHEN key_differences > 0 THEN key_differences || ' positions differ'
              WHEN row_differences > 0 THEN row_differences || ' rows differ'
              ELSE 'same ' || total || ' rows' END;
END $$;
