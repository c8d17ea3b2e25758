-- ORDER BY string keys (text, varchar, bpchar, name, bytea) under collations
-- that order by bytes ("C", "POSIX", ucs_basic): each key is sorted on a
-- prefix of its bytes, and rows whose prefixes tie where a prefix does not
-- determine its value are put in order by PostgreSQL's comparator. Every
-- query is compared row by row with PostgreSQL's own sort (gpusort.enabled
-- = off), keys by position and rows as multisets, and must have used
-- GpuSort. Other collations stay PostgreSQL's sort.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_text;  -- this file's tables and functions
SET search_path = order_by_text, public;
LOAD 'gpusort';
SELECT setseed(0.75);
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;
SET max_parallel_workers_per_gather = 0;

-- 20000 rows: empty strings, strings shorter and longer than a prefix
-- (15 bytes), long shared prefixes (names of one customer table), case
-- variants, multibyte characters, trailing spaces (bpchar ignores them),
-- zero bytes (bytea), duplicates and NULLs
CREATE TABLE st AS
SELECT i AS id,
  CASE WHEN i % 17 = 0 THEN NULL
       WHEN i % 11 = 0 THEN ''
       WHEN i % 5 = 0 THEN 'customer_' || lpad((i % 700)::text, 12, '0') || '_' || (i % 3)
       WHEN i % 5 = 1 THEN md5(i::text)
       WHEN i % 5 = 2 THEN left(md5((i % 300)::text), (i % 20))
       WHEN i % 5 = 3 THEN CASE WHEN i % 2 = 0 THEN upper(md5((i % 50)::text)) ELSE md5((i % 50)::text) END
       ELSE repeat('é', i % 9) ||
            chr(CASE WHEN getdatabaseencoding() = 'UTF8' THEN 128512 ELSE 97 END + i % 5) ||
            repeat('a', i % 23) END AS t,
  CASE WHEN i % 13 = 0 THEN NULL ELSE (repeat('ab', i % 11) || (i % 97))::varchar(30) END AS v,
  CASE WHEN i % 19 = 0 THEN NULL ELSE (repeat('x', i % 4) || CASE WHEN i % 3 = 0 THEN ' ' ELSE '' END ||
       chr(32 + i % 3))::char(20) END AS b,
  ('relation_with_long_name_' || (i % 400))::name AS n,
  CASE WHEN i % 23 = 0 THEN NULL
       ELSE decode(repeat('00', i % 3) || lpad(to_hex(i % 257), 4, '0') || repeat('ff', i % 18), 'hex') END AS by
FROM generate_series(1, 20000) i;
ANALYZE st;

-- same_order(query, keys): setup.sql

-- the plan names the collation, as PostgreSQL's Sort does
EXPLAIN (COSTS OFF) SELECT * FROM st ORDER BY t COLLATE "C" DESC, by;

-- keys are compared as bytes of the collation's order: the output
-- columns below are cast to bytea, so that the comparison of rows by
-- position is by the same bytes whatever the database's collation
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C"', 'x'),
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C" DESC', 'x'),
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "POSIX" NULLS FIRST', 'x'),
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE ucs_basic DESC NULLS LAST, id', 'x, id'),
  ('SELECT id, v::text::bytea AS x FROM st ORDER BY v COLLATE "C"', 'x'),
  ('SELECT id, v::text::bytea AS x FROM st ORDER BY v COLLATE "C" DESC, id DESC', 'x, id'),
  ('SELECT id, rtrim(b)::bytea AS x FROM st ORDER BY b COLLATE "C"', 'x'),
  ('SELECT id, rtrim(b)::bytea AS x FROM st ORDER BY b COLLATE "C" DESC NULLS LAST, id', 'x, id'),
  ('SELECT id, n::text::bytea AS x FROM st ORDER BY n COLLATE "C"', 'x'),
  ('SELECT id, n::text::bytea AS x FROM st ORDER BY n COLLATE "C" DESC, id', 'x, id'),
  ('SELECT id, by AS x FROM st ORDER BY by', 'x'),
  ('SELECT id, by AS x FROM st ORDER BY by DESC NULLS LAST', 'x'),
  -- several keys: string keys around others
  ('SELECT id, t::bytea AS x, by AS y FROM st ORDER BY t COLLATE "C", by DESC, id', 'x, y, id'),
  ('SELECT id, (id % 7) AS x, t::bytea AS y FROM st ORDER BY id % 7, t COLLATE "C" DESC', 'x, y'),
  ('SELECT id, n::text::bytea AS x, t::bytea AS y FROM st ORDER BY n COLLATE "C", t COLLATE "C"', 'x, y'),
  -- expressions (read through the slot), and long equal prefixes only
  ('SELECT id, lower(t)::bytea AS x FROM st ORDER BY lower(t) COLLATE "C"', 'x'),
  ('SELECT id, (repeat(''p'', 40) || id % 100)::bytea AS x FROM st ORDER BY (repeat(''p'', 40) || id % 100) COLLATE "C"', 'x'),
  -- LIMIT: ties on the prefix at the threshold go to the comparator
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C", id LIMIT 100', 'x, id'),
  ('SELECT id, t::bytea AS x FROM st WHERE t LIKE ''customer%'' ORDER BY t COLLATE "C" DESC, id LIMIT 250 OFFSET 3', 'x, id'),
  ('SELECT id, n::text::bytea AS x FROM st ORDER BY n COLLATE "C", id LIMIT 1000', 'x, id')
) AS queries(q, k);

