-- ORDER BY through GpuSort, compared row by row with PostgreSQL's own sort
-- (gpusort.enabled = off) using row_number().
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by;  -- this file's tables and functions
SET search_path = order_by, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
SELECT setseed(0.5);  -- the same test data every run
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;

CREATE TABLE t (id int PRIMARY KEY, k int4, s int2, b int8, g int4, d date, ts timestamp, f float8, txt text);
INSERT INTO t
SELECT i,
  CASE WHEN i % 17 = 0 THEN NULL ELSE (random() * 2000000 - 1000000)::int END,
  (random() * 200 - 100)::int2,
  CASE WHEN i % 13 = 0 THEN NULL ELSE ((random() - 0.5) * 1.8e19)::numeric::int8 END,
  (random() * 10)::int,
  date '2020-01-01' + (random() * 1000)::int,
  timestamp '2020-01-01' + random() * interval '1000 days',
  CASE WHEN i % 11 = 0 THEN 'NaN' ELSE random() * 100 - 50 END,
  md5(i::text)
FROM generate_series(1, 20000) i;
ANALYZE t;

-- same_order(query, keys): setup.sql

-- every key type, both directions, NULL placement
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM t ORDER BY k', 'k'),
  ('SELECT * FROM t ORDER BY k DESC', 'k'),
  ('SELECT * FROM t ORDER BY k NULLS FIRST', 'k'),
  ('SELECT * FROM t ORDER BY k DESC NULLS LAST', 'k'),
  ('SELECT * FROM t ORDER BY s', 's'),
  ('SELECT * FROM t ORDER BY b', 'b'),
  ('SELECT * FROM t ORDER BY b DESC', 'b'),
  ('SELECT * FROM t ORDER BY d DESC', 'd'),
  ('SELECT * FROM t ORDER BY ts', 'ts'),
  ('SELECT * FROM t ORDER BY f', 'f'),
  ('SELECT * FROM t ORDER BY f DESC NULLS LAST', 'f'),
  ('SELECT id, g FROM t ORDER BY g DESC', 'g')
) v(q, k);

-- pairs and more keys, mixed directions; expressions as keys
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM t ORDER BY g, k', 'g, k'),
  ('SELECT * FROM t ORDER BY g DESC, k NULLS FIRST', 'g, k'),
  ('SELECT * FROM t ORDER BY s, b DESC', 's, b'),
  ('SELECT * FROM t ORDER BY b, k', 'b, k'),
  ('SELECT * FROM t ORDER BY g, s DESC, k', 'g, s, k'),
  ('SELECT * FROM t ORDER BY d, g, k DESC NULLS LAST, id', 'd, g, k, id'),
  ('SELECT id, k % 100 AS m FROM t ORDER BY k % 100, id', 'm, id'),
  ('SELECT id, abs(b) AS a FROM t ORDER BY abs(b) DESC', 'a'),
  ('SELECT g, count(*) AS c FROM t GROUP BY g ORDER BY count(*) DESC, g', 'c, g')
) v(q, k);

-- LIMIT and OFFSET (a bounded sort), also past the end. Where ties cross
-- the limit PostgreSQL may return any of the tied rows, so those queries
-- add id to the keys.
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM t ORDER BY k LIMIT 10', 'k'),
  ('SELECT * FROM t ORDER BY k DESC, id LIMIT 100 OFFSET 50', 'k, id'),
  ('SELECT * FROM t ORDER BY b NULLS FIRST, id LIMIT 2000', 'b, id'),
  ('SELECT * FROM t ORDER BY g, k LIMIT 7', 'g, k'),
  ('SELECT * FROM t ORDER BY k, id OFFSET 19990', 'k, id'),
  ('SELECT * FROM t ORDER BY k LIMIT 5 OFFSET 30000', 'k'),
  ('SELECT * FROM t ORDER BY k LIMIT 0', 'k')
) v(q, k);

-- joins, subqueries, CTEs, UNION, window functions over a sorted input
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT t.id, u.k FROM t JOIN t u ON u.id = t.id + 1 ORDER BY u.k, t.id', 'k, id'),
  ('SELECT x.id, x.k FROM t x JOIN (SELECT g, max(k) AS mk FROM t GROUP BY g) m ON m.g = x.g ORDER BY m.mk, x.k', 'k'),
  ('SELECT * FROM (SELECT id, k FROM t WHERE g < 5 ORDER BY k, id LIMIT 300) s', 'id'),
  ('WITH c AS MATERIALIZED (SELECT id, k, g FROM t WHERE g > 2) SELECT * FROM c ORDER BY k DESC', 'k'),
  ('SELECT k FROM t UNION ALL SELECT k + 1 FROM t ORDER BY 1', 'k'),
  ('SELECT k, id FROM t WHERE g < 3 UNION ALL SELECT g, id FROM t WHERE g > 7 ORDER BY 1 DESC, 2', 'k, id'),
  ('SELECT id, k, row_number() OVER () AS rn FROM (SELECT * FROM t ORDER BY k, id) s', 'id, rn'),
  ('SELECT id, k, sum(k) OVER (ORDER BY k, id) AS running FROM t ORDER BY b, id', 'id, running'),
  ('SELECT id FROM t WHERE k IN (SELECT k FROM t ORDER BY k LIMIT 50) ORDER BY id', 'id')
) v(q, k);

