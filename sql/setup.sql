-- gpusort regression tests: the extension loads, and knows where it sorts.
-- Output here must be the same with and without a GPU.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;

SELECT name FROM gpusort_info() WHERE name IN ('built_with_cuda', 'gpu_usable', 'sorts_run_on') ORDER BY name;
SELECT value IN ('yes', 'no') AS answers FROM gpusort_info() WHERE name = 'gpu_usable';
-- when no GPU is usable, it says why
SELECT (SELECT value FROM gpusort_info() WHERE name = 'gpu_usable') = 'yes'
    OR EXISTS (SELECT FROM gpusort_info() WHERE name = 'reason' AND value <> '') AS explained;

-- settings live under one prefix
SELECT name, setting FROM pg_settings WHERE name LIKE 'gpusort.%'
  AND name NOT IN ('gpusort.device') ORDER BY name;

-- the GPU service reports its state (test/service/ tests the service itself)
SELECT count(*) AS service_state_rows FROM gpusort_info() WHERE name = 'service_state';