-- EXPLAIN ANALYZE says how many tied rows PostgreSQL's comparator ordered
SELECT line FROM explain_stable('SELECT * FROM st WHERE t LIKE ''customer%'' ORDER BY t COLLATE "C"', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Custom Scan';

-- libc collations that do not order by bytes: PostgreSQL's sort, alone
-- or beside other keys, at the top of a plan or below it (strxfrm() is
-- not trusted: types.c). en_US.UTF-8 where the server has the locale
-- (test/setup.sh makes it), else another libc collation of this server's,
-- where it has one.
DO $$
DECLARE
  libc_collation name;
  plan text;
  query text;
  used boolean := false;
BEGIN
  BEGIN
    CREATE COLLATION order_by_text.en_us_libc (provider = libc, locale = 'en_US.UTF-8');
    libc_collation := 'en_us_libc';
  EXCEPTION WHEN OTHERS THEN
    SELECT collname INTO libc_collation FROM pg_collation
     WHERE collprovider = 'c' AND collname NOT IN ('C', 'POSIX', 'ucs_basic', 'default')
       AND collencoding IN (-1, pg_char_to_encoding(getdatabaseencoding()))
     ORDER BY collname LIMIT 1;
  END;
  IF libc_collation IS NOT NULL THEN
    FOREACH query IN ARRAY ARRAY[
        'SELECT * FROM st ORDER BY t COLLATE %I',
        'SELECT * FROM st ORDER BY v COLLATE %I DESC, id',
        'SELECT * FROM st ORDER BY id %% 7, b COLLATE %I',
        'SELECT * FROM st ORDER BY t COLLATE "C", n COLLATE %I',
        'SELECT * FROM st ORDER BY t COLLATE %I LIMIT 10',
        'SELECT DISTINCT t COLLATE %I FROM st'] LOOP
      FOR plan IN EXECUTE format('EXPLAIN (COSTS OFF) ' || query, libc_collation) LOOP
        used := used OR plan LIKE '%GpuSort%';
      END LOOP;
    END LOOP;
  END IF;
  RAISE NOTICE 'a libc collation''s sort is GpuSort: %', used;
  DROP COLLATION IF EXISTS order_by_text.en_us_libc;
END $$;

-- rows beyond work_mem: sorted runs on disk, merged on their encoded keys
-- and, where those tie, the comparator
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C"', 'x'),
  ('SELECT id, n::text::bytea AS x, by AS y FROM st ORDER BY n COLLATE "C" DESC, by', 'x, y'),
  ('SELECT id, rtrim(b)::bytea AS x FROM st ORDER BY b COLLATE "C", id DESC', 'x, id'),
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C" DESC, id LIMIT 3000', 'x, id')
) AS queries(q, k);
RESET work_mem;

-- the parallel GpuSort: shares sorted in workers, merged above the Gather
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT * FROM st ORDER BY t COLLATE "C", id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C", id', 'x, id'),
  ('SELECT id, n::text::bytea AS x FROM st ORDER BY n COLLATE "C" DESC', 'x')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM st ORDER BY t COLLATE "C"', 'x'),
  ('SELECT id, by AS x, v::text::bytea AS y FROM st ORDER BY by DESC, v COLLATE "C"', 'x, y')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- A prefix as wide as the data needs: where the column's statistics say
-- that many rows would still tie at 15 bytes (names that share their
-- first 13), the planner gives the key 23 or 31 bytes (EXPLAIN says so)
-- and the comparator has nothing left to order; without statistics a
-- serial sort chooses the width from its first rows (EXPLAIN ANALYZE's
-- "Key Prefix Chosen from Rows"), the rest below. Both give
-- PostgreSQL's rows in PostgreSQL's order, in memory, in runs beyond
-- work_mem and in parallel.
CREATE TABLE names_analyzed WITH (autovacuum_enabled = off) AS
SELECT i AS id, 'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
       repeat('shared_', 6) || (i % 9) AS longer
