-- ORDER BY keys of the fixed-width types beyond the integers and floats:
-- boolean, "char", oid, money, time, pg_lsn, macaddr, macaddr8, tid, xid8,
-- enums (one engine key column each) and timetz, interval, uuid (two each: the 128-bit key's
-- high and low words); numeric and inet/cidr, whose ties the comparator
-- resolves. Every query is compared row by row with PostgreSQL's
-- own sort (gpusort.enabled = off), keys by position and rows as multisets,
-- and must have used GpuSort.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_types;  -- this file's tables and functions
SET search_path = order_by_types, public;
LOAD 'gpusort';
SELECT setseed(0.25);
SET gpusort.min_rows = 0;   -- every eligible sort becomes a GpuSort
SET gpusort.gpu_min_elements = 0;
SET gpusort.explain_details = off;
SET max_parallel_workers_per_gather = 0;

-- 20000 rows: duplicates, NULLs, extreme values (uuids with the top bit
-- set, negative and huge intervals, timetz values at the same UTC time in
-- different zones, which the comparator orders by zone)
CREATE TABLE kt AS
SELECT i AS id,
  CASE WHEN i % 19 = 0 THEN NULL ELSE i % 3 = 0 END AS bo,
  CASE WHEN i % 23 = 0 THEN NULL ELSE chr(1 + (i * 37) % 127)::"char" END AS ch,
  CASE WHEN i % 17 = 0 THEN NULL ELSE ((i::int8 * 2654435761) % 4294967296)::oid END AS o,
  CASE WHEN i % 13 = 0 THEN NULL ELSE ((random() - 0.5) * 2e12)::int8::money END AS m,
  CASE WHEN i % 11 = 0 THEN NULL ELSE time '00:00' + random() * interval '24 hours' END AS tm,
  CASE WHEN i % 29 = 0 THEN NULL ELSE (to_hex((random() * 4e9)::int8) || '/' || to_hex((random() * 4e9)::int8))::pg_lsn END AS lsn,
  CASE WHEN i % 31 = 0 THEN NULL ELSE (lpad(to_hex((random() * 255)::int), 2, '0') || ':' ||
       lpad(to_hex((i * 7) % 256), 2, '0') || ':00:00:00:' || lpad(to_hex(i % 256), 2, '0'))::macaddr END AS mac,
  CASE WHEN i % 37 = 0 THEN NULL ELSE (lpad(to_hex((i * 13) % 256), 2, '0') || ':00:00:00:00:00:' ||
       lpad(to_hex((random() * 255)::int), 2, '0') || ':01')::macaddr8 END AS mac8,
  CASE WHEN i % 7 = 0 THEN NULL
       ELSE ((time '00:00' + ((i * 97) % 1440) * interval '1 minute')::text ||
             to_char((i % 27) - 13, 'S00') || ':' || CASE WHEN i % 5 = 0 THEN '30' ELSE '00' END)::timetz END AS tz,
  CASE WHEN i % 9 = 0 THEN NULL
       WHEN i % 101 = 0 THEN (CASE WHEN current_setting('server_version_num')::int >= 170000
                                   THEN 'infinity' ELSE '178000000 years' END)::interval
       WHEN i % 103 = 0 THEN (CASE WHEN current_setting('server_version_num')::int >= 170000
                                   THEN '-infinity' ELSE '-178000000 years' END)::interval
       ELSE make_interval(months => (random() * 200 - 100)::int, days => (random() * 90 - 45)::int,
                          secs => (random() * 200000 - 100000)::int) END AS iv,
  CASE WHEN i % 5 = 0 THEN NULL
       WHEN i % 3 = 0 THEN ('ffffffff-0000-0000-0000-' || lpad(to_hex(i % 1000), 12, '0'))::uuid
       ELSE md5((i % 4000)::text)::uuid END AS u
FROM generate_series(1, 20000) i;
-- the same UTC time in several zones, and equal intervals spelled apart
INSERT INTO kt (id, tz, iv) VALUES
  (20001, '12:00+02', '1 month'), (20002, '11:00+01', '30 days'),
  (20003, '10:00+00', '720 hours'), (20004, '12:00+02', '1 day'), (20005, '13:00+03', '24 hours');
ANALYZE kt;

-- same_order(query, keys): setup.sql

