-- gpusort 1.3 -> 1.4: gpu_approx_sort() takes a mode, 'width' or 'quantile'.
\echo Use "ALTER EXTENSION gpusort UPDATE TO '1.4'" to load this file. \quit

-- A new argument is a new signature: the 1.3 function goes (with the
-- privileges PUBLIC had on it, which the new one has too) and the new one
-- takes its place; calls without a mode mean what they meant.
DROP FUNCTION gpu_approx_sort(anyarray, integer, boolean);

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