FROM generate_series(1, 20000) i;
CREATE TABLE names_unanalyzed WITH (autovacuum_enabled = off) AS SELECT * FROM names_analyzed;
ANALYZE names_analyzed;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM names_analyzed ORDER BY name COLLATE "C";
EXPLAIN (COSTS OFF) SELECT * FROM names_unanalyzed ORDER BY name COLLATE "C";
-- a prefix shared beyond the widest width: no wider prefix is worth it
EXPLAIN (COSTS OFF) SELECT * FROM names_analyzed ORDER BY longer COLLATE "C", id;
SELECT line FROM explain_stable('SELECT * FROM names_analyzed ORDER BY name COLLATE "C"', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide';
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM names_unanalyzed ORDER BY name COLLATE "C"', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
SELECT line FROM explain_stable('SELECT * FROM names_analyzed ORDER BY longer COLLATE "C", id', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, name::bytea AS x FROM names_analyzed ORDER BY name COLLATE "C"', 'x'),
  ('SELECT id, name::bytea AS x FROM names_analyzed ORDER BY name COLLATE "C" DESC, id', 'x, id'),
  ('SELECT id, name::bytea AS x FROM names_unanalyzed ORDER BY name COLLATE "C"', 'x'),
  ('SELECT id, longer::bytea AS x, name::bytea AS y FROM names_analyzed ORDER BY longer COLLATE "C", name COLLATE "C" DESC', 'x, y'),
  ('SELECT id, name::bytea AS x FROM names_analyzed ORDER BY name COLLATE "C" LIMIT 100', 'x')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, name::bytea AS x FROM names_analyzed ORDER BY name COLLATE "C", id', 'x, id'),
  ('SELECT id, longer::bytea AS x FROM names_analyzed ORDER BY longer COLLATE "C" DESC, id', 'x, id')
) AS queries(q, k);
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, name::bytea AS x FROM names_analyzed ORDER BY name COLLATE "C", id', 'x, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- Rows tied on their prefix are first ordered by the next 16 bytes
-- (tie_resolver.c), and only those equal there too go to the comparator:
-- values that differ just past the prefix, or not until later; bytea with
-- zero bytes there; bpchar's trailing spaces; DESC; a key before the
-- string.
CREATE TABLE tails WITH (autovacuum_enabled = off) AS
SELECT i AS id,
  CASE WHEN i % 29 = 0 THEN NULL
       ELSE 'fifteen_bytes__' || repeat('z', i % 3) || (hashint4(i) & 63) ||
            CASE WHEN i % 4 = 0 THEN '' ELSE repeat('y', 20) || (i % 7) END END AS t,
  CASE WHEN i % 31 = 0 THEN NULL
       ELSE decode('00112233445566778899aabbccddee' || repeat('00', i % 3) ||
                   lpad(to_hex(hashint4(i) & 255), 2, '0') || repeat('00', i % 2), 'hex') END AS by,
  ('fifteen_bytes__' || (hashint4(i * 5) & 31) || repeat(' ', i % 4))::char(30) AS c
FROM generate_series(1, 3000) i;
-- (the EXPLAIN checks here and on fresh below run serially: under a
-- Gather Merge each partial sort chooses from the rows its process
-- happened to read, and the leader's line is the one shown)
SET max_parallel_workers_per_gather = 0;
SELECT line FROM explain_stable('SELECT * FROM tails ORDER BY t COLLATE "C", id', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
RESET max_parallel_workers_per_gather;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM tails ORDER BY t COLLATE "C", id', 'x, id'),
  ('SELECT id, t::bytea AS x FROM tails ORDER BY t COLLATE "C" DESC NULLS LAST, id', 'x, id'),
  ('SELECT id, by AS x FROM tails ORDER BY by, id', 'x, id'),
  ('SELECT id, by AS x FROM tails ORDER BY by DESC, id DESC', 'x, id'),
  ('SELECT id, rtrim(c)::bytea AS x FROM tails ORDER BY c COLLATE "C", id', 'x, id'),
  ('SELECT id, id % 5 AS a, t::bytea AS x, by AS y FROM tails ORDER BY id % 5, t COLLATE "C" DESC, by', 'a, x, y')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM tails ORDER BY t COLLATE "C", id', 'x, id'),
  ('SELECT id, by AS x FROM tails ORDER BY by DESC, id DESC', 'x, id')
) AS queries(q, k);
RESET work_mem;

-- A prefix chosen from the rows. A string key with no statistics gets the
-- widest prefix the plan has room for (31 bytes); a serial, unbounded sort
-- looks at its first rows (at most 16385 of those in memory when they are
-- first sorted or leave memory), keeps the bytes they need and drops the
-- rest from the rows it holds; later rows are encoded at that width. A
-- bounded sort keeps the widest; a parallel sort's shares agree on the
-- width the first of them chose (partial GpuSorts under a Gather Merge
-- choose each). The rows'
-- order is PostgreSQL's whatever was chosen: also where the first rows
-- mislead (later rows share longer beginnings than the first ones), where
-- the first rows are all NULL, in runs, and in the GPU service's memory.
-- (How many rows it looks at depends on the memory the server counts
-- them in, and where they go beyond work_mem: not shown.)
CREATE TABLE fresh WITH (autovacuum_enabled = off) AS
SELECT i AS id,
  'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
  md5(i::text) AS hash,
  CASE WHEN i > 3000 THEN 'same_beginning_' || lpad((hashint4(i) & 65535)::text, 9, '0') || (i % 7)
       ELSE (hashint4(i) & 65535)::text END AS misleading,
  CASE WHEN i > 18000 THEN 'late_' || (hashint4(i) & 4095) ELSE NULL END AS late,
  decode(md5((i % 4000)::text) || repeat('00', i % 3), 'hex') AS bytes
FROM generate_series(1, 20000) i;
SET max_parallel_workers_per_gather = 0;
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM fresh ORDER BY name COLLATE "C"', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM fresh ORDER BY hash COLLATE "C"', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM fresh ORDER BY misleading COLLATE "C", id', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM fresh ORDER BY late COLLATE "C", id', 'ANALYZE')
  AS line WHERE line ~ 'Ties|Wide|Chosen';
-- bounded: the widest, nothing chosen
SELECT line FROM explain_stable('SELECT * FROM fresh ORDER BY name COLLATE "C" LIMIT 10', 'ANALYZE')
  AS line WHERE line ~ 'Wide|Chosen';
RESET max_parallel_workers_per_gather;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, name::bytea AS x FROM fresh ORDER BY name COLLATE "C"', 'x'),
  ('SELECT id, hash::bytea AS x FROM fresh ORDER BY hash COLLATE "C" DESC', 'x'),
  ('SELECT id, misleading::bytea AS x FROM fresh ORDER BY misleading COLLATE "C", id', 'x, id'),
  ('SELECT id, misleading::bytea AS x FROM fresh ORDER BY misleading COLLATE "C" DESC, id DESC', 'x, id'),
  ('SELECT id, late::bytea AS x FROM fresh ORDER BY late COLLATE "C" NULLS FIRST, id', 'x, id'),
  ('SELECT id, bytes AS x FROM fresh ORDER BY bytes, id', 'x, id'),
  ('SELECT id, misleading::bytea AS x, name::bytea AS y FROM fresh ORDER BY misleading COLLATE "C", name COLLATE "C" DESC', 'x, y'),
  ('SELECT id, name::bytea AS x FROM fresh ORDER BY name COLLATE "C" LIMIT 300', 'x')
) AS queries(q, k);
SET work_mem = '64kB';
SET max_parallel_workers_per_gather = 0;
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT * FROM fresh ORDER BY misleading COLLATE "C", id', 'ANALYZE')
  AS line WHERE line ~ 'Chosen';
