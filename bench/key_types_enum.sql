-- ORDER BY an enum (issue #44's other key types): 10M rows of an order
-- status (6 labels, two added BEFORE others, so that their OIDs are out
-- of order and PostgreSQL's comparator looks each one up) and a
-- timestamp. GpuSort against PostgreSQL's own sort and the floor (the
-- same query without ORDER BY), per cell: work_mem 4MB and 64MB, 0 and 8
-- workers (bench/key_types_key.sql), for `status` and `status, placed_at`.
--   PG_MAJOR=18 bench/device_run.sh sql bench/key_types_enum.sql
\set ON_ERROR_STOP on
\timing on
\set rows 10000000
DROP TABLE IF EXISTS ke_bench;
DROP TYPE IF EXISTS order_status;
CREATE TYPE order_status AS ENUM ('placed', 'shipped', 'delivered', 'returned');
ALTER TYPE order_status ADD VALUE 'paid' BEFORE 'shipped';
ALTER TYPE order_status ADD VALUE 'cancelled' BEFORE 'placed';
CREATE TABLE ke_bench AS
SELECT (enum_range(NULL::order_status))[1 + (hashint8(i) & 1023) % 6] AS status,
       timestamptz '2026-01-01' + (hashint8(i * 3) & 1048575) * interval '1 minute' AS placed_at,
       i AS id
FROM generate_series(1, :rows) i;
VACUUM ANALYZE ke_bench;
SET gpusort.min_rows = 0;
SET parallel_setup_cost = 0;
\set table ke_bench
\set key 'status'
\ir key_types_key.sql
\set key 'status, placed_at'
\ir key_types_key.sql
