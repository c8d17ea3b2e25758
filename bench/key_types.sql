-- ORDER BY on the key types of issue #44, GpuSort against PostgreSQL's own
-- sort and the floor (the same query without ORDER BY), per cell: work_mem
-- 4MB and 64MB, 0 and 8 workers. Keys: a 32-char md5 text and a name-like
-- text whose first 20 bytes are shared by many rows (both COLLATE "C": the
-- collations GpuSort takes), a uuid, a numeric(12,2). The portable
-- PostgreSQL has no ICU, and GpuSort leaves libc and ICU collations to
-- PostgreSQL, so there are no figures for those here.
--   bench/device_run.sh sql bench/key_types.sql          (PG_MAJOR=18 too)
-- Every query reads all sorted rows and returns one (count over OFFSET 0),
-- so the client's transfer is not timed. \timing gives the times; the
-- EXPLAIN ANALYZE of each GpuSort says where it ran and how many ties its
-- CPU resolved.
\set ON_ERROR_STOP on
\timing on
\set rows 10000000
DROP TABLE IF EXISTS kt_bench;
CREATE TABLE kt_bench AS
SELECT md5(i::text) AS h,
       'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
       md5((i * 7919)::text)::uuid AS u,
       ((hashint8(i * 3) & 549755813887)::numeric / 100)::numeric(12, 2) AS amount,
       i AS id
FROM generate_series(1, :rows) i;
VACUUM ANALYZE kt_bench;
SET gpusort.min_rows = 0;
SET parallel_setup_cost = 0;

\set key 'h COLLATE "C"'
\ir key_types_key.sql
\set key 'name COLLATE "C"'
\ir key_types_key.sql
\set key 'u'
\ir key_types_key.sql
\set key 'amount'
\ir key_types_key.sql