-- a two-word key is shown once
EXPLAIN (COSTS OFF) SELECT * FROM kt ORDER BY u DESC, id;

-- every type, both directions, NULLs either end
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kt ORDER BY bo', 'bo'),
  ('SELECT * FROM kt ORDER BY bo DESC, id', 'bo, id'),
  ('SELECT * FROM kt ORDER BY ch', 'ch'),
  ('SELECT * FROM kt ORDER BY ch DESC NULLS LAST', 'ch'),
  ('SELECT * FROM kt ORDER BY o', 'o'),
  ('SELECT * FROM kt ORDER BY o DESC', 'o'),
  ('SELECT * FROM kt ORDER BY m', 'm'),
  ('SELECT * FROM kt ORDER BY m DESC NULLS LAST', 'm'),
  ('SELECT * FROM kt ORDER BY tm', 'tm'),
  ('SELECT * FROM kt ORDER BY tm DESC', 'tm'),
  ('SELECT * FROM kt ORDER BY lsn', 'lsn'),
  ('SELECT * FROM kt ORDER BY lsn DESC NULLS LAST', 'lsn'),
  ('SELECT * FROM kt ORDER BY mac', 'mac'),
  ('SELECT * FROM kt ORDER BY mac DESC', 'mac'),
  ('SELECT * FROM kt ORDER BY mac8 NULLS FIRST', 'mac8'),
  ('SELECT * FROM kt ORDER BY mac8 DESC', 'mac8'),
  ('SELECT * FROM kt ORDER BY tz', 'tz'),
  ('SELECT * FROM kt ORDER BY tz DESC NULLS LAST', 'tz'),
  ('SELECT * FROM kt ORDER BY iv', 'iv'),
  ('SELECT * FROM kt ORDER BY iv DESC', 'iv'),
  ('SELECT * FROM kt ORDER BY iv NULLS FIRST, id DESC', 'iv, id'),
  ('SELECT * FROM kt ORDER BY u', 'u'),
  ('SELECT * FROM kt ORDER BY u DESC', 'u'),
  ('SELECT * FROM kt ORDER BY u NULLS FIRST, id', 'u, id'),
  -- several keys, two-word ones among them
  ('SELECT * FROM kt ORDER BY bo, u DESC, iv', 'bo, u, iv'),
  ('SELECT * FROM kt ORDER BY tz, ch DESC, id', 'tz, ch, id'),
  ('SELECT * FROM kt ORDER BY u, iv, tz, id', 'u, iv, tz, id'),
  -- keys computed above the scan (read from a virtual slot)
  ('SELECT id, iv + interval ''1 day'' AS x FROM kt ORDER BY 2 DESC, 1', 'x, id'),
  ('SELECT id, tz + interval ''90 minutes'' AS x FROM kt ORDER BY 2, 1', 'x, id'),
  ('SELECT id, (md5(id::text))::uuid AS x FROM kt ORDER BY 2', 'x'),
  -- LIMIT: the best rows only
  ('SELECT * FROM kt ORDER BY u LIMIT 50', 'u'),
  ('SELECT * FROM kt ORDER BY iv DESC, id LIMIT 100 OFFSET 7', 'iv, id'),
  ('SELECT * FROM kt ORDER BY tz NULLS FIRST, id LIMIT 300', 'tz, id')
) AS queries(q, k);

-- more than eight engine key columns: PostgreSQL's sort
EXPLAIN (COSTS OFF) SELECT * FROM kt ORDER BY u, iv, tz, m, lsn, id;
-- the array functions still take only integers and floats
SELECT gpu_sort(ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid]);

-- rows beyond work_mem: sorted runs on disk, merged on their encoded keys
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kt ORDER BY u', 'u'),
  ('SELECT * FROM kt ORDER BY iv DESC, id', 'iv, id'),
  ('SELECT * FROM kt ORDER BY tz, u', 'tz, u'),
  ('SELECT * FROM kt ORDER BY u DESC, id LIMIT 3000', 'u, id')
) AS queries(q, k);
RESET work_mem;

