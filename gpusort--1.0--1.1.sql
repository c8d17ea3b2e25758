-- gpusort 1.0 -> 1.1: the GPU service's statistics.
\echo Use "ALTER EXTENSION gpusort UPDATE TO '1.1'" to load this file. \quit

-- The GPU service's counters: one row per GPU (gpu = '0', '1', ...) and
-- one for them all (gpu = 'total'), since the last gpusort_stats_reset().
-- fallbacks_*: sorts that could have used the GPU but ran on the CPU, by
-- reason. Needs gpusort in shared_preload_libraries.
CREATE FUNCTION gpusort_stats(
    OUT gpu text, OUT state text, OUT device_name text,
    OUT jobs bigint, OUT rows_sorted bigint, OUT bytes_moved bigint,
    OUT gpu_time_ms double precision, OUT queued_jobs bigint,
    OUT queue_wait_ms double precision,
    OUT fallbacks_no_gpu bigint, OUT fallbacks_queue_timeout bigint,
    OUT fallbacks_too_large bigint, OUT fallbacks_gpu_error bigint,
    OUT fallbacks_service_lost bigint, OUT errors bigint,
    OUT restarts bigint, OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpusort_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE VIEW gpusort_stats AS SELECT * FROM gpusort_stats();

-- Zeroes the counters of gpusort_stats (superusers, and whom they grant it).
CREATE FUNCTION gpusort_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'gpusort_stats_reset'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION gpusort_stats_reset() FROM PUBLIC;