-- a partitioned table: one GpuSort over the Append of its partitions ...
CREATE TABLE parted (id int, k int, b bigint) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (7000);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (7000) TO (14000);
CREATE TABLE parted_3 PARTITION OF parted FOR VALUES FROM (14000) TO (MAXVALUE);
INSERT INTO parted SELECT id, k, b FROM t;
ANALYZE parted;
EXPLAIN (COSTS OFF) SELECT * FROM parted ORDER BY k, id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM parted ORDER BY k, id', 'k, id'),
  ('SELECT * FROM parted ORDER BY b DESC NULLS LAST LIMIT 100', 'b'),
  ('SELECT * FROM parted WHERE id > 5000 ORDER BY k NULLS FIRST, b', 'k, b')
) v(q, k);
-- ... and where the whole would outgrow work_mem but each partition fits,
-- a Merge Append of one GpuSort per partition (each bounded under a LIMIT);
-- on the CPU, whose costs are the same on every machine (on a GPU the
-- fixed cost of a job per partition tips these 20000 rows the other way)
SET work_mem = '1MB';
SET max_parallel_workers_per_gather = 0;
SET gpusort.device = cpu;
EXPLAIN (COSTS OFF) SELECT * FROM parted ORDER BY k, id;
EXPLAIN (COSTS OFF) SELECT * FROM parted ORDER BY b DESC, id LIMIT 10 OFFSET 5;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM parted ORDER BY k, id', 'k, id'),
  ('SELECT * FROM parted ORDER BY b DESC, id LIMIT 10 OFFSET 5', 'b, id'),
  ('SELECT id, k FROM parted WHERE id > 5000 ORDER BY k NULLS FIRST, id DESC', 'k, id')
) v(q, k);
RESET gpusort.device;
RESET max_parallel_workers_per_gather;
RESET work_mem;

-- rescans: the inner side of a nested loop, with and without new parameters
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT x, s.id, s.k FROM generate_series(0, 4) x, LATERAL (SELECT id, k FROM t WHERE t.g = x ORDER BY k LIMIT 5) s', 'x, id'),
  ('SELECT x, s.id FROM generate_series(1, 3) x, LATERAL (SELECT id FROM t WHERE g = 1 ORDER BY k DESC, id LIMIT 4) s', 'x, id')
) v(q, k);
RESET enable_hashjoin;
RESET enable_mergejoin;

-- empty input, all-NULL keys, duplicate keys
CREATE TABLE edge (id int, k int, b bigint);
SELECT same_order('SELECT * FROM edge ORDER BY k', 'k') AS empty;
INSERT INTO edge SELECT i, NULL, NULL FROM generate_series(1, 100) i;
SELECT same_order('SELECT * FROM edge ORDER BY k, id', 'k, id') AS all_null;
SELECT same_order('SELECT * FROM edge ORDER BY b DESC NULLS FIRST, k, id', 'id') AS all_null_pair;
INSERT INTO edge SELECT i, i % 3, 42 FROM generate_series(101, 400) i;
SELECT same_order('SELECT * FROM edge ORDER BY k DESC, b, id', 'k, b, id') AS duplicates;
SELECT same_order('SELECT * FROM edge ORDER BY b', 'b') AS one_value;
-- GpuSort keeps ties in input order (a stable sort)
SELECT array_agg(id) AS ties_in_input_order
FROM (SELECT id FROM (SELECT * FROM edge WHERE id BETWEEN 101 AND 130 ORDER BY id DESC) s0
      ORDER BY k LIMIT 10) s;