RESET max_parallel_workers_per_gather;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, misleading::bytea AS x FROM fresh ORDER BY misleading COLLATE "C", id', 'x, id'),
  ('SELECT id, name::bytea AS x FROM fresh ORDER BY name COLLATE "C" DESC, id', 'x, id'),
  ('SELECT id, bytes AS x FROM fresh ORDER BY bytes DESC, id', 'x, id')
) AS queries(q, k);
-- the row that arrives as the first run closes (before it is kept) is
-- narrowed as the rows before it were: each first-half value has a twin
-- sharing its 15 bytes and then a later byte
CREATE TABLE twins (id int, t text COLLATE "C") WITH (autovacuum_enabled = off);
INSERT INTO twins SELECT i, left(md5(i::text), 15) || 'a' || repeat('x', 24)
  FROM generate_series(1, 50000) i;
INSERT INTO twins SELECT 50000 + i, left(md5(i::text), 15) || 'b' || repeat('x', 24)
  FROM generate_series(1, 50000) i;
-- (checked here in the plain query: the same query under same_order()'s
-- CREATE TABLE AS closes its first run at another row)
SET max_parallel_workers_per_gather = 0;
SET work_mem = '400kB';
SELECT line FROM explain_stable('SELECT id, t FROM twins ORDER BY t') AS line WHERE line ~ 'GpuSort';
SELECT count(*) AS rows, count(*) FILTER (WHERE previous > t) AS out_of_order,
       count(DISTINCT t) AS distinct_values
  FROM (SELECT t, lag(t) OVER () AS previous FROM (SELECT id, t FROM twins ORDER BY t) s) s;