-- the parallel GpuSort: shares sorted in workers, merged above the Gather
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT * FROM kt ORDER BY u, id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kt ORDER BY u, id', 'u, id'),
  ('SELECT * FROM kt ORDER BY iv DESC, tz, id', 'iv, tz, id')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kt ORDER BY u DESC, id', 'u, id'),
  ('SELECT * FROM kt ORDER BY tz NULLS FIRST, m, id', 'tz, m, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- numeric: sorted on PostgreSQL's abbreviated key, every tie decided by
-- its comparator. Many digits and scales, equal values of different
-- scales (1.5, 1.50), weights beyond the abbreviation's range, NaN above
-- +Infinity, -Infinity, NULLs
CREATE TABLE kn AS
SELECT i AS id,
  CASE WHEN i % 17 = 0 THEN NULL
       WHEN i % 97 = 0 THEN 'NaN'::numeric
       WHEN i % 89 = 0 THEN 'Infinity'::numeric
       WHEN i % 83 = 0 THEN '-Infinity'::numeric
       WHEN i % 7 = 0 THEN round((random() - 0.5)::numeric * 1e6, (i % 5))
       WHEN i % 7 = 1 THEN ((i % 40)::numeric / 8)::numeric(10, 3)
       WHEN i % 7 = 2 THEN (random() - 0.5)::numeric * power(10::numeric, (i % 300) - 150)
       WHEN i % 7 = 3 THEN 123456789012345678901234567890 + (i % 50)::numeric / 1000000000000
       WHEN i % 7 = 4 THEN ((random() * 1e10)::int8::numeric / 100)::numeric(12, 2)
       ELSE (i % 13 - 6)::numeric END AS nu
FROM generate_series(1, 20000) i;
ANALYZE kn;
SET max_parallel_workers_per_gather = 0;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kn ORDER BY nu', 'nu'),
  ('SELECT * FROM kn ORDER BY nu DESC', 'nu'),
  ('SELECT * FROM kn ORDER BY nu NULLS FIRST, id DESC', 'nu, id'),
  ('SELECT * FROM kn ORDER BY nu DESC NULLS LAST, id', 'nu, id'),
  ('SELECT id, nu * 3 AS x FROM kn ORDER BY 2, 1', 'x, id'),
  ('SELECT * FROM kn ORDER BY nu, id LIMIT 77', 'nu, id'),
  ('SELECT * FROM kn ORDER BY nu DESC, id LIMIT 500 OFFSET 20', 'nu, id')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kn ORDER BY nu', 'nu'),
  ('SELECT * FROM kn ORDER BY nu DESC, id LIMIT 3000', 'nu, id')
) AS queries(q, k);
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kn ORDER BY nu, id', 'nu, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;
-- NaN above +Infinity, as in PostgreSQL
EXPLAIN (COSTS OFF) SELECT nu FROM (VALUES ('NaN'::numeric), ('Infinity'), ('-Infinity'), (1.5)) v(nu) ORDER BY nu;
SELECT nu FROM (VALUES ('NaN'::numeric), ('Infinity'), ('-Infinity'), (1.5)) v(nu) ORDER BY nu;

-- inet and cidr: family, network, netmask length, then host bits, in
-- three words; IPv6 host bits beyond the first 47 (the low bits of a /64)
-- tie for the comparator. IPv4 and IPv6, every netmask length, equal
-- networks with different hosts, NULLs
CREATE TABLE ki AS
SELECT g AS id,
  CASE WHEN g % 31 = 0 THEN NULL
   WHEN g % 5 = 0 THEN set_masklen('0.0.0.0'::inet + ((g * 2654435761) % 4294967296), ((g * 7) % 33)::int)
   WHEN g % 5 = 1 THEN set_masklen('10.0.0.0'::inet + (g % 1000), ((g % 3) * 8 + 8)::int)
   WHEN g % 5 = 2 THEN set_masklen('2001:db8::'::inet + ((g * 2654435761) % 4294967296) + (((g * 40503) % 65536) << 40), ((g * 11) % 129)::int)
   WHEN g % 5 = 3 THEN set_masklen('fe80::'::inet + ((g % 7) * 1000003) + (g % 3 << 52), 64)
   ELSE set_masklen('2001:db8:1::'::inet + (g % 50), ((g % 4) * 32)::int)
  END AS a,
  CASE WHEN g % 37 = 0 THEN NULL
   WHEN g % 2 = 0 THEN network(set_masklen('0.0.0.0'::inet + ((g * 40503) % 4294967296), (g % 33)::int))::cidr
   ELSE network(set_masklen('2001:db8::'::inet + ((g * 40503) % 4294967296) + (g % 5 << 60), (g % 129)::int))::cidr END AS c
