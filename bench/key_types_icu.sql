-- ORDER BY on the two text keys of issue #44 under an ICU collation
-- (en-x-icu), GpuSort against PostgreSQL's own sort and the floor (the
-- same query without ORDER BY), per cell: work_mem 4MB and 64MB, 0 and 8
-- workers (bench/key_types_key.sql). Needs a server built with ICU; the
-- workplace's portable PostgreSQL has none, so the GPU machine runs one
-- built here with ICU 72 carried along (bench/README.md, "Text keys on
-- the GPU"):
--   PG_MAJOR=18icu bench/device_run.sh sql bench/key_types_icu.sql
-- GpuSort's prefix is the first bytes of each value's ICU sort key; rows
-- whose prefixes are equal go to PostgreSQL's comparator (EXPLAIN ANALYZE:
-- Ties Resolved on CPU).
\ir key_types_setup.sql
\set key 'h COLLATE "en-x-icu"'
\ir key_types_key.sql
\set key 'name COLLATE "en-x-icu"'
\ir key_types_key.sql
