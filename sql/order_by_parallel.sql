-- The parallel GpuSort: a GpuSort in every parallel process sorts its share
-- of the rows into sorted runs in temporary files, the GpuSort above the
-- Gather merges them. Each query is compared with PostgreSQL's own sort (gpusort.enabled
-- = off), planned anew each time, and must have used the parallel GpuSort.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_parallel;  -- this file's tables and functions
SET search_path = order_by_parallel, public;
LOAD 'gpusort';
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;
-- parallel plans on small tables; parallel_tuple_cost stays at its default
SET parallel_setup_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;

-- 30000 rows: duplicate keys, NULLs, an int8 key, a text payload
CREATE TABLE par AS
  SELECT i AS id, (i * 7919) % 10007 AS k,
         CASE WHEN i % 13 = 0 THEN NULL ELSE (i::int8 * 1000003) % 977 - 400 END AS b,
         md5(i::text) AS pad
  FROM generate_series(1, 30000) i;
ANALYZE par;

-- the query's rows as text, in order, with GpuSort and with PostgreSQL's
-- sort; 'same N rows', what differs, or that no parallel GpuSort ran
CREATE FUNCTION merged_both_ways(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := format('SELECT array(SELECT q::text FROM (%s) q)', query);
  plan text;
  merged boolean := false;
  gpu text[];
  pg text[];
BEGIN
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || wrapped LOOP
    merged := merged OR plan LIKE '%merges the shares sorted below%';
  END LOOP;
  EXECUTE wrapped INTO gpu;
  SET LOCAL gpusort.enabled = off;
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || wrapped LOOP
    IF plan LIKE '%GpuSort%' THEN RAISE EXCEPTION 'GpuSort used with gpusort.enabled = off'; END IF;
  END LOOP;
  EXECUTE wrapped INTO pg;
  SET LOCAL gpusort.enabled = on;
  RETURN CASE WHEN NOT merged THEN 'no parallel GpuSort'
              WHEN gpu IS DISTINCT FROM pg THEN format('differ: %s rows against %s: %s / %s',
                   cardinality(gpu), cardinality(pg), gpu[1:8], pg[1:8])
              ELSE 'same ' || cardinality(pg) || ' rows' END;
END $$;

EXPLAIN (COSTS OFF) SELECT * FROM par ORDER BY k, id;

SELECT q, merged_both_ways(q) FROM (VALUES
  ('SELECT * FROM par ORDER BY k, id'),
  ('SELECT k, id FROM par ORDER BY k DESC, id'),
  ('SELECT b, id FROM par ORDER BY b, id'),
  ('SELECT b, id FROM par ORDER BY b DESC NULLS LAST, id DESC'),
  ('SELECT b, k, id FROM par ORDER BY b NULLS FIRST, k DESC, id'),
  ('SELECT k, id FROM par WHERE id % 3 = 0 ORDER BY k, id'),
  ('SELECT k, id FROM par WHERE id % 7 = 100 ORDER BY k, id'),
  ('SELECT k * 2 AS k2, id FROM par ORDER BY k * 2, id'),
  ('SELECT k, id FROM par ORDER BY k, id OFFSET 29990')
) v(q);

-- equal keys come out in a deterministic order: every key once per share
-- would still give PostgreSQL's multiset; compare whole rows by a unique key
SELECT merged_both_ways('SELECT id % 10 AS g, id FROM par ORDER BY id % 10, id') AS many_ties;

-- the workers help merge, a key range each (gpusort.parallel_merge): ranges
-- cut inside a run of equal leading keys, a constant leading key (the
-- ranges then split on the second), NULLs at either end; and the leader
-- merging alone with it off
SELECT q, merged_both_ways(q) FROM (VALUES
  ('SELECT id % 4 AS g, id FROM par ORDER BY id % 4 DESC, id'),
  ('SELECT id * 0 AS z, k, id FROM par ORDER BY id * 0, k, id'),
  ('SELECT b, id FROM par ORDER BY b NULLS FIRST, id DESC')
) v(q);
SET gpusort.parallel_merge = off;
SELECT merged_both_ways('SELECT b, k, id FROM par ORDER BY b, k, id') AS leader_merges_alone;
RESET gpusort.parallel_merge;

-- shares bigger than work_mem: each process writes many sorted runs and
-- merges them down to a few; the leader, whose work_mem cannot read all of
-- theirs at once either, merges them in passes
SET work_mem = '64kB';
SELECT merged_both_ways('SELECT * FROM par ORDER BY b, k, id') AS spilled_shares;
-- the merges pack narrow leading keys into one word: NULLs in a later key
-- column, either end, with DESC around them
SELECT q, merged_both_ways(q) FROM (VALUES
  ('SELECT id % 3 AS g, b, id FROM par ORDER BY id % 3, b, id'),
  ('SELECT id % 3 AS g, b, id FROM par ORDER BY id % 3 DESC, b DESC NULLS LAST, id DESC'),
  ('SELECT id % 3 AS g, b, k, id FROM par ORDER BY id % 3, b NULLS FIRST, k DESC, id')
) v(q);
RESET work_mem;

-- no parallel worker at all: the leader sorts the only share
SET max_parallel_workers = 0;
SELECT merged_both_ways('SELECT k, id FROM par ORDER BY k, id') AS leader_alone;
RESET max_parallel_workers;
SET parallel_leader_participation = off;
SELECT merged_both_ways('SELECT k, id FROM par ORDER BY k, id') AS workers_only;
RESET parallel_leader_participation;

-- rescans: the inner side of a nested loop runs the parallel sort again
-- (its shared files go with the Gather's rescan) for every outer row
CREATE TABLE few AS SELECT i AS v FROM generate_series(0, 4) i;
ANALYZE few;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT f.v, s.id FROM few f, (SELECT id, k FROM par ORDER BY k, id OFFSET 0) s
WHERE s.k % 5 = f.v;
SELECT merged_both_ways('SELECT f.v, s.id FROM few f,
  (SELECT id, k FROM par ORDER BY k, id OFFSET 0) s WHERE s.k % 5 = f.v') AS rescanned;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- a LIMIT the sort cannot see (above a subquery's scan): the leader stops
-- reading early, and the workers merging key ranges for it stop with it,
-- at the query's end and at each rescan of a subplan
SET enable_gathermerge = off;
SELECT merged_both_ways('SELECT * FROM (SELECT k, id FROM par ORDER BY k, id OFFSET 0) s
  LIMIT 5') AS stops_early;
SELECT merged_both_ways('SELECT f.v, (SELECT s.id FROM
  (SELECT id, k FROM par ORDER BY k DESC, id OFFSET 0) s WHERE s.k % 5 = f.v LIMIT 1)
  FROM few f') AS subplan_stops_early;
RESET enable_gathermerge;

-- Under a LIMIT: Gather Merge over GpuSorts, each keeping the best LIMIT +
-- OFFSET rows of its process's share. Each reads the table pages its
-- Parallel Seq Scan hands it (gpusort.read_table_pages): dead, updated and
-- NULL-keyed rows among them; then the same through the scans.
CREATE FUNCTION bounded_both_ways(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  wrapped text := format('SELECT array(SELECT q::text FROM (%s) q)', query);
  plan text;
  shape text := '';
  pages boolean := false;
  gpu text[];
  pg text[];
BEGIN
  FOR plan IN EXECUTE 'EXPLAIN (COSTS OFF) ' || wrapped LOOP
    IF plan ~ '(Gather Merge|GpuSort|Bound:)' THEN
      shape := shape || substring(plan from '(Gather Merge|GpuSort|Bound:)') || ' ';
    END IF;
  END LOOP;
  FOR plan IN SELECT explain_stable(query, 'ANALYZE') LOOP
    pages := pages OR plan LIKE '%Table Pages Read by GpuSort%';
  END LOOP;
  EXECUTE wrapped INTO gpu;
  SET LOCAL gpusort.enabled = off;
  EXECUTE wrapped INTO pg;
  SET LOCAL gpusort.enabled = on;
  RETURN CASE WHEN shape <> 'Gather Merge GpuSort Bound: ' THEN 'plan: ' || shape
              WHEN gpu IS DISTINCT FROM pg THEN format('differ: %s rows against %s: %s / %s',
                   cardinality(gpu), cardinality(pg), gpu[1:8], pg[1:8])
              ELSE format('same %s rows, pages read: %s', cardinality(pg), pages) END;
END $$;
CREATE TABLE par_pages AS SELECT * FROM par;
ALTER TABLE par_pages SET (autovacuum_enabled = off);
DELETE FROM par_pages WHERE id % 9 = 0;
UPDATE par_pages SET k = k + 1 WHERE id % 4 = 0;
ANALYZE par_pages;
SET parallel_tuple_cost = 0;  -- Gather Merge also for the larger bounds
EXPLAIN (COSTS OFF) SELECT * FROM par_pages ORDER BY k, id LIMIT 10;
SELECT q, bounded_both_ways(q) FROM (VALUES
  ('SELECT * FROM par_pages ORDER BY k, id LIMIT 10'),
  ('SELECT k, id FROM par_pages ORDER BY k DESC, id LIMIT 300 OFFSET 20'),
  ('SELECT b, id FROM par_pages ORDER BY b NULLS FIRST, id LIMIT 2500'),
  ('SELECT id, b FROM par_pages ORDER BY b DESC, id LIMIT 5 OFFSET 26000'),
  ('SELECT k, id FROM par_pages WHERE id % 2 = 0 ORDER BY k, id LIMIT 40')
) v(q);
SET gpusort.read_table_pages = off;
SELECT bounded_both_ways('SELECT k, id FROM par_pages ORDER BY k DESC, id LIMIT 300 OFFSET 20')
  AS through_the_scans;
RESET gpusort.read_table_pages;
-- a subplan runs the Gather Merge again for every outer row, with new
-- workers: each process's share is read anew (a rewound share would
-- repeat rows the other processes read this time)
ALTER TABLE few SET (parallel_workers = 0);
EXPLAIN (COSTS OFF)
SELECT f.v, (SELECT count(*) FROM (SELECT id, k FROM par_pages ORDER BY k, id LIMIT 300) s
             WHERE s.id + f.v > 0)
FROM few f;
SELECT f.v, (SELECT count(*) || ' rows, ' || count(DISTINCT s.id) || ' distinct, sum ' || sum(s.id)
             FROM (SELECT id, k FROM par_pages ORDER BY k, id LIMIT 300) s
             WHERE s.id + f.v > 0) AS top_300
FROM few f;
SET gpusort.enabled = off;
SELECT sum(id) AS postgresql_sum FROM (SELECT id FROM par_pages ORDER BY k, id LIMIT 300) s;
RESET gpusort.enabled;
RESET parallel_tuple_cost;
-- a full sort's shares read the pages too
SELECT merged_both_ways('SELECT b, k, id FROM par_pages ORDER BY b, k DESC, id') AS shares_read_pages;

-- (a client fetching a few rows at a time runs the plan without parallel
-- workers: test/check_fetch_size.py covers that)

-- EXPLAIN ANALYZE runs both nodes and says how (numbers masked, and the
-- workers' lines left out: how many workers start is up to the server;
-- worker_reports() below checks those). Sorted runs in temporary files
-- even with the GPU service (test/service/run.sh checks its rows jobs).
SET gpusort.spill_to_gpu = off;
CREATE FUNCTION analyzed(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  FOR line IN SELECT explain_stable(query, 'ANALYZE') LOOP
    IF line ~ '(GpuSort|Gather|Parallel Sort|Sort Method|Sorted Runs|Key Ranges|Rows Sorted)'
       AND line !~ '^ *Worker [0-9]+:' THEN
      RETURN NEXT regexp_replace(line, '[0-9]+', 'N', 'g');
    END IF;
  END LOOP;
END $$;
SELECT analyzed('SELECT * FROM par ORDER BY k, id');

-- Each worker's sort in EXPLAIN ANALYZE, beside the leader's: a report
-- for every worker launched, and the leader's and the workers' figures
-- add up to the table's rows (Rows Read under a bound, where each process
-- keeps its best rows; Rows Sorted for a share). In JSON, to add them up.
-- The leader reads none itself, or it could read this small table alone.
CREATE FUNCTION worker_reports(query text, field text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plan jsonb;
  gather jsonb;
  node jsonb;
  launched int;
  reports int;
  total bigint;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || query INTO plan;
  gather := jsonb_path_query_first(plan, 'strict $.**?(exists (@."Workers Launched"))');
  node := jsonb_path_query_first(gather, 'strict $.Plans[*]?(@."Custom Plan Provider" == "GpuSort")');
  IF node IS NULL THEN
    RETURN 'no GpuSort below a Gather';
  END IF;
  launched := (gather->>'Workers Launched')::int;
  reports := coalesce(jsonb_array_length(node->'GpuSort Workers'), 0);
  SELECT coalesce((node->>field)::bigint, 0) + coalesce(sum((w->>field)::bigint), 0)
    INTO total FROM jsonb_array_elements(coalesce(node->'GpuSort Workers', '[]')) w;
  RETURN format('parallel aware %s, workers launched: %s, a report per worker: %s, %s of every process: %s',
                node->>'Parallel Aware', launched > 0, reports = launched, field,
                total = (SELECT count(*) FROM par_pages));
END $$;
SET parallel_leader_participation = off;
SELECT worker_reports('SELECT * FROM par_pages ORDER BY k, id LIMIT 10', 'Rows Read')
  AS bounded;
SELECT worker_reports('SELECT k, id FROM par_pages ORDER BY b DESC, id', 'Rows Sorted')
  AS shares;
SET gpusort.explain_details = off;
SET max_parallel_workers = 0;  -- launches none: the leader reads every row
SELECT worker_reports('SELECT * FROM par_pages ORDER BY k, id LIMIT 10', 'Rows Read')
  AS no_workers;
RESET max_parallel_workers;
RESET gpusort.explain_details;
RESET parallel_leader_participation;
