-- A parallel sort's prefix width, same run: 10M rows of md5 and name-like
-- text, one table never analyzed (kt_fresh: a parallel sort's shares took
-- the widest prefix, 31 bytes, until 2026-11-29, and now agree on the
-- width the first of them chooses from its rows) and the same rows analyzed (kt_stats: the
-- statistics choose, 15 bytes for md5), 8 workers, 4MB and 64MB,
-- alternating, two runs each; PostgreSQL's sort once per work_mem.
--   PG_MAJOR=18 MWP=8 bench/device_run.sh sql bench/key_types_prefix_ab.sql
\set ON_ERROR_STOP on
\timing on
DROP TABLE IF EXISTS kt_fresh, kt_stats;
CREATE TABLE kt_fresh WITH (autovacuum_enabled = off) AS
SELECT md5(i::text) AS h,
       'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
       i AS id
FROM generate_series(1, 10000000) i;
VACUUM kt_fresh;
SELECT count(*) AS fresh_stats FROM pg_stats WHERE tablename = 'kt_fresh';
SET gpusort.min_rows = 0;
SET parallel_setup_cost = 0;
SET max_parallel_workers_per_gather = 8;
CREATE TABLE kt_stats AS SELECT * FROM kt_fresh;
VACUUM ANALYZE kt_stats;
\set q 'SELECT count(*) FROM (SELECT * FROM kt_fresh ORDER BY h COLLATE "C" OFFSET 0) s'
\set qs 'SELECT count(*) FROM (SELECT * FROM kt_stats ORDER BY h COLLATE "C" OFFSET 0) s'
\set q2s 'SELECT count(*) FROM (SELECT * FROM kt_stats ORDER BY name COLLATE "C" OFFSET 0) s'
\set q2 'SELECT count(*) FROM (SELECT * FROM kt_fresh ORDER BY name COLLATE "C" OFFSET 0) s'
SET work_mem = '4MB';
\echo pg
SET gpusort.enabled = off;
:q;
SET gpusort.enabled = on;
\echo round1 nostats
:q;
:q;
\echo round1 stats
:qs;
:qs;
\echo round2 nostats
:q;
:q;
\echo round2 stats
:qs;
:qs;
SET work_mem = '64MB';
\echo 64MB pg
SET gpusort.enabled = off;
:q;
SET gpusort.enabled = on;
\echo 64MB round1 nostats
:q;
:q;
\echo 64MB round1 stats
:qs;
:qs;
\echo 64MB round2 nostats
:q;
:q;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :q;
\echo 64MB round2 stats
:qs;
:qs;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) :qs;
\echo name 4MB nostats
SET work_mem = '4MB';
:q2;
:q2;
\echo name 4MB stats
:q2s;
:q2s;