FROM generate_series(1::int8, 20000) g;
ANALYZE ki;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM ki ORDER BY a, id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ki ORDER BY a', 'a'),
  ('SELECT * FROM ki ORDER BY a DESC, id', 'a, id'),
  ('SELECT * FROM ki ORDER BY c NULLS FIRST', 'c'),
  ('SELECT * FROM ki ORDER BY c DESC, a, id', 'c, a, id'),
  ('SELECT id, network(a) AS x FROM ki ORDER BY 2, 1', 'x, id'),
  ('SELECT * FROM ki ORDER BY a, id LIMIT 100', 'a, id'),
  ('SELECT * FROM ki ORDER BY c DESC, id LIMIT 500 OFFSET 20', 'c, id')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ki ORDER BY a', 'a'),
  ('SELECT * FROM ki ORDER BY c DESC, id LIMIT 3000', 'c, id')
) AS queries(q, k);
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ki ORDER BY a, id', 'a, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- domains: a domain's values are its base type's and sort by its
-- operators (and, for a string, under the domain's collation): integers
-- with a check, text whose domain says COLLATE "C", a varchar(8) under a
-- COLLATE clause, uuid and numeric, NULLs, both directions, bounded,
-- beyond work_mem and parallel
CREATE DOMAIN d_posint AS int4 CHECK (VALUE > 0);
CREATE DOMAIN d_ctext AS text COLLATE "C";
CREATE DOMAIN d_short AS varchar(8);
CREATE DOMAIN d_uuid AS uuid;
CREATE DOMAIN d_amount AS numeric(10, 2);
CREATE TABLE kd AS
SELECT g AS id,
  CASE WHEN g % 17 = 0 THEN NULL ELSE ((g * 7919) % 1000 + 1)::d_posint END AS p,
  CASE WHEN g % 19 = 0 THEN NULL ELSE (CASE WHEN g % 3 = 0 THEN 'Zeta ' ELSE 'alpha ' END || md5((g % 3000)::text))::d_ctext END AS c,
  CASE WHEN g % 23 = 0 THEN NULL ELSE left(md5(g::text), (g % 8) + 1)::d_short END AS v,
  CASE WHEN g % 29 = 0 THEN NULL ELSE md5((g % 5000)::text)::d_uuid END AS u,
  CASE WHEN g % 31 = 0 THEN NULL ELSE (((g * 40503) % 2000000) / 100.0 - 10000)::d_amount END AS a
FROM generate_series(1, 20000) g;
ANALYZE kd;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM kd ORDER BY p, id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kd ORDER BY p, id', 'p, id'),
  ('SELECT * FROM kd ORDER BY p DESC NULLS LAST, id', 'p, id'),
  ('SELECT * FROM kd ORDER BY c', 'c'),
  ('SELECT * FROM kd ORDER BY c DESC, id', 'c, id'),
  ('SELECT * FROM kd ORDER BY v COLLATE "C", id', 'v, id'),
  ('SELECT * FROM kd ORDER BY u, id', 'u, id'),
  ('SELECT * FROM kd ORDER BY a DESC, id', 'a, id'),
  ('SELECT * FROM kd ORDER BY p, c, id LIMIT 100', 'p, c, id'),
  ('SELECT id, p FROM (SELECT * FROM kd ORDER BY a, id) s', 'id')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kd ORDER BY c, id', 'c, id'),
  ('SELECT * FROM kd ORDER BY p DESC, id LIMIT 3000', 'p, id')
) AS queries(q, k);
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM kd ORDER BY u, id', 'u, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;
DROP TABLE kd;
DROP DOMAIN d_posint, d_ctext, d_short, d_uuid, d_amount;

