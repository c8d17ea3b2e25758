-- GpuSort at every place PostgreSQL plans a Sort (sort_sites.c): below
-- WindowAgg, GroupAggregate, Unique (DISTINCT, DISTINCT ON, UNION), SetOp,
-- both inputs of a Merge Join, under Gather Merge; in subplans, with
-- rescans, mark/restore, scrollable cursors, spills and parallel workers.
-- Each query runs with GpuSort and again with gpusort.enabled = off, and
-- the rows are compared (as multisets, and by position where the query's
-- order is defined).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA sort_sites;  -- this file's tables and functions
SET search_path = sort_sites, public;
LOAD 'gpusort';
SELECT setseed(0.25);
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
-- the sort-based plans, not the hash ones
SET enable_hashagg = off;
SET enable_hashjoin = off;
SET max_parallel_workers_per_gather = 0;

CREATE TABLE t (id int PRIMARY KEY, g int4, k int4, b int8, f float8, s int2, txt text);
INSERT INTO t
SELECT i,
  (random() * 40)::int,
  CASE WHEN i % 17 = 0 THEN NULL ELSE (random() * 300)::int END,
  CASE WHEN i % 13 = 0 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END,
  CASE WHEN i % 11 = 0 THEN 'NaN' WHEN i % 23 = 0 THEN '-0' WHEN i % 29 = 0 THEN '0'
       ELSE round((random() * 100 - 50)::numeric, 1) END,
  (random() * 20 - 10)::int2,
  md5((i % 500)::text)
FROM generate_series(1, 6000) i;
CREATE TABLE u (id int, k int4, v int8);
INSERT INTO u SELECT i, (random() * 300)::int, i * 7 FROM generate_series(1, 4000) i;
INSERT INTO u SELECT i, NULL, i FROM generate_series(1, 50) i;
ANALYZE t, u;