SET work_mem = '1800kB';
SELECT count(*) AS rows, count(*) FILTER (WHERE previous > t) AS out_of_order,
       count(DISTINCT t) AS distinct_values
  FROM (SELECT t, lag(t) OVER () AS previous FROM (SELECT id, t FROM twins ORDER BY t) s) s;
SET work_mem = '64kB';
-- a scrollable cursor reads a merged file both ways
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT id, misleading FROM fresh ORDER BY misleading COLLATE "C", id;
MOVE FORWARD 19990 IN c;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
COMMIT;
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, misleading::bytea AS x FROM fresh ORDER BY misleading COLLATE "C", id', 'x, id')
) AS queries(q, k);
RESET work_mem;
-- The parallel GpuSort's shares agree on one width: each holds its first
-- rows, the first to choose publishes its width and the others take it;
-- the merge above resolves the shares' ties from that width on. Here the
-- first 60000 rows differ within 15 bytes and the last 40000 tie there
-- in groups of 100, ordered by their 16th-17th bytes and the opposite way
-- by their 32nd-33rd, so a merge that took the next bytes from the widest
-- width would put every group backwards. (Plain queries: the shares
-- choose from the rows they read first.)
CREATE TABLE late_groups (id int, t text COLLATE "C") WITH (autovacuum_enabled = off);
INSERT INTO late_groups SELECT i, md5(i::text) || repeat('y', 10) FROM generate_series(1, 60000) i;
INSERT INTO late_groups SELECT 60000 + i,
    left(md5((i / 100)::text), 15) || lpad((i % 100)::text, 2, '0') || repeat('x', 14) ||
    lpad((99 - i % 100)::text, 2, '0')
  FROM generate_series(0, 39999) i;
SET enable_gathermerge = off;
SELECT line FROM explain_stable('SELECT id, t FROM late_groups ORDER BY t') AS line
  WHERE line ~ 'GpuSort|Gather';
SELECT count(*) AS rows, count(*) FILTER (WHERE previous > t) AS out_of_order,
       count(DISTINCT t) AS distinct_values
  FROM (SELECT t, lag(t) OVER () AS previous FROM (SELECT id, t FROM late_groups ORDER BY t) s) s;
SELECT count(*) AS rows, count(*) FILTER (WHERE previous < t) AS out_of_order,
       count(DISTINCT t) AS distinct_values
  FROM (SELECT t, lag(t) OVER () AS previous
        FROM (SELECT id, t FROM late_groups ORDER BY t DESC) s) s;
-- (the width: at 64kB each share chooses from its first few hundred rows
-- as its memory fills, whether its rows then go to the GPU's memory or
-- to files; at 4MB without the service a share may hold all its rows
-- and see the groups)
SET work_mem = '64kB';
SELECT regexp_replace(line, '\(\d+ rows', '(N rows') AS line
  FROM explain_stable('SELECT id, t FROM late_groups ORDER BY t', 'ANALYZE')
  AS line WHERE line ~ 'Chosen';
-- (every worker that chose says so on its line: the same width)
SELECT count(*) FILTER (WHERE line ~ 'Key Prefix: \d+ bytes' AND line !~ 'Key Prefix: 15 bytes')
       AS workers_at_another_width
  FROM explain_stable('SELECT id, t FROM late_groups ORDER BY t', 'ANALYZE') AS line;
SELECT count(*) AS rows, count(*) FILTER (WHERE previous > t) AS out_of_order,
       count(DISTINCT t) AS distinct_values
  FROM (SELECT t, lag(t) OVER () AS previous FROM (SELECT id, t FROM late_groups ORDER BY t) s) s;
RESET work_mem;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT id, t::bytea AS x FROM late_groups ORDER BY t', 'x'),
  ('SELECT id, name::bytea AS x FROM fresh ORDER BY name COLLATE "C"', 'x'),
  ('SELECT id, late::bytea AS x FROM fresh ORDER BY late COLLATE "C" NULLS FIRST, id', 'x, id')
) AS queries(q, k);
RESET enable_gathermerge;
RESET max_parallel_workers_per_gather;

DROP SCHEMA order_by_text CASCADE;