-- enums sort by their values' order (enumsortorder), not by their OIDs:
-- values added BEFORE others (odd OIDs, out of OID order), a domain over
-- an enum, NULLs, both directions, bounded, beyond work_mem, parallel, a
-- window; tid (block, then line pointer) and xid8
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok';
ALTER TYPE mood ADD VALUE 'ecstatic' AFTER 'happy';
ALTER TYPE mood ADD VALUE 'awful' BEFORE 'sad';
CREATE DOMAIN d_mood AS mood;
CREATE TABLE ke AS
SELECT g AS id,
  CASE WHEN g % 13 = 0 THEN NULL ELSE (enum_range(NULL::mood))[1 + (g * 7919) % 6] END AS m,
  (enum_range(NULL::mood))[1 + g % 6]::d_mood AS dm,
  ('(' || (g * 31) % 97 || ',' || g % 11 || ')')::tid AS t,
  ((g * 7919) % 100000)::text::xid8 AS x
FROM generate_series(1, 20000) g;
ANALYZE ke;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM ke ORDER BY m, id;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ke ORDER BY m, id', 'm, id'),
  ('SELECT * FROM ke ORDER BY m DESC NULLS LAST, id', 'm, id'),
  ('SELECT * FROM ke ORDER BY dm, m DESC, id LIMIT 100', 'dm, m, id'),
  ('SELECT * FROM ke ORDER BY t, id', 't, id'),
  ('SELECT * FROM ke ORDER BY x DESC, id', 'x, id'),
  ('SELECT id, m, rank() OVER (PARTITION BY m ORDER BY x) AS r FROM ke', 'm, r')
) AS queries(q, k);
SET work_mem = '64kB';
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ke ORDER BY m, id', 'm, id'),
  ('SELECT * FROM ke ORDER BY dm DESC, id LIMIT 3000', 'dm, id')
) AS queries(q, k);
SET max_parallel_workers_per_gather = 2;
SELECT q, same_order(q, k) FROM (VALUES
  ('SELECT * FROM ke ORDER BY m, t, id', 'm, t, id')
) AS queries(q, k);
RESET work_mem;
RESET max_parallel_workers_per_gather;
-- the array functions take no enums
SELECT gpu_sort(ARRAY['ok', 'sad']::mood[]);
SELECT count(*) FROM ke;
DROP TABLE ke;
DROP DOMAIN d_mood;
DROP TYPE mood;
-- an enum whose default btree operator class is the user's (here by the
-- labels' text, not their positions): not an order GpuSort encodes, so
-- PostgreSQL sorts it
CREATE TYPE lmood AS ENUM ('zeta', 'alpha', 'mid');
CREATE FUNCTION lmood_cmp(lmood, lmood) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT bttextcmp($1::text, $2::text)';
CREATE FUNCTION lmood_lt(lmood, lmood) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1::text < $2::text';
CREATE FUNCTION lmood_le(lmood, lmood) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1::text <= $2::text';
CREATE FUNCTION lmood_eq(lmood, lmood) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1::text = $2::text';
CREATE FUNCTION lmood_ge(lmood, lmood) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1::text >= $2::text';
CREATE FUNCTION lmood_gt(lmood, lmood) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT $1::text > $2::text';
CREATE OPERATOR < (LEFTARG = lmood, RIGHTARG = lmood, FUNCTION = lmood_lt);
CREATE OPERATOR <= (LEFTARG = lmood, RIGHTARG = lmood, FUNCTION = lmood_le);
CREATE OPERATOR = (LEFTARG = lmood, RIGHTARG = lmood, FUNCTION = lmood_eq);
CREATE OPERATOR >= (LEFTARG = lmood, RIGHTARG = lmood, FUNCTION = lmood_ge);
CREATE OPERATOR > (LEFTARG = lmood, RIGHTARG = lmood, FUNCTION = lmood_gt);
CREATE OPERATOR CLASS lmood_text_ops DEFAULT FOR TYPE lmood USING btree AS
  OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
  FUNCTION 1 lmood_cmp(lmood, lmood);
CREATE TABLE kl AS SELECT g AS id, (enum_range(NULL::lmood))[1 + g % 3] AS m FROM generate_series(1, 20000) g;
ANALYZE kl;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM kl ORDER BY m, id;
SELECT * FROM kl ORDER BY m, id LIMIT 3;
SELECT * FROM kl ORDER BY m DESC, id LIMIT 3;
RESET max_parallel_workers_per_gather;
DROP TABLE kl;
DROP TYPE lmood CASCADE;
DROP OPERATOR FAMILY lmood_text_ops USING btree;

DROP SCHEMA order_by_types CASCADE;
