-- Bad input gets a clear error with the right SQLSTATE, and the session
-- stays usable.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA errors;  -- this file's tables and functions
SET search_path = errors, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
\set VERBOSITY default
\set SHOW_CONTEXT never

SELECT gpu_sort(ARRAY['b', 'a']);
SELECT gpu_sort(ARRAY[1.5, 2.5]::numeric[]);
SELECT gpu_sort(ARRAY[3, 1], 'quicksort');
SELECT gpu_argsort(ARRAY[3, 1], 'approx');
SELECT gpu_approx_sort(ARRAY[3, 1], 0);
SELECT gpu_approx_sort(ARRAY[3, 1], -5);
SELECT gpu_approx_sort(ARRAY[1.5, 2.5]::float8[]);
SELECT * FROM gpu_sort_pairs(ARRAY[1, 2, 3], ARRAY[1, 2]);
SELECT * FROM gpu_sort_pairs(ARRAY[1, 2], ARRAY['x', 'y']);
SELECT gpu_sort(ARRAY[[3, 1], [2, 4]]);
SELECT gpu_sort(ARRAY[3, 1], NULL);
SET gpusort.device = 'quantum';
SET gpusort.algorithm = 'approx';
SET gpusort.approximate_intervals = -1;
SET gpusort.no_such_setting = 1;

-- the SQLSTATE of each
CREATE FUNCTION sqlstate_of(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE state text;
BEGIN
  EXECUTE query;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
  RETURN state;
END $$;
SELECT q, sqlstate_of(q) FROM (VALUES
  ('SELECT gpu_sort(ARRAY[''b''])'),
  ('SELECT gpu_sort(ARRAY[3, 1], ''quicksort'')'),
  ('SELECT gpu_approx_sort(ARRAY[3, 1], 0)'),
  ('SELECT gpu_approx_sort(ARRAY[1.5]::float8[])'),
  ('SELECT gpu_sort_pairs(ARRAY[1, 2, 3], ARRAY[1, 2])'),
  ('SELECT gpu_sort(ARRAY[[3, 1], [2, 4]])'),
  ('SET gpusort.device = ''quantum''')
) v(q);

-- the session is still fine
SELECT gpu_sort(ARRAY[3, 1, 2]);

-- a sort that is cancelled (statement_timeout) leaves the session usable
SET gpusort.gpu_min_elements = 0;
CREATE TABLE long_input AS SELECT array(SELECT (random() * 1e9)::int FROM generate_series(1, 2000000)) AS a;
SET statement_timeout = '50ms';
SELECT array_length(gpu_sort(a, 'bitonic'), 1) FROM long_input, generate_series(1, 1000);
RESET statement_timeout;
SELECT gpu_sort(ARRAY[3, 1, 2]) AS still_working;
-- and so does a cancelled ORDER BY
SET gpusort.min_rows = 0;
SET statement_timeout = '100ms';
SELECT count(*) FROM (SELECT g FROM generate_series(1, 50000000) g ORDER BY g DESC) s;
RESET statement_timeout;
SELECT array_agg(g) AS still_sorting FROM (SELECT g FROM generate_series(1, 5) g ORDER BY g DESC) s;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA errors CASCADE;
RESET client_min_messages;
