-- An enum that gains labels while a query sorts by it: here a type made in
-- the query's own transaction, where the server lets the query use a label
-- it added (a function it calls adds the label and returns it; PostgreSQL
-- 18 does, 15 refuses to use a label before it commits, as
-- order_by_enum_growth_1.out shows). Labels' sort positions do not move
-- when others are added, so a label added after the others or before them
-- sorts in its place.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_enum_growth;
SET search_path = order_by_enum_growth, public;
BEGIN;
CREATE TYPE growing AS ENUM ('m');
CREATE FUNCTION grow(i int, label text, placement text) RETURNS growing LANGUAGE plpgsql AS $$
BEGIN
  IF i = 500 THEN EXECUTE format('ALTER TYPE growing ADD VALUE %L %s', label, placement); END IF;
  RETURN CASE WHEN i >= 500 AND i % 2 = 0 THEN label ELSE 'm' END::growing;
END $$;
SET LOCAL gpusort.min_rows = 0;
EXPLAIN (COSTS OFF) WITH t AS MATERIALIZED (SELECT i, grow(i, 'z', '') AS g FROM generate_series(1, 1000) i)
SELECT * FROM t ORDER BY g, i;
-- each label's rows, in the order the sort returned them
SELECT g, count(*), min(position), max(position) FROM (
  SELECT g, row_number() OVER () AS position FROM (
    WITH t AS MATERIALIZED (SELECT i, grow(i, 'z', '') AS g FROM generate_series(1, 1000) i)
    SELECT * FROM t ORDER BY g, i) s) p
GROUP BY g ORDER BY min(position);
SELECT g, count(*), min(position), max(position) FROM (
  SELECT g, row_number() OVER () AS position FROM (
    WITH t AS MATERIALIZED (SELECT i, grow(i, 'a', 'BEFORE ''m''') AS g FROM generate_series(1, 1000) i)
    SELECT * FROM t ORDER BY g, i) s) p
GROUP BY g ORDER BY min(position);
ROLLBACK;
SELECT 1 AS session_goes_on;
DROP SCHEMA order_by_enum_growth CASCADE;
