-- The table and settings of bench/key_types_text.sql and
-- bench/key_types_other.sql (issue #44's key types), made once: 10M rows
-- of a 32-char md5 text, a name-like text whose first 20 bytes many rows
-- share, a uuid and a numeric(12,2). The text keys are timed under
-- COLLATE "C" (key_types_text.sql) and under ICU's en-x-icu
-- (key_types_icu.sql, a server built with ICU); GpuSort leaves libc
-- collations other than C to PostgreSQL.
\set ON_ERROR_STOP on
\timing on
\set rows 10000000
CREATE TABLE IF NOT EXISTS kt_bench AS
SELECT md5(i::text) AS h,
       'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name,
       md5((i::int8 * 7919)::text)::uuid AS u,
       ((hashint8(i * 3) & 549755813887)::numeric / 100)::numeric(12, 2) AS amount,
       i AS id
FROM generate_series(1, :rows) i;
VACUUM ANALYZE kt_bench;
SET gpusort.min_rows = 0;
SET parallel_setup_cost = 0;

