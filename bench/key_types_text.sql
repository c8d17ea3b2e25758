-- ORDER BY on the two text keys of issue #44, GpuSort against PostgreSQL's
-- own sort and the floor (the same query without ORDER BY), per cell:
-- work_mem 4MB and 64MB, 0 and 8 workers (bench/key_types_key.sql). Split
-- from the other keys to stay within one device call's 10 minutes:
--   PG_MAJOR=18 bench/device_run.sh sql bench/key_types_text.sql
-- Every query reads all sorted rows and returns one (count over OFFSET
-- 0), so the client's transfer is not timed; \timing gives the times,
-- the EXPLAIN ANALYZE of each GpuSort where it ran and how many ties its
-- CPU resolved.
\ir key_types_setup.sql
\set key 'h COLLATE "C"'
\ir key_types_key.sql
\set key 'name COLLATE "C"'
\ir key_types_key.sql