-- same_rows(query, ordered): runs the query with GpuSort and without; the
-- number of rows, the rows in one and not the other (as multisets), and
-- with ordered the rows at a different position. It also says whether
-- the first plan used GpuSort and makes sure the second did not.
CREATE FUNCTION same_rows(query text, ordered boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  line text;
  used boolean := false;
  total bigint;
  other_total bigint;
  differences bigint;
  misplaced bigint := 0;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    used := used OR line LIKE '%GpuSort%';
  END LOOP;
  EXECUTE format('CREATE TEMP TABLE gpu_result AS SELECT row_number() OVER () AS pos, q.* FROM (%s) q', query);
  SET LOCAL gpusort.enabled = off;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    IF line LIKE '%GpuSort%' THEN RAISE EXCEPTION 'GpuSort used with gpusort.enabled = off'; END IF;
  END LOOP;
  EXECUTE format('CREATE TEMP TABLE pg_result AS SELECT row_number() OVER () AS pos, q.* FROM (%s) q', query);
  SET LOCAL gpusort.enabled = on;
  SELECT count(*) INTO total FROM gpu_result;
  SELECT count(*) INTO other_total FROM pg_result;
  SELECT count(*) INTO differences FROM (
    (SELECT to_jsonb(gpu_row) - 'pos' FROM gpu_result gpu_row EXCEPT ALL SELECT to_jsonb(pg_row) - 'pos' FROM pg_result pg_row)
    UNION ALL
    (SELECT to_jsonb(pg_row) - 'pos' FROM pg_result pg_row EXCEPT ALL SELECT to_jsonb(gpu_row) - 'pos' FROM gpu_result gpu_row)) d;
  IF ordered THEN
    SELECT count(*) INTO misplaced FROM gpu_result gpu_row JOIN pg_result pg_row USING (pos)
      WHERE to_jsonb(gpu_row) IS DISTINCT FROM to_jsonb(pg_row);
  END IF;
  DROP TABLE gpu_result;
  DROP TABLE pg_result;
  RETURN format('gpusort=%s rows=%s/%s differences=%s misplaced=%s',
                used, total, other_total, differences, misplaced);
END $$;

-- sorted_by(query): the plan's sorting nodes in words, one of GpuSort,
-- Sort, both, none (where a plan's shape differs between 15 and 18)
CREATE FUNCTION sorted_by(query text) RETURNS text LANGUAGE sql AS $f$
  SELECT CASE WHEN bool_or(line ~ 'GpuSort') AND bool_or(line ~ '^ *(->  )?Sort$') THEN 'both'
              WHEN bool_or(line ~ 'GpuSort') THEN 'GpuSort'
              WHEN bool_or(line ~ '^ *(->  )?Sort$') THEN 'Sort' ELSE 'none' END
  FROM explain_stable(query) line
$f$;

-- ---- window functions ----
SELECT * FROM explain_stable($$
SELECT g, k, rank() OVER (PARTITION BY g ORDER BY k), sum(k) OVER (ORDER BY id DESC)
FROM t$$);
-- several windows, deterministic functions only (row_number over a unique key)
SELECT same_rows($$
SELECT id, g, k,
  rank() OVER (PARTITION BY g ORDER BY k) AS r1,
  dense_rank() OVER (PARTITION BY g ORDER BY k DESC NULLS LAST) AS r2,
  sum(k) OVER (PARTITION BY g ORDER BY k) AS s1,
  count(*) OVER (PARTITION BY k) AS c1,
  row_number() OVER (ORDER BY id DESC) AS n1,
  sum(s) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s2,
  avg(k) OVER (PARTITION BY s ORDER BY b RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
FROM t$$);
-- float keys: NaN, -0 and 0 are peers of the same rank
SELECT same_rows($$
SELECT id, f, rank() OVER (ORDER BY f), dense_rank() OVER (PARTITION BY g ORDER BY f DESC),
  count(*) OVER (PARTITION BY f)
FROM t$$);
-- a key of a type GpuSort does not take (an array) stays PostgreSQL's
-- Sort, the int keys' windows GpuSort's
SELECT * FROM explain_stable($$
SELECT rank() OVER (PARTITION BY ARRAY[g, s] ORDER BY id), rank() OVER (PARTITION BY g ORDER BY k) FROM t$$);
-- keys of several words: text under a byte-order collation (a prefix, its
-- ties resolved on the CPU) and uuid (two words)
SELECT same_rows($$
SELECT id, txt, rank() OVER (PARTITION BY txt COLLATE "C" ORDER BY k DESC, id) AS r,
  count(*) OVER (PARTITION BY md5(g::text)::uuid) AS c
FROM t$$);
SELECT same_rows($$SELECT DISTINCT txt COLLATE "C" AS txt, md5(k::text)::uuid AS u FROM t$$);
SET enable_nestloop = off;
SELECT same_rows($$
SELECT a.id, b.id AS bid FROM t a JOIN t b
  ON md5(a.g::text)::uuid = md5((b.id % 40)::text)::uuid AND a.txt COLLATE "C" = b.txt WHERE a.id <= 3000$$);
RESET enable_nestloop;
-- ORDER BY over a window: the window's sort and the ORDER BY's
SELECT same_rows($$
SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r FROM t ORDER BY r, id$$, true);
-- ... under a LIMIT, whose bound the ORDER BY's GpuSort keeps (EXPLAIN names
-- the window function's column through the WindowAgg; 15 says OVER (?)
-- where 18 names the window)
SELECT regexp_replace(line, 'OVER (w\d+|\(\?\))', 'OVER w', 'g') AS explain_stable FROM explain_stable($$
SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r FROM t ORDER BY r DESC, id LIMIT 4 OFFSET 1$$, 'VERBOSE') line;
SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r FROM t ORDER BY r DESC, id LIMIT 4 OFFSET 1;
SET gpusort.enabled = off;
SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r FROM t ORDER BY r DESC, id LIMIT 4 OFFSET 1;
RESET gpusort.enabled;

-- ---- grouping ----
SELECT * FROM explain_stable($$SELECT g, count(*) FROM t GROUP BY g$$);
SELECT same_rows($$
SELECT g, k, count(*), sum(b), min(f), max(id), array_agg(id ORDER BY id)
FROM t GROUP BY g, k$$);
SELECT same_rows($$SELECT f, count(*) FROM t GROUP BY f$$);
SELECT same_rows($$SELECT b, s, count(*) FROM t GROUP BY b, s HAVING count(*) >= 1$$);
SELECT same_rows($$SELECT g, k, count(*) FROM t GROUP BY ROLLUP (g, k)$$);

-- ---- DISTINCT, DISTINCT ON, set operations ----
SELECT * FROM explain_stable($$SELECT DISTINCT g, k FROM t$$);
SELECT same_rows($$SELECT DISTINCT g, k FROM t$$);
SELECT same_rows($$SELECT DISTINCT f FROM t$$);
SELECT * FROM explain_stable($$SELECT DISTINCT ON (g) g, k, id FROM t ORDER BY g, k DESC, id$$);
SELECT same_rows($$SELECT DISTINCT ON (g) g, k, id FROM t ORDER BY g, k DESC, id$$, true);
SELECT same_rows($$SELECT DISTINCT ON (k) k, b, id FROM t ORDER BY k NULLS FIRST, b, id$$, true);
-- (18 sorts each input below a Merge Append, 15 their Append)
SELECT sorted_by($$SELECT k FROM t UNION SELECT k FROM u$$);
SELECT same_rows($$SELECT k FROM t UNION SELECT k FROM u$$);
SELECT same_rows($$SELECT g, k FROM t UNION SELECT id, k FROM u$$);
-- (18 sorts each input of the SetOp, 15 their Append)
SELECT sorted_by($$SELECT k FROM t INTERSECT SELECT k FROM u$$);
SELECT same_rows($$SELECT k FROM t INTERSECT SELECT k FROM u$$);
SELECT same_rows($$SELECT k FROM t INTERSECT ALL SELECT k FROM u$$);
SELECT same_rows($$SELECT k FROM t EXCEPT SELECT k FROM u$$);
-- a set operation's output sorted for the ORDER BY (with hash set operations)
SET enable_hashagg = on;
SELECT same_rows($$SELECT k FROM t INTERSECT SELECT g FROM t ORDER BY 1 DESC$$, true);
RESET enable_hashagg;
SET enable_hashagg = off;
SELECT same_rows($$SELECT k FROM u EXCEPT ALL SELECT k FROM t$$);

-- ---- merge joins: both inputs, duplicates on the inner side (mark/restore) ----
SET enable_nestloop = off;
SELECT * FROM explain_stable($$SELECT t.id, u.v FROM t JOIN u ON t.k = u.k$$);
SELECT same_rows($$SELECT t.id, u.id AS uid, u.v FROM t JOIN u ON t.k = u.k$$);
SELECT same_rows($$SELECT t.id, u.id AS uid FROM t LEFT JOIN u ON t.k = u.k$$);
SELECT same_rows($$SELECT t.id, u.id AS uid FROM t FULL JOIN u ON t.k = u.k$$);
SELECT same_rows($$SELECT t.id, u.id AS uid FROM t JOIN u ON t.k = u.k AND t.g = u.id % 40$$);
SELECT same_rows($$SELECT count(*) FROM t a JOIN t b ON a.f = b.f$$);
-- the inner GpuSort is marked and restored, not materialised
SELECT count(*) FILTER (WHERE line LIKE '%Materialize%') AS materialize,
       count(*) FILTER (WHERE line LIKE '%GpuSort%') AS gpusorts
FROM explain_stable($$SELECT t.id, u.v FROM t JOIN u ON t.k = u.k$$) line;
RESET enable_nestloop;

-- ---- rescans ----
-- a GpuSort below a correlated subquery: new parameters each time
SELECT same_rows($$
SELECT id, (SELECT count(*) FROM (SELECT DISTINCT k FROM u WHERE u.id % 40 = t.g) d) AS distinct_ks
FROM t WHERE id <= 200$$);
-- the inner side of a nested loop, rescanned without new parameters
SET enable_mergejoin = off;
SET enable_material = off;
SELECT * FROM explain_stable($$
SELECT t.id, d.k FROM t JOIN (SELECT DISTINCT k FROM u) d ON t.k < d.k + 1 AND t.k > d.k - 1 WHERE t.id <= 30$$);
SELECT same_rows($$
SELECT t.id, d.k FROM t JOIN (SELECT DISTINCT k FROM u) d ON t.k < d.k + 1 AND t.k > d.k - 1 WHERE t.id <= 30$$);
RESET enable_mergejoin;
RESET enable_material;

-- ---- a scrollable cursor going backwards over a window query ----
BEGIN;
DECLARE c SCROLL CURSOR FOR
  SELECT id, g, k, rank() OVER (PARTITION BY g ORDER BY k) FROM t WHERE id % 100 = 0;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
MOVE LAST IN c;
FETCH BACKWARD 4 FROM c;
FETCH ABSOLUTE 10 FROM c;
CLOSE c;
SET LOCAL gpusort.enabled = off;
DECLARE c SCROLL CURSOR FOR
  SELECT id, g, k, rank() OVER (PARTITION BY g ORDER BY k) FROM t WHERE id % 100 = 0;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
MOVE LAST IN c;
FETCH BACKWARD 4 FROM c;
FETCH ABSOLUTE 10 FROM c;
CLOSE c;
COMMIT;

-- ---- beyond work_mem: every site spills its runs to disk ----
SET work_mem = '64kB';
SELECT same_rows($$
SELECT id, rank() OVER (PARTITION BY g ORDER BY k), sum(k) OVER (PARTITION BY k ORDER BY b) FROM t$$);
SELECT same_rows($$SELECT g, k, count(*) FROM t GROUP BY g, k$$);
SELECT same_rows($$SELECT DISTINCT ON (g) g, k, id FROM t ORDER BY g, k DESC, id$$, true);
SET enable_nestloop = off;
SELECT same_rows($$SELECT t.id, u.id AS uid, u.v FROM t JOIN u ON t.k = u.k$$);
RESET enable_nestloop;
RESET work_mem;

-- ---- parallel plans: GpuSort in each worker below Gather Merge ----
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT * FROM explain_stable($$SELECT k, count(*) FROM t GROUP BY k$$);
SELECT same_rows($$SELECT k, count(*), sum(b) FROM t GROUP BY k$$);
SELECT same_rows($$SELECT g, k, count(*) FROM t GROUP BY g, k$$);
SELECT same_rows($$SELECT DISTINCT k FROM t$$);
RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
SET max_parallel_workers_per_gather = 0;

-- ---- top-N per group: the GpuSort passes on only the rows its parent keeps ----
-- (sort_sites.c's mark_top_n(): a top WindowAgg's run condition, a Unique)
CREATE TABLE w (id int, g int4, k int4, b int8);
INSERT INTO w SELECT i, CASE WHEN i % 31 = 0 THEN NULL ELSE (random() * 25)::int END,
  CASE WHEN i % 19 = 0 THEN NULL ELSE (random() * 60)::int END, (random() * 5)::int8
FROM generate_series(1, 8000) i;
ANALYZE w;
-- top_n(function, op, n): the rows of w whose function over its group by g,
-- ordered by k (ties: row_number orders them by id too), satisfies op n
CREATE FUNCTION top_n(func text, op text, n int, part text DEFAULT 'g') RETURNS text
LANGUAGE sql AS $f$
  SELECT format('SELECT * FROM (SELECT id, g, k, b, %s() OVER (PARTITION BY %s ORDER BY k%s) AS r FROM w) s WHERE r %s %s',
                func, part, CASE WHEN func = 'row_number' THEN ', id' ELSE '' END, op, n)
$f$;
SELECT * FROM explain_stable(top_n('row_number', '<=', 3));
SELECT * FROM explain_stable(top_n('rank', '<', 3));
SELECT * FROM explain_stable($$SELECT * FROM (SELECT id, dense_rank() OVER (PARTITION BY g ORDER BY k) AS r FROM w) s WHERE 4 >= r$$);
-- (gpusort.explain_details off: no line that differs with a GPU)
SET gpusort.explain_details = off;
SELECT * FROM explain_stable(top_n('row_number', '<=', 2), 'ANALYZE');
-- row by row against PostgreSQL's plan: N = 0, 1, a few, more than any group
-- holds; ties and NULLs (a NULL group, NULL keys among the peers)
SELECT func, op, n, same_rows(top_n(func, op, n) || ' ORDER BY g, k, r, id', true)
FROM (VALUES ('row_number'), ('rank'), ('dense_rank')) f(func),
     (VALUES ('<='), ('<')) o(op), (VALUES (0), (1), (3), (100000)) n(n)
ORDER BY 1, 2, 3;
-- as the rows come (no ORDER BY above): a unique order for row_number,
-- and rank's and dense_rank's peers as sets
SELECT same_rows(top_n('row_number', '<=', 4), true);
SELECT same_rows(top_n('rank', '<=', 4));
SELECT same_rows(top_n('dense_rank', '<', 4));
-- a group of its own for NULL, several group columns, no PARTITION BY
SELECT same_rows(top_n('rank', '<=', 2, 'k'));
SELECT same_rows(top_n('row_number', '<=', 2, 'g, b'), true);
SELECT same_rows($$SELECT * FROM (SELECT id, k, rank() OVER (ORDER BY k) AS r FROM w) s WHERE r <= 30$$);
-- several run conditions, and row_number() and rank() of one window
SELECT same_rows($$SELECT * FROM (SELECT id, g, k, row_number() OVER w AS n, rank() OVER w AS r
  FROM w WINDOW w AS (PARTITION BY g ORDER BY k, id)) s WHERE n <= 5 AND r < 4$$, true);
-- not safe, so not cut: another function of the window (its frame reaches
-- later peers), a run condition on a lower window (the top one needs all
-- its rows); cut: a top window over a lower one's values
SELECT count(*) FILTER (WHERE line ~ 'Rows Kept') AS cut FROM explain_stable($$
SELECT * FROM (SELECT id, rank() OVER w AS r, sum(b) OVER w AS s FROM w WINDOW w AS (PARTITION BY g ORDER BY k)) s
WHERE r <= 2$$) line;
SELECT same_rows($$
SELECT * FROM (SELECT id, rank() OVER w AS r, sum(b) OVER w AS s FROM w WINDOW w AS (PARTITION BY g ORDER BY k)) s
WHERE r <= 2$$);
SELECT count(*) FILTER (WHERE line ~ 'Rows Kept') AS cut FROM explain_stable($$
SELECT * FROM (SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r, count(*) OVER (PARTITION BY g) AS c FROM w) s
WHERE r <= 2$$) line;
-- (nor a volatile function the WindowAgg computes for every row)
CREATE SEQUENCE top_n_calls;
SELECT count(*) FILTER (WHERE line ~ 'Rows Kept') AS cut FROM explain_stable($$
SELECT * FROM (SELECT id, nextval('top_n_calls') AS v, row_number() OVER (PARTITION BY g ORDER BY k, id) AS r FROM w) s
WHERE r <= 2$$) line;
SELECT same_rows($$
SELECT * FROM (SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r, count(*) OVER (PARTITION BY g) AS c FROM w) s
WHERE r <= 2$$);
SELECT count(*) FILTER (WHERE line ~ 'Rows Kept') AS cut FROM explain_stable($$
SELECT * FROM (SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r, count(*) OVER (PARTITION BY b ORDER BY id) AS c FROM w) s
WHERE r <= 2$$) line;
SELECT same_rows($$
SELECT * FROM (SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r, count(*) OVER (PARTITION BY b ORDER BY id) AS c FROM w) s
WHERE r <= 2$$);
-- DISTINCT ON, DISTINCT and UNION: one row per group
SELECT * FROM explain_stable($$SELECT DISTINCT ON (g) g, k, id FROM w ORDER BY g, k DESC, id$$, 'ANALYZE');
RESET gpusort.explain_details;
SELECT same_rows($$SELECT DISTINCT ON (g) g, k, id FROM w ORDER BY g, k DESC NULLS LAST, id$$, true);
SELECT same_rows($$SELECT DISTINCT ON (g, b) g, b, k, id FROM w ORDER BY g, b, k, id$$, true);
SELECT same_rows($$SELECT DISTINCT g, k FROM w$$);
SELECT same_rows($$SELECT g, k FROM w UNION SELECT k, g FROM w$$);
-- a cursor read a few rows at a time, and backwards
BEGIN;
DECLARE c SCROLL CURSOR FOR
  SELECT * FROM (SELECT id, g, k, row_number() OVER (PARTITION BY g ORDER BY k, id) AS r FROM w) s WHERE r <= 2;
FETCH 3 FROM c;
FETCH 3 FROM c;
FETCH BACKWARD 4 FROM c;
MOVE LAST IN c;
FETCH BACKWARD 2 FROM c;
CLOSE c;
SET LOCAL gpusort.enabled = off;
DECLARE c SCROLL CURSOR FOR
  SELECT * FROM (SELECT id, g, k, row_number() OVER (PARTITION BY g ORDER BY k, id) AS r FROM w) s WHERE r <= 2;
FETCH 3 FROM c;
FETCH 3 FROM c;
FETCH BACKWARD 4 FROM c;
MOVE LAST IN c;
FETCH BACKWARD 2 FROM c;
CLOSE c;
COMMIT;
-- rescans: new parameters each time, and the same input read again
SELECT same_rows($$
SELECT x, (SELECT sum(id) FROM (SELECT id, rank() OVER (PARTITION BY g ORDER BY k) AS r FROM w WHERE w.id % 7 = x) s
           WHERE r <= 2) FROM generate_series(0, 6) x$$, true);
SET enable_mergejoin = off;
SET enable_material = off;
SELECT same_rows($$
SELECT x, s.id FROM generate_series(1, 3) x,
  (SELECT DISTINCT ON (g) g, id FROM w ORDER BY g, k, id) s WHERE s.g = x OR s.g IS NULL$$);
RESET enable_mergejoin;
RESET enable_material;
-- beyond work_mem: cut as the rows fill memory (few groups), as runs are
-- written and merged (many groups; or, with the GPU service, as the rows
-- come back from its memory), and into the file a cursor reads back
SET work_mem = '64kB';
SELECT regexp_replace(line, '\d+', 'N', 'g') AS plan_lines FROM explain_stable(top_n('row_number', '<=', 2), 'ANALYZE') line
WHERE line ~ 'Group|Sort Method';
SELECT same_rows(top_n('row_number', '<=', 2), true);
SELECT regexp_replace(regexp_replace(line, '\d+', 'N', 'g'), 'Sort Method: (external merge|rows in GPU memory).*',
                      'Sort Method: beyond work_mem') AS plan_lines
FROM explain_stable(top_n('rank', '<=', 2, 'id % 1500'), 'ANALYZE') line
WHERE line ~ 'Group|Sort Method';
SELECT same_rows(top_n('rank', '<=', 2, 'id % 1500'));
SELECT same_rows(top_n('dense_rank', '<=', 3, 'id % 2000') || ' ORDER BY g, k, r, id', true);
SELECT same_rows($$SELECT DISTINCT ON (id % 3000) id % 3000, k, id FROM w ORDER BY id % 3000, k, id$$, true);
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT * FROM (SELECT id, rank() OVER (PARTITION BY id % 1500 ORDER BY k) AS r FROM w) s WHERE r <= 1;
MOVE LAST IN c;
FETCH BACKWARD 3 FROM c;
SET LOCAL gpusort.enabled = off;
DECLARE d SCROLL CURSOR FOR SELECT * FROM (SELECT id, rank() OVER (PARTITION BY id % 1500 ORDER BY k) AS r FROM w) s WHERE r <= 1;
MOVE LAST IN d;
FETCH BACKWARD 3 FROM d;
COMMIT;
RESET work_mem;
-- each worker's rows cut below a Gather Merge
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT * FROM explain_stable($$SELECT DISTINCT ON (g) g, k, id FROM w ORDER BY g, k, id$$);
SELECT same_rows($$SELECT DISTINCT ON (g) g, k, id FROM w ORDER BY g, k, id$$, true);
SELECT same_rows(top_n('rank', '<=', 3));
RESET parallel_leader_participation;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
SET max_parallel_workers_per_gather = 0;

-- ---- Incremental Sort: a full GpuSort of all its keys where the costs say so ----
CREATE TABLE inc AS SELECT i AS id, i % 7 AS few, i / 2 AS pairs, (random() * 1000)::int AS k
FROM generate_series(1, 60000) i;
CREATE INDEX ON inc (few);
CREATE INDEX ON inc (pairs);
ANALYZE inc;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET gpusort.enabled = off;
SELECT * FROM explain_stable($$SELECT few, k, rank() OVER (PARTITION BY few ORDER BY k) FROM inc$$);
RESET gpusort.enabled;
-- with gpusort.min_rows = 0 every one, also below a top-N per group
SELECT * FROM explain_stable($$SELECT few, k, rank() OVER (PARTITION BY few ORDER BY k) FROM inc$$);
SELECT same_rows($$SELECT id, few, k, rank() OVER (PARTITION BY few ORDER BY k) FROM inc WHERE k < 50$$);
SELECT same_rows($$SELECT * FROM (SELECT id, few, k, row_number() OVER (PARTITION BY few ORDER BY k, id) AS r FROM inc) s
WHERE r <= 5$$, true);
-- by cost: groups of two rows stay PostgreSQL's (its sorts are tiny)
SET gpusort.min_rows = 50000;
SELECT count(*) FILTER (WHERE line ~ 'Incremental Sort') AS incremental,
       count(*) FILTER (WHERE line ~ 'GpuSort') AS gpusort
FROM explain_stable($$SELECT pairs, k, rank() OVER (PARTITION BY pairs ORDER BY k) FROM inc$$) line;
SET gpusort.min_rows = 0;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- ---- the settings keep their meaning ----
-- a bounded sort (ORDER BY ... LIMIT) is the ORDER BY path's to weigh
SELECT * FROM explain_stable($$SELECT txt FROM t ORDER BY txt LIMIT 3$$);
-- gpusort.min_rows above the input's rows: PostgreSQL's Sort stays
SET gpusort.min_rows = 1000000;
SELECT * FROM explain_stable($$SELECT g, count(*) FROM t GROUP BY g$$);
RESET gpusort.min_rows;
SET gpusort.min_rows = 0;
-- gpusort.enabled = off: no GpuSort anywhere
SET gpusort.enabled = off;
SELECT * FROM explain_stable($$SELECT DISTINCT g, k FROM t$$);
RESET gpusort.enabled;

-- ---- a hashed aggregation that would spill ----
-- becomes a GroupAggregate over a GpuSort by its grouping columns; one
-- that fits work_mem stays hashed, as do grouping sets
SET enable_hashagg = on;
SET work_mem = '64kB';
SELECT * FROM explain_stable($$SELECT DISTINCT b, g FROM t$$);
SELECT * FROM explain_stable($$SELECT g, b, count(*) FROM t GROUP BY g, b HAVING count(*) > 0$$);
SELECT same_rows($$SELECT DISTINCT b, g FROM t$$);
SELECT same_rows($$
SELECT g, k, count(*), sum(b), min(id), max(f), array_agg(id ORDER BY id)
FROM t GROUP BY g, k HAVING count(*) > 1 OR min(id) % 3 = 0$$);
-- NULL groups, float groups (NaN one group, -0 and 0 another), int2
SELECT same_rows($$SELECT b, count(*), sum(id) FROM t GROUP BY b$$);
SELECT same_rows($$SELECT f, s, count(*), array_agg(id ORDER BY id) FROM t GROUP BY f, s$$);
SELECT same_rows($$SELECT count(*) FROM (SELECT DISTINCT id / 2, s FROM t) d$$);
-- below a join and in a subquery
SELECT same_rows($$
SELECT t.g, count(*), sum(u.v) FROM t JOIN u ON u.k = t.k GROUP BY t.g, t.id$$);
SELECT sorted_by($$SELECT g, count(*) FROM t GROUP BY ROLLUP (g, k)$$);
SET work_mem = '4MB';
SELECT sorted_by($$SELECT DISTINCT b, g FROM t$$);
RESET work_mem;
RESET enable_hashagg;

DROP SCHEMA sort_sites CASCADE;
