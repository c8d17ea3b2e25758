-- ORDER BY a text key of a table never analyzed (issue #44: a prefix
-- width that adapts to the data): 10M rows of kt_bench's name-like column
-- (its first 13 bytes shared by every row) and md5 column, with no
-- statistics, so the plan gives the key the widest prefix (31 bytes) and
-- a serial GpuSort chooses from its first rows (EXPLAIN ANALYZE's "Key
-- Prefix Chosen from Rows"), a parallel one's shares agree on the width
-- the first of them chose (since 2026-11-29). GpuSort against
-- PostgreSQL's own sort and the floor, per cell (bench/key_types_key.sql):
--   PG_MAJOR=18 bench/device_run.sh sql bench/key_types_unanalyzed.sql
-- (:key set beforehand picks one key; both otherwise.)
\set ON_ERROR_STOP on
\timing on
\set rows 10000000
DROP TABLE IF EXISTS kt_fresh;   -- a warm machine may keep an analyzed one
CREATE TABLE kt_fresh WITH (autovacuum_enabled = off) AS
SELECT md5(i::text) AS h,
       'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
       i AS id
FROM generate_series(1, :rows) i;
VACUUM kt_fresh;   -- hint bits and the visibility map, no statistics
SELECT count(*) AS columns_with_statistics FROM pg_stats WHERE tablename = 'kt_fresh';
SET gpusort.min_rows = 0;
SET parallel_setup_cost = 0;
\set table kt_fresh
\if :{?key}
\ir key_types_key.sql
\else
\set key 'name COLLATE "C"'
\ir key_types_key.sql
\set key 'h COLLATE "C"'
\ir key_types_key.sql
\endif
