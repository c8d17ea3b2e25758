-- How many rows a string key's prefix leaves tied, at the prefix widths
-- GpuSort has (15 bytes: two words) and could have (23, 31, 39 bytes:
-- three, four, five words), for the text keys of bench/key_types_setup.sql
-- (kt_bench: an md5 text, a name-like text whose first 13 bytes every row
-- shares): the measurements behind DESIGN.md's "A prefix width that
-- adapts to the data". No GPU, no gpusort.
--
--   psql -v rows=1000000 -f bench/tie_widths.sql   (a sample table of its own)
--   psql -v tbl=kt_bench -f bench/tie_widths.sql   (the benchmark's 10M rows)
--
-- A row is tied at width w where its value is longer than w bytes (its
-- flag says the prefix may not determine it) and another such row has the
-- same first w bytes: the comparator orders those (tie_resolver.c). Rows
-- of at most w bytes are determined by their prefix. `groups` and
-- `largest` say how the tied rows split (the largest group is what
-- row_store_gpu.c sorts through a tuplesort once it outgrows a quarter of
-- work_mem).
\set ON_ERROR_STOP on
\if :{?tbl}
\else
  \if :{?rows}
  \else
    \set rows 1000000
  \endif
  DROP TABLE IF EXISTS tie_widths_sample;
  -- the columns of kt_bench, over fewer rows
  CREATE TABLE tie_widths_sample AS
  SELECT md5(i::text) AS h,
         'customer_' || lpad((hashint8(i) & 1048575)::text, 11, '0') || '_' || (i % 97) AS name
  FROM generate_series(1, :rows) i;
  \set tbl tie_widths_sample
\endif

WITH widths(w) AS (VALUES (15), (23), (31), (39)),
prefixes AS (
  SELECT 'name' AS key, w, count(*) AS c
  FROM :tbl, widths WHERE octet_length(name) > w
  GROUP BY w, substring(convert_to(name, 'UTF8') FROM 1 FOR w)
  UNION ALL
  SELECT 'h', w, count(*)
  FROM :tbl, widths WHERE octet_length(h) > w
  GROUP BY w, substring(convert_to(h, 'UTF8') FROM 1 FOR w))
SELECT k.key, widths.w AS prefix_bytes, count(*) FILTER (WHERE c > 1) AS groups,
       coalesce(sum(c) FILTER (WHERE c > 1), 0) AS tied_rows,
       round(100.0 * coalesce(sum(c) FILTER (WHERE c > 1), 0) / (SELECT count(*) FROM :tbl), 2) AS tied_pct,
       coalesce(max(c), 0) AS largest
FROM widths CROSS JOIN (VALUES ('name'), ('h')) AS k(key)
  LEFT JOIN prefixes p ON p.key = k.key AND p.w = widths.w
GROUP BY k.key, widths.w
ORDER BY 1, 2;
