-- gpusort 1.1 -> 1.2: gpusort_stats counts the sorts whose GPU memory was
-- given back (given_back_jobs).
\echo Use "ALTER EXTENSION gpusort UPDATE TO '1.2'" to load this file. \quit

-- A view's columns cannot be inserted before others, nor a function's
-- result changed: the view and its function are made again, and the
-- privileges granted on them are granted again. A view of one's own over
-- gpusort_stats makes the update fail (DROP VIEW says which); drop it,
-- update, and make it again.

-- The GPU service's counters: one row per GPU (gpu = '0', '1', ...) and
-- one for them all (gpu = 'total'), since the last gpusort_stats_reset().
-- fallbacks_*: sorts that could have used the GPU but ran on the CPU, by
-- reason. given_back_jobs: sorts beyond work_mem whose rows the service
-- held in GPU memory and moved to a temporary file, to give that memory to
-- a waiting sort while their client read slowly. Needs gpusort in
-- shared_preload_libraries.
DO $update$
DECLARE
  command text;
  grants text[] := ARRAY(
    SELECT format('GRANT %s ON %s TO %s%s', a.privilege_type, o.target,
                  CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END,
                  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
    FROM (SELECT 'gpusort_stats' AS target, relacl AS acl, relowner AS owner
          FROM pg_class WHERE oid = 'gpusort_stats'::regclass
          UNION ALL
          SELECT 'FUNCTION gpusort_stats()', proacl, proowner
          FROM pg_proc WHERE oid = 'gpusort_stats()'::regprocedure) o,
         aclexplode(o.acl) a
    WHERE a.grantee <> o.owner);
  function_acl_set boolean :=
    (SELECT proacl IS NOT NULL FROM pg_proc WHERE oid = 'gpusort_stats()'::regprocedure);
BEGIN
  DROP VIEW gpusort_stats;
  DROP FUNCTION gpusort_stats();
  CREATE FUNCTION gpusort_stats(
      OUT gpu text, OUT state text, OUT device_name text,
      OUT jobs bigint, OUT rows_sorted bigint, OUT bytes_moved bigint,
      OUT gpu_time_ms double precision, OUT queued_jobs bigint,
      OUT queue_wait_ms double precision,
      OUT fallbacks_no_gpu bigint, OUT fallbacks_queue_timeout bigint,
      OUT fallbacks_too_large bigint, OUT fallbacks_gpu_error bigint,
      OUT fallbacks_service_lost bigint, OUT errors bigint,
      OUT given_back_jobs bigint,
      OUT restarts bigint, OUT stats_reset timestamptz)
  RETURNS SETOF record
  AS 'MODULE_PATHNAME', 'gpusort_stats'
  LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
  CREATE VIEW gpusort_stats AS SELECT * FROM gpusort_stats();
  -- (a function's privileges set by hand replace its default, PUBLIC's)
  IF function_acl_set THEN
    REVOKE ALL ON FUNCTION gpusort_stats() FROM PUBLIC;
  END IF;
  FOREACH command IN ARRAY grants LOOP
    EXECUTE command;
  END LOOP;
END
$update$;
