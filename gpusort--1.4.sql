/* gpusort--1.3.sql: SQL objects of the gpusort extension */

\echo Use "CREATE EXTENSION gpusort" to load this file. \quit

-- Sorts an array (smallint, integer, bigint, date, timestamp, timestamptz,
-- real or double precision elements). algorithm: auto, bitonic, butterfly
-- or radix. NULL elements come last (first when descending).
CREATE FUNCTION gpu_sort(a anyarray, algorithm text DEFAULT 'auto',
                         descending boolean DEFAULT false)
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gpusort_sql_sort'
LANGUAGE C IMMUTABLE STRICT PARALLEL RESTRICTED;

-- The 1-based ordinal positions of the elements in sorted order; ties keep
-- input order, whatever the algorithm.
CREATE FUNCTION gpu_argsort(a anyarray, algorithm text DEFAULT 'auto',
                            descending boolean DEFAULT false)
RETURNS integer[]
AS 'MODULE_PATHNAME', 'gpusort_sql_argsort'
LANGUAGE C IMMUTABLE STRICT PARALLEL RESTRICTED;

-- Sorts the pairs (a[i], b[i]) lexicographically; returns both arrays
-- reordered. unnest(a, b) turns the result into rows.
CREATE FUNCTION gpu_sort_pairs(a anyarray, b anycompatiblearray,
                               algorithm text DEFAULT 'auto',
                               descending boolean DEFAULT false,
                               OUT sorted_a anyarray, OUT sorted_b anycompatiblearray)
RETURNS record
AS 'MODULE_PATHNAME', 'gpusort_sql_sort_pairs'
LANGUAGE C IMMUTABLE STRICT PARALLEL RESTRICTED;

-- Approximate interval sort, ordered between intervals, any order within
-- one. mode 'width': [min, max] cut into `intervals` equal-width intervals;
-- any two elements out of order differ by less than
-- (max - min + 1) / intervals. mode 'quantile': intervals at the quantiles
-- of a sample of the elements; every element's position is within a bound
-- of its exact rank (README: "The approximate sort's guarantees").
CREATE FUNCTION gpu_approx_sort(a anyarray, intervals integer DEFAULT 10000,
                                descending boolean DEFAULT false,
                                mode text DEFAULT 'width')
RETURNS anyarray
AS 'MODULE_PATHNAME', 'gpusort_sql_approx_sort'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- Minimum and maximum by the min-max butterfly network; NULLs ignored.
CREATE FUNCTION gpu_minmax(a anyarray, OUT min anyelement, OUT max anyelement)
RETURNS record
AS 'MODULE_PATHNAME', 'gpusort_sql_minmax'
LANGUAGE C IMMUTABLE STRICT PARALLEL RESTRICTED;

-- Where sorts run: GPU name, memory, compute capability, CUDA versions, or
-- why no GPU is usable.
CREATE FUNCTION gpusort_info(OUT name text, OUT value text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'gpusort_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- The GPU service's counters: one row per GPU (gpu = '0', '1', ...) and
-- one for them all (gpu = 'total'), since the last gpusort_stats_reset().
-- fallbacks_*: sorts that could have used the GPU but ran on the CPU, by
-- reason. given_back_jobs: sorts beyond work_mem whose rows the service
-- held in GPU memory and moved to a temporary file, to give that memory to
-- a waiting sort while their client read slowly. Needs gpusort in
-- shared_preload_libraries.
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
-- For superusers, and whom they grant SELECT on the view and EXECUTE on
-- its function: a view calls its functions with the reader's privileges,
-- not its owner's, so a function open to PUBLIC would show everyone what
-- the view keeps to a few.
REVOKE EXECUTE ON FUNCTION gpusort_stats() FROM PUBLIC;

-- Zeroes the counters of gpusort_stats (superusers, and whom they grant it).
CREATE FUNCTION gpusort_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'gpusort_stats_reset'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
REVOKE ALL ON FUNCTION gpusort_stats_reset() FROM PUBLIC;
