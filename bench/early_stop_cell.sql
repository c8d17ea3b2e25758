-- One cell of bench/early_stop.sql (work_mem and workers already set): the
-- query :q three times each with the range merge, the leader alone, and
-- PostgreSQL's sort, labelled :cell.
SET enable_gathermerge = off;	-- the parallel GpuSort's plan, not partial sorts
\echo :cell: ranges
:q; :q; :q;
SET gpusort.parallel_merge = off;
\echo :cell: leader alone
:q; :q; :q;
SET gpusort.enabled = off;
RESET enable_gathermerge;	-- PostgreSQL's own best plan
\echo :cell: PostgreSQL
:q; :q; :q;
RESET gpusort.enabled;
RESET gpusort.parallel_merge;
