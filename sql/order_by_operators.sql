-- ORDER BY ... USING an operator: < and > of a key type's default btree
-- operator class are its ASC and DESC; the pattern operator classes
-- (text_pattern_ops, varchar_pattern_ops, bpchar_pattern_ops: ~<~, ~>~)
-- order strings by their bytes whatever the collation, which GpuSort's
-- string keys encode; any other operator class stays PostgreSQL's sort.
-- Every query is compared row by row with PostgreSQL's own sort
-- (gpusort.enabled = off), keys by position and rows as multisets, and
-- must have used GpuSort.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_operators;  -- this file's tables and functions
SET search_path = order_by_operators, public;
LOAD 'gpusort';
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;
SET max_parallel_workers_per_gather = 0;

-- 20000 rows: case variants (a collation's order differs from the
-- bytes'), multibyte characters, strings longer than a prefix with long
-- shared prefixes, trailing spaces (bpchar's pattern order ignores them),
-- duplicates and NULLs
CREATE TABLE ot AS
SELECT i AS id,
  CASE WHEN i % 17 = 0 THEN NULL
       ELSE (CASE i % 5 WHEN 0 THEN 'Apple' WHEN 1 THEN 'apple' WHEN 2 THEN 'äpfel_with_a_long_shared_prefix_'
                        WHEN 3 THEN 'Zebra ' ELSE '' END) || ((i * 7919) % 1000) END AS t,
  CASE WHEN i % 13 = 0 THEN NULL ELSE (repeat('Ab', i % 11) || (i % 97))::varchar(40) END AS v,
  CASE WHEN i % 19 = 0 THEN NULL ELSE (repeat('x', i % 4) || CASE WHEN i % 3 = 0 THEN ' ' ELSE 'Y' END ||
       chr(32 + i % 3))::char(20) END AS b,
  (i * 7919) % 5003 AS n,
  md5((i % 4000)::text)::uuid AS u
FROM generate_series(1, 20000) i;
ANALYZE ot;

-- same_order(query, keys): setup.sql

-- the plan names the operator, as PostgreSQL's Sort does
EXPLAIN (COSTS OFF) SELECT * FROM ot ORDER BY t USING ~<~, n USING >;
EXPLAIN (COSTS OFF) SELECT * FROM ot ORDER BY b USING ~>~ NULLS LAST, id;

-- keys are compared by position as bytes (the pattern order)
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~<~', 'x'),
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~>~, id', 'x, id'),
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~<~ NULLS FIRST, id USING >', 'x, id'),
  ('SELECT id, v::text::bytea AS x FROM ot ORDER BY v USING ~<~, id', 'x, id'),
  ('SELECT id, v::text::bytea AS x FROM ot ORDER BY v USING ~>~ NULLS LAST', 'x'),
  ('SELECT id, rtrim(b)::bytea AS x FROM ot ORDER BY b USING ~<~, id', 'x, id'),
  ('SELECT id, rtrim(b)::bytea AS x FROM ot ORDER BY b USING ~>~', 'x'),
  ('SELECT id, n AS x, t::bytea AS y FROM ot ORDER BY n USING <, t USING ~>~', 'x, y'),
  ('SELECT id, u AS x FROM ot ORDER BY u USING >, id USING <', 'x, id'),
  ('SELECT id, lower(t)::bytea AS x FROM ot ORDER BY lower(t) USING ~<~, id', 'x, id'),
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~<~, id LIMIT 100', 'x, id'),
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~>~, id LIMIT 500 OFFSET 9', 'x, id'),
  -- a window's sort (a sort site of the finished plan)
  ('SELECT id, t::bytea AS x, row_number() OVER (ORDER BY t USING ~<~, id) AS r FROM ot', 'x, id, r')
) AS queries(q, k);

-- rows beyond work_mem: sorted runs, merged; the parallel GpuSort
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~<~, id', 'x, id'),
  ('SELECT id, rtrim(b)::bytea AS x FROM ot ORDER BY b USING ~>~, id', 'x, id')
) AS queries(q, k);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM ot ORDER BY t USING ~>~, id', 'x, id')
) AS queries(q, k);
RESET work_mem;
SET max_parallel_workers_per_gather = 0;

-- under a collation that does not order by bytes (a libc one of this
-- server's, where it has one), the pattern order is still the bytes':
-- GpuSort, PostgreSQL's order
DO $$
DECLARE
  libc_collation name;
  outcome text := 'same';
BEGIN
  SELECT collname INTO libc_collation FROM pg_collation
   WHERE collprovider = 'c' AND collname NOT IN ('C', 'POSIX', 'ucs_basic', 'default')
     AND collencoding IN (-1, pg_char_to_encoding(getdatabaseencoding()))
   ORDER BY collname LIMIT 1;
  IF libc_collation IS NOT NULL THEN
    outcome := same_order(format('SELECT id, t::bytea AS x FROM ot ORDER BY t COLLATE %I USING ~<~, id',
                                 libc_collation), 'x, id');
  END IF;
  RAISE NOTICE 'pattern order under a libc collation: %', left(outcome, 4);
END $$;

-- another operator class's order: PostgreSQL's sort
CREATE FUNCTION reverse_cmp(int4, int4) RETURNS int4 LANGUAGE sql IMMUTABLE STRICT
  AS 'SELECT btint4cmp($2, $1)';
CREATE OPERATOR <# (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4gt);
CREATE OPERATOR <=# (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4ge);
CREATE OPERATOR =# (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4eq);
CREATE OPERATOR >=# (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4le);
CREATE OPERATOR ># (LEFTARG = int4, RIGHTARG = int4, FUNCTION = int4lt);
CREATE OPERATOR CLASS int4_reverse_ops FOR TYPE int4 USING btree AS
  OPERATOR 1 <#, OPERATOR 2 <=#, OPERATOR 3 =#, OPERATOR 4 >=#, OPERATOR 5 >#,
  FUNCTION 1 reverse_cmp(int4, int4);
EXPLAIN (COSTS OFF) SELECT * FROM ot ORDER BY n USING <#;
-- and record_image_ops (*<), whose type GpuSort does not take anyway
EXPLAIN (COSTS OFF) SELECT * FROM ot o ORDER BY o USING *<;

DROP SCHEMA order_by_operators CASCADE;