-- keys read straight from the scan's tuples where the columns before them
-- have fixed lengths, else deformed: columns added since some rows were
-- written (those rows lack them), dropped columns before a key (old rows
-- keep their values, new ones a NULL), a text column before a key,
-- alignment padding before an int8 key
CREATE TABLE layout (a int2, dropped_fixed int4, dropped_text text, k int4, b int8);
INSERT INTO layout SELECT i % 7, i, md5(i::text), (i * 7919) % 1009, i::int8 * 1000003 FROM generate_series(1, 3000) i;
ALTER TABLE layout ADD COLUMN added int4 DEFAULT 5;
ALTER TABLE layout ADD COLUMN added_null int8;
INSERT INTO layout SELECT i % 7, i, md5(i::text), (i * 7919) % 1009, i::int8 * 1000003, i % 13, i % 5 FROM generate_series(3001, 4000) i;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM layout ORDER BY b DESC', 'b'),
  ('SELECT * FROM layout ORDER BY added, added_null NULLS FIRST, b', 'added, added_null, b'),
  ('SELECT * FROM layout ORDER BY added DESC, b LIMIT 50', 'added, b')
) v(q, k);
ALTER TABLE layout DROP COLUMN dropped_fixed;
INSERT INTO layout SELECT i % 7, md5(i::text), (i * 7919) % 1009, i::int8 * 1000003, i % 13, i % 5 FROM generate_series(4001, 5000) i;
SELECT same_order('SELECT * FROM layout ORDER BY k, b', 'k, b') AS after_drop_fixed;
ALTER TABLE layout DROP COLUMN dropped_text;
SELECT same_order('SELECT * FROM layout ORDER BY a, k DESC, b LIMIT 300', 'a, k, b') AS after_drop_text;
CREATE TABLE layout_clean (a int2, b int8, k int4, f float4, t text, after_text int4);
INSERT INTO layout_clean SELECT i % 7, i::int8 * 1000003, (i * 7919) % 1009,
  CASE WHEN i % 9 = 0 THEN 'NaN' ELSE (i % 101) / 7.0 END, md5(i::text), i % 17 FROM generate_series(1, 3000) i;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM layout_clean ORDER BY f DESC, b', 'f, b'),
  ('SELECT * FROM layout_clean ORDER BY after_text, a, k, b', 'after_text, a, k, b')
) v(q, k);

-- rows a projection makes (virtual slots) are formed straight where they
-- go: NULLs in every column, text, numeric, a value stored out of line; in
-- memory and in runs on disk
CREATE TABLE formed (id int, a int2, t text, n numeric, big text);
INSERT INTO formed SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE i % 100 END,
  CASE WHEN i % 5 = 0 THEN NULL ELSE md5(i::text) END, CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1.5 END,
  CASE WHEN i % 500 = 0 THEN repeat(md5(i::text), 400) END
FROM generate_series(1, 3000) i;
SELECT same_order('SELECT id, id % 97 AS key, a, t || ''x'' AS t2, n + 1 AS n1, big FROM formed ORDER BY key, id', 'key, id') AS formed_in_memory;
SET work_mem = '64kB';
SELECT same_order('SELECT id, id % 97 AS key, a, t || ''x'' AS t2, n + 1 AS n1, big FROM formed ORDER BY key DESC, id', 'key, id') AS formed_in_runs;
RESET work_mem;
-- every kind of value a formed tuple holds: by value and by reference,
-- fixed and variable length, 1- and 4-byte varlena headers (computed ones
-- short enough take a 1-byte one, as PostgreSQL forms them), plain
-- storage, compressed and out of line (TOAST pointers), a cstring, NULLs
-- past the bitmap's first byte
CREATE TABLE formed_kinds AS SELECT i AS id,
  CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 0 END AS b,
  CASE WHEN i % 4 = 0 THEN NULL ELSE (i % 30000)::int2 END AS i2,
  i::int8 * 1000000007 AS i8, CASE WHEN i % 5 = 0 THEN NULL ELSE i / 7.0::float8 END AS f8,
  md5(i::text)::uuid AS u, make_interval(days => i % 40, secs => i) AS iv, point(i, -i) AS p,
  ('name ' || i)::name AS nm, CASE WHEN i % 6 = 0 THEN NULL ELSE ('1 2 ' || i)::oidvector END AS ov,
  (i % 10)::text::char(3) AS ch, CASE WHEN i % 7 = 0 THEN NULL ELSE i * 1.25 END AS n,
  ARRAY[i, i + 1, NULL] AS arr, jsonb_build_object('i', i) AS j, date '2020-01-01' + i % 1000 AS d,
  CASE WHEN i % 9 = 0 THEN NULL ELSE md5(i::text) END AS small,
  CASE WHEN i % 300 = 0 THEN repeat(md5(i::text), 300) END AS compressed,
  CASE WHEN i % 250 = 0 THEN (SELECT string_agg(md5((i * 1000 + g)::text), '') FROM generate_series(1, 80) g) END AS external
FROM generate_series(1, 3000) i;
SELECT same_order($$SELECT key, id, b, i2, i8, f8, u, iv, p, nm, ov, ch, n, arr, j, d, small,
  short_computed, long_computed, compressed, external, late_null, cs::text AS cs
  FROM (SELECT id % 101 AS key, id, b, i2, i8, f8, u, iv, p, nm, ov, ch, n, arr, j, d, small,
    small || 'x' AS short_computed, repeat(small, 5) AS long_computed, compressed, external,
    CASE WHEN id % 11 = 0 THEN NULL ELSE id END AS late_null, (id || ' c')::cstring AS cs
    FROM formed_kinds ORDER BY key, id OFFSET 0) sorted$$, 'key, id') AS formed_kinds;
SET work_mem = '64kB';
SELECT same_order($$SELECT id % 101 AS key, id, b, i2, i8, f8, u, iv, p, nm, ov, ch, n, arr, j, d, small,
  small || 'x' AS short_computed, repeat(small, 5) AS long_computed, compressed, external,
  CASE WHEN id % 11 = 0 THEN NULL ELSE id END AS late_null
  FROM formed_kinds ORDER BY key DESC, id LIMIT 2000$$, 'key, id') AS formed_kinds_in_runs;
RESET work_mem;

-- prepared statements with a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE by_group(int) AS SELECT id, k FROM t WHERE g = $1 ORDER BY k, id;
CREATE TEMP TABLE gpu_prepared AS EXECUTE by_group(3);
SET gpusort.enabled = off;
CREATE TEMP TABLE pg_prepared AS EXECUTE by_group(3);
SET gpusort.enabled = on;
EXPLAIN (COSTS OFF) EXECUTE by_group(3);
SELECT count(*) AS rows, bool_and(a.id = b.id) AS same_order
FROM (SELECT row_number() OVER () AS pos, * FROM gpu_prepared) a
JOIN (SELECT row_number() OVER () AS pos, * FROM pg_prepared) b USING (pos);
PREPARE by_limit(int) AS SELECT id, k FROM t ORDER BY k DESC LIMIT $1;
EXPLAIN (COSTS OFF) EXECUTE by_limit(5);
EXECUTE by_limit(3);
RESET plan_cache_mode;
DEALLOCATE ALL;

-- a larger input: bounded sorts prune their buffer, and an input larger
-- than work_mem is sorted in runs written to disk and merged
-- (created, then filled: PostgreSQL 18 extends a table being created
-- by CREATE TABLE AS by many pages at once, and its page count would differ)
CREATE TABLE big (id int, k int, pad text);
INSERT INTO big SELECT i, (random() * 1e9)::int, md5(i::text)
FROM generate_series(1, 200000) i;
ANALYZE big;
SELECT same_order('SELECT * FROM big ORDER BY k LIMIT 1000', 'k') AS bounded;
SELECT same_order('SELECT * FROM big ORDER BY k DESC LIMIT 40000 OFFSET 10', 'k') AS bounded_large;
-- prunes move the rows they keep up in the memory they lie in, in order;
-- a few rows wider than its blocks (formed by the scan's projection, with
-- keys that keep them) are passed over, moved, and followed by narrow ones
SELECT same_order($$SELECT id, CASE WHEN id % 49999 = 0 THEN k % 1000000 ELSE k END AS k,
  CASE WHEN id % 49999 = 0 THEN repeat(pad, 10000) ELSE pad END AS wide
  FROM big ORDER BY 2 LIMIT 3000$$, 'k') AS pruned_wide_rows;
SET work_mem = '1MB';
SELECT same_order('SELECT * FROM big ORDER BY k', 'k') AS spilled;
SELECT same_order('SELECT * FROM big ORDER BY k LIMIT 50000', 'k') AS spilled_bounded;
SELECT same_order($$SELECT id, k, CASE WHEN id % 293 = 0 THEN repeat(pad, 3000) ELSE pad END AS wide
  FROM big ORDER BY k LIMIT 300$$, 'k') AS pruned_wide_rows_small_memory;
-- a bound whose rows outgrow work_mem, but not their keys: once the runs
-- hold `bound` rows, later rows that cannot make it are not kept
SELECT same_order('SELECT * FROM big ORDER BY k DESC LIMIT 20000', 'k') AS spilled_bound_pruned;
SELECT same_order('SELECT * FROM big ORDER BY k LIMIT 15000 OFFSET 5000', 'k') AS spilled_bound_offset;
CREATE FUNCTION rows_kept(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; kept bigint; read bigint;
BEGIN
  PERFORM set_config('gpusort.explain_details', 'on', true);
  PERFORM set_config('gpusort.spill_to_gpu', 'off', true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);  -- one bounded GpuSort
  FOR line IN SELECT explain_stable(query, 'ANALYZE') LOOP
    IF line ~ 'Rows Sorted: ' THEN kept := substring(line from 'Rows Sorted: (\d+)')::bigint; END IF;
    IF line ~ 'Rows Read: ' THEN read := substring(line from 'Rows Read: (\d+)')::bigint; END IF;
  END LOOP;
  RETURN CASE WHEN kept IS NULL OR read IS NULL THEN 'no figures'
              WHEN kept * 2 < read THEN 'fewer than half the rows kept'
              ELSE format('%s of %s rows kept', kept, read) END;
END $$;
SELECT rows_kept('SELECT * FROM big ORDER BY k DESC LIMIT 20000') AS spilled_bound_kept;
RESET work_mem;
-- with the costs deciding: where parallel workers could read the input, a
-- serial bounded GpuSort (one core reading every row) is not offered; a
-- Gather Merge over bounded partial GpuSorts is, and wins or loses to
-- PostgreSQL's plans by the costs (with a GPU expected, or not, they
-- differ); without workers GpuSort takes it
RESET gpusort.min_rows;
CREATE FUNCTION below_limit(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    IF line ~ '->' THEN RETURN regexp_replace(line, '^\s*->\s*', ''); END IF;
  END LOOP;
  RETURN NULL;
END $$;
SELECT below_limit('SELECT * FROM big ORDER BY k LIMIT 100000') IN ('Sort', 'Gather Merge')
  AS no_serial_bounded_gpusort;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM big ORDER BY k LIMIT 100000;
RESET max_parallel_workers_per_gather;
SET gpusort.min_rows = 0;
-- at 64kB: some 200 runs, more than one merge reads at once, so runs are
-- merged in passes first; several keys, NULLs both ways, bounds
SET work_mem = '64kB';
CREATE TABLE big_nulls AS
SELECT id, CASE WHEN id % 7 = 0 THEN NULL ELSE k % 5000 END AS m, k, pad,
       id % 3 AS g3, CASE WHEN id % 11 = 0 THEN NULL ELSE id % 97 END AS n2
FROM big;
ANALYZE big_nulls;
SELECT same_order('SELECT * FROM big ORDER BY k DESC', 'k') AS merge_passes;
SELECT same_order('SELECT * FROM big_nulls ORDER BY m DESC NULLS LAST, id', 'm, id') AS spilled_keys;
SELECT same_order('SELECT id, m FROM big_nulls ORDER BY m NULLS FIRST, id LIMIT 30000', 'm, id') AS spilled_bound;
SELECT same_order('SELECT id, m FROM big_nulls ORDER BY m, id DESC LIMIT 10 OFFSET 150000', 'm, id') AS spilled_offset;
-- the merges pack narrow leading keys into one word: NULLs in a later key
-- column, either end, with DESC around them (serial here, parallel in
-- order_by_parallel)
SET max_parallel_workers_per_gather = 0;
SELECT same_order('SELECT id, g3, m FROM big_nulls ORDER BY g3, m, id', 'g3, m, id') AS packed_keys;
SELECT same_order('SELECT id, g3, m FROM big_nulls ORDER BY g3 DESC, m DESC NULLS LAST, id DESC', 'g3, m, id') AS packed_desc;
SELECT same_order('SELECT id, g3, n2, m FROM big_nulls ORDER BY g3, n2 NULLS FIRST, m DESC, id', 'g3, n2, m, id') AS packed_nulls;
SELECT same_order('SELECT id, g3, k FROM big_nulls ORDER BY g3, k, id', 'g3, k, id') AS packed_three;
-- (a range of 2^60: id is left out of the word, and compared on ties)
SELECT same_order('SELECT id, g3, (k % 100)::int8 * 10000000000000000 AS kk FROM big_nulls ORDER BY g3, kk, id DESC', 'g3, kk, id') AS packed_prefix;
RESET max_parallel_workers_per_gather;
-- (runs in temporary files: with the GPU service, rows beyond work_mem
-- would go to its memory instead; test/service/run.sh tests that)
SET gpusort.spill_to_gpu = off;
SET gpusort.explain_details = off;
SET max_parallel_workers_per_gather = 0;
SELECT explain_stable('SELECT * FROM big ORDER BY k', 'ANALYZE') AS "QUERY PLAN";
RESET max_parallel_workers_per_gather;
RESET gpusort.explain_details;
RESET gpusort.spill_to_gpu;
-- memory keeps to work_mem (above the 256 kB a run may always take): the
-- rows, their arrays and order while gathering, the rows left in memory and
-- every run's reading while merging; 64 kB of slack for the allocator's
-- blocks and the run's write buffer
CREATE FUNCTION sort_memory(query text, mem text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; runs int; kb int; limit_kb int;
BEGIN
  PERFORM set_config('work_mem', mem, true);
  PERFORM set_config('max_parallel_workers_per_gather', '0', true);
  PERFORM set_config('gpusort.explain_details', 'on', true);
  PERFORM set_config('gpusort.spill_to_gpu', 'off', true);
  limit_kb := pg_size_bytes(mem) / 1024;
  FOR line IN SELECT explain_stable(query, 'ANALYZE') LOOP
    IF line ~ 'Sorted Runs: ' THEN runs := substring(line from 'Sorted Runs: (\d+)')::int; END IF;
    IF line ~ '^ *Memory: ' THEN kb := substring(line from 'Memory: (\d+) kB')::int; END IF;
  END LOOP;
  RETURN CASE WHEN runs IS NULL OR runs < 2 THEN 'not spilled'
              WHEN kb IS NULL THEN 'no Memory line'
              WHEN kb > limit_kb + 64 THEN format('%s kB, over %s', kb, mem)
              ELSE 'within work_mem' END;
END $$;
BEGIN;
SELECT q, m, sort_memory(q, m) FROM (VALUES
  ('SELECT * FROM big ORDER BY k', '1MB'),
  ('SELECT * FROM big ORDER BY k', '4MB'),
  ('SELECT * FROM big_nulls ORDER BY g3, m, id', '1MB'),
  ('SELECT * FROM big_nulls ORDER BY g3, n2, m DESC, k, id', '4MB'),
  ('SELECT * FROM big ORDER BY k DESC LIMIT 60000', '1MB')
) v(q, m);
COMMIT;
-- rescans read the merged runs again; new parameters sort anew
SET enable_mergejoin = off;
SET enable_hashjoin = off;
SET enable_material = off;
SELECT same_order('SELECT x, s.id FROM generate_series(1, 3) x, LATERAL (SELECT id FROM big_nulls WHERE m < 2000 + x ORDER BY m, id OFFSET 57000) s', 'x, id') AS spilled_rescans;
-- a subplan rescanned with the same input reads the runs again, merging
SELECT same_order('SELECT x, (SELECT array_agg(id) FROM (SELECT id FROM big_nulls ORDER BY m DESC, id OFFSET 199990) s WHERE x > 0) FROM generate_series(1, 3) x', 'x') AS spilled_rewinds;
RESET enable_material;
RESET enable_mergejoin;
RESET enable_hashjoin;
-- rows of 20 kB, larger than what a merge reads ahead of each run at once
SET max_parallel_workers_per_gather = 0;
SELECT same_order('SELECT id, k, repeat(pad, 640) AS wide FROM big WHERE id <= 1100 ORDER BY k', 'k') AS spilled_wide;
RESET max_parallel_workers_per_gather;
SELECT same_order('SELECT id, k, repeat(pad, 640) AS wide FROM big WHERE id <= 1100 ORDER BY k DESC', 'k') AS spilled_wide_shares;
RESET work_mem;

-- GpuSort reads a plain Seq Scan's table pages itself (gpusort.read_table_pages),
-- projecting the rows it keeps where the scan picks columns: every
-- visibility case a page can hold, compared with PostgreSQL's sort.
CREATE TABLE pages (id int, k int4, pad text);
INSERT INTO pages SELECT i, (random() * 100000)::int, md5(i::text)
  FROM generate_series(1, 30000) i;
VACUUM ANALYZE pages;  -- all-visible pages: no per-tuple visibility check
UPDATE pages SET k = k + 1 WHERE id % 3 = 0;  -- HOT chains, pages pruned later
UPDATE pages SET k = k - 2 WHERE id % 3 = 0;
BEGIN;  -- dead tuples of an aborted insert
INSERT INTO pages SELECT i, -i, 'aborted' FROM generate_series(1, 5000) i;
ROLLBACK;
ALTER TABLE pages ADD COLUMN late int4;  -- older tuples lack it: NULL
INSERT INTO pages SELECT i, (random() * 100000)::int, md5(i::text),
  CASE WHEN i % 5 = 0 THEN NULL ELSE i % 1000 END FROM generate_series(30001, 36000) i;
ANALYZE pages;
-- read_pages(query): whether GpuSort read the table pages, and the Seq
-- Scan's rows (and those its filter removed) in EXPLAIN ANALYZE
CREATE FUNCTION read_pages(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; pages boolean := false; scan_rows text; loops text; removed text;
BEGIN
  FOR line IN SELECT explain_stable(query, 'ANALYZE') LOOP
    pages := pages OR line ~ 'Table Pages Read by GpuSort: [1-9]';
    IF line ~ 'Seq Scan' THEN
      scan_rows := substring(line from 'rows=(\d+)');
      loops := substring(line from 'loops=(\d+)');
    END IF;
    IF line ~ 'Rows Removed by Filter' THEN removed := substring(line from '(\d+)'); END IF;
  END LOOP;
  RETURN format('pages read: %s, scan rows: %s', pages, scan_rows) ||
    coalesce(', loops: ' || nullif(loops, '1'), '') ||
    coalesce(', removed by filter: ' || removed, '');
END $$;
SELECT read_pages('SELECT * FROM pages ORDER BY k') AS pages_unbounded,
       read_pages('SELECT * FROM pages ORDER BY k LIMIT 10') AS pages_bounded,
       read_pages('SELECT id, k FROM pages ORDER BY k') AS projected_by_scan,
       read_pages('SELECT * FROM pages WHERE id > 5 ORDER BY k') AS filtered;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM pages ORDER BY k', 'k'),
  ('SELECT * FROM pages ORDER BY k DESC, id LIMIT 100', 'k, id'),
  ('SELECT * FROM pages ORDER BY late, k', 'late, k'),
  ('SELECT * FROM pages ORDER BY late DESC NULLS LAST, k, id LIMIT 3000 OFFSET 100', 'late, k, id'),
  ('SELECT * FROM pages ORDER BY k, id LIMIT 20', 'k, id'),
  ('SELECT pad, k, id FROM pages ORDER BY k, id LIMIT 300', 'k, id'),
  ('SELECT late, id FROM pages ORDER BY late NULLS FIRST, id', 'late, id'),
  ('SELECT k + 1 AS k1, id FROM pages ORDER BY id DESC LIMIT 50', 'id')) v(q, k);
SELECT read_pages('SELECT pad, k, id FROM pages ORDER BY k, id LIMIT 300') AS pages_projected,
       read_pages('SELECT k + 1 AS k1, id FROM pages ORDER BY id DESC LIMIT 50') AS computed_by_scan;
-- a subquery's outputs that the query above it does not use are NULLs of
-- their type in the scan's target list and GpuSort's, and a key under a
-- COLLATE clause is its column relabelled there: the pages are still
-- read, and the rows go up as they were sorted, with those NULLs
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT s.k, s.id FROM (SELECT * FROM pages ORDER BY k, id OFFSET 0) s', 'k, id'),
  ('SELECT s.late, s.id FROM (SELECT * FROM pages ORDER BY late DESC, id LIMIT 500) s', 'late, id'),
  ('SELECT s.id, s.k FROM (SELECT pad, id, k FROM pages WHERE late > 100 ORDER BY id DESC OFFSET 7) s', 'id'),
  ('SELECT pad COLLATE "C" AS p, id FROM pages ORDER BY 1, id LIMIT 40', 'p, id'),
  ('SELECT s.id FROM (SELECT pad, id FROM pages ORDER BY pad COLLATE "C" DESC OFFSET 0) s', 'id')) v(q, k);
SELECT read_pages('SELECT s.k, s.id FROM (SELECT * FROM pages ORDER BY k, id OFFSET 0) s') AS unused_outputs,
       read_pages('SELECT count(*) FROM (SELECT * FROM pages ORDER BY late DESC, id LIMIT 500) s') AS none_used,
       read_pages('SELECT pad COLLATE "C" AS p, id FROM pages ORDER BY 1, id LIMIT 40') AS relabelled_key;
-- a filter on the scan: evaluated for every visible tuple, as the scan
-- would (so its counts are the scan's own), before the keys; NULL results
-- remove the row; an outer row's value in a rescan
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM pages WHERE id % 3 = 1 ORDER BY k DESC, id LIMIT 200', 'k, id'),
  ('SELECT * FROM pages WHERE late > 500 ORDER BY k, id', 'k, id'),
  ('SELECT id, k FROM pages WHERE pad LIKE ''a%'' ORDER BY k, id LIMIT 30', 'k, id'),
  ('SELECT o.n, s.* FROM (VALUES (1), (7), (300)) o(n),
    LATERAL (SELECT * FROM pages WHERE id % o.n = 0 ORDER BY k, id LIMIT 25) s', 'n, k, id')) v(q, k);
SELECT read_pages('SELECT * FROM pages WHERE late > 500 ORDER BY k, id LIMIT 10') AS filtered_bounded;
-- each rescan with a new outer value in the filter rescans the scan too
-- (its loops, and rows and removed rows per loop)
SELECT read_pages('SELECT o.n, s.* FROM (VALUES (1), (7), (300)) o(n),
    LATERAL (SELECT * FROM pages WHERE id % o.n = 0 ORDER BY k, id LIMIT 25) s') AS filtered_rescanned;
SET gpusort.read_table_pages = off;
SELECT read_pages('SELECT * FROM pages WHERE late > 500 ORDER BY k, id LIMIT 10') AS through_the_scan;
RESET gpusort.read_table_pages;
BEGIN;  -- this transaction's own deletes, updates and inserts
DELETE FROM pages WHERE id % 7 = 0;
UPDATE pages SET k = -k WHERE id % 11 = 0;
INSERT INTO pages SELECT i, i, 'new', NULL FROM generate_series(40001, 41000) i;
SELECT read_pages('SELECT * FROM pages ORDER BY k LIMIT 10') AS pages_in_transaction;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM pages ORDER BY k', 'k'),
  ('SELECT * FROM pages WHERE pad <> ''new'' ORDER BY k, id LIMIT 700', 'k, id'),
  ('SELECT * FROM pages ORDER BY k, id LIMIT 500', 'k, id'),
  ('SELECT * FROM pages ORDER BY late NULLS FIRST, k DESC, id LIMIT 2000', 'late, k, id')) v(q, k);
ROLLBACK;
-- the same rows through the Seq Scan node
SET gpusort.read_table_pages = off;
SELECT read_pages('SELECT * FROM pages ORDER BY k LIMIT 10') AS pages_off;
SELECT same_order('SELECT * FROM pages ORDER BY k DESC, id LIMIT 1000', 'k, id') AS scan_node;
RESET gpusort.read_table_pages;
-- a rescan reads the pages again, with the outer row's bound
SELECT read_pages('SELECT o.n, s.* FROM (VALUES (1), (50), (700)) o(n),
  LATERAL (SELECT * FROM pages ORDER BY k, id LIMIT o.n) s') AS pages_rescanned,
  same_order('SELECT o.n, s.* FROM (VALUES (1), (50), (700)) o(n),
  LATERAL (SELECT * FROM pages ORDER BY k, id LIMIT o.n) s', 'n, k, id') AS rescanned;
-- the scan projects where a column was added with a default (older tuples
-- take it from the catalog) or dropped; GpuSort projects the rows it keeps
ALTER TABLE pages ADD COLUMN later int4 DEFAULT 7;
INSERT INTO pages SELECT i, i % 100, 'later', NULL, i % 9 FROM generate_series(50001, 50500) i;
SELECT read_pages('SELECT * FROM pages ORDER BY later, id LIMIT 600') AS added_with_default,
       same_order('SELECT * FROM pages ORDER BY later, id LIMIT 600', 'later, id') AS missing_values;
ALTER TABLE pages DROP COLUMN pad;
SELECT read_pages('SELECT * FROM pages ORDER BY k, id LIMIT 100') AS dropped_column,
       same_order('SELECT * FROM pages ORDER BY k, id LIMIT 100', 'k, id') AS after_drop;
-- a table larger than a quarter of shared_buffers (PostgreSQL's default
-- 128MB): GpuSort joins the synchronized scan where a scan of it stopped,
-- as the Seq Scan would, and reads round to that block. A cursor's scan
-- leaves the position there; GpuSort's sort is stable, so the first row
-- of a sort on a constant is the first it read.
SET max_parallel_workers_per_gather = 0;
SET work_mem = '64MB';
CREATE TABLE big_pages (id int4, k int4, same int4, pad text) WITH (autovacuum_enabled = off);
INSERT INTO big_pages SELECT i, (i::int8 * 7919) % 100003, 0, repeat('x', 80)
  FROM generate_series(1, 350000) i;
VACUUM ANALYZE big_pages;
SELECT pg_relation_size('big_pages') / 8192 >
       (SELECT setting::bigint / 4 FROM pg_settings WHERE name = 'shared_buffers') AS large_enough;
BEGIN;
DECLARE mid NO SCROLL CURSOR FOR SELECT id FROM big_pages;
MOVE 200000 IN mid;
CLOSE mid;
COMMIT;
EXPLAIN (COSTS OFF) SELECT id FROM big_pages ORDER BY same OFFSET 0;
SELECT id > 100000 AS started_where_the_scan_stood
  FROM (SELECT id FROM big_pages ORDER BY same OFFSET 0) s LIMIT 1;
SELECT read_pages('SELECT id, k FROM big_pages ORDER BY k, id LIMIT 5') AS synchronized,
       same_order('SELECT id, k FROM big_pages ORDER BY k, id', 'k, id') AS read_round;
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- the CPU gives the same order as wherever auto runs
SET gpusort.device = cpu;
CREATE TEMP TABLE cpu_order AS SELECT row_number() OVER () AS pos, id FROM (SELECT id FROM t ORDER BY b, g DESC, id) s;
RESET gpusort.device;
SELECT bool_and(c.id = g.id) AS same_on_cpu
FROM cpu_order c JOIN (SELECT row_number() OVER () AS pos, id FROM (SELECT id FROM t ORDER BY b, g DESC, id) s) g USING (pos);

-- what is not GpuSort's stays PostgreSQL's, without an error
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY txt;
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY k USING >;
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY k, txt;
-- a volatile key: the ORDER BY's path leaves it alone, but in the finished
-- plan its Sort sorts a column its input computed once per row, which
-- GpuSort sorts as well (sort_sites.c)
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY k + random();
-- a set operation's output: the ORDER BY's path leaves it alone (its
-- columns have no relation EXPLAIN could name from the path's GpuSort);
-- the finished plan's Sort becomes a GpuSort that refers to them through
-- its input (sort_sites.c). An INTERSECT's (PostgreSQL 18 merges a UNION's
-- sorted inputs instead of sorting its output); the plan's sorting nodes,
-- top down, as the rest of it differs between 15 and 18
SELECT string_agg(substring(line from 'Custom Scan \(GpuSort\)|Incremental Sort|Sort|Merge Append'),
                  ' > ') AS intersect_sorted_by
FROM explain_stable('SELECT k FROM t INTERSECT SELECT g FROM t ORDER BY 1') line
WHERE line ~ 'GpuSort|Sort|Merge Append' AND line !~ 'Sort Key';
-- an index gives the order: nothing to sort
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY id;
RESET enable_seqscan;
SET gpusort.enabled = off;
EXPLAIN (COSTS OFF) SELECT * FROM t ORDER BY k;
RESET gpusort.enabled;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA order_by CASCADE;
RESET client_min_messages;
