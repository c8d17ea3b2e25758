-- SCROLL cursors over GpuSort: FETCH BACKWARD, ABSOLUTE, RELATIVE, and
-- rewinding, compared with the same cursor over PostgreSQL's sort.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
RESET client_min_messages;
CREATE SCHEMA order_by_cursor;  -- this file's tables and functions
SET search_path = order_by_cursor, public;
LOAD 'gpusort';  -- the planner hook needs the module in this session
SET gpusort.min_rows = 0;
SET gpusort.gpu_min_elements = 0;
CREATE TABLE c AS SELECT i AS id, (i * 7919) % 1000 AS k FROM generate_series(1, 1000) i;
ANALYZE c;

EXPLAIN (COSTS OFF) DECLARE cur SCROLL CURSOR FOR SELECT id, k FROM c ORDER BY k, id;

BEGIN;
DECLARE cur SCROLL CURSOR FOR SELECT id, k FROM c ORDER BY k, id;
FETCH 3 FROM cur;
FETCH BACKWARD 2 FROM cur;
FETCH ABSOLUTE 500 FROM cur;
FETCH RELATIVE -3 FROM cur;
FETCH LAST FROM cur;
FETCH NEXT FROM cur;
FETCH BACKWARD 1 FROM cur;
FETCH FIRST FROM cur;
FETCH PRIOR FROM cur;
FETCH ABSOLUTE -1 FROM cur;
MOVE ABSOLUTE 0 IN cur;
FETCH FORWARD 2 FROM cur;
CLOSE cur;
COMMIT;

-- the same walk with PostgreSQL's sort, compared position by position.
-- The cursor's query is planned anew on each call (OPEN ... FOR EXECUTE):
-- a cached plan would make both walks use whichever sort came first.
CREATE FUNCTION walk(use_gpusort boolean, source text DEFAULT 'c') RETURNS TABLE(step int, id int, k int) LANGUAGE plpgsql AS $$
DECLARE
  cur refcursor := 'walker';
  r record;
  i int := 0;
  plan text;
  used boolean := false;
BEGIN
  PERFORM set_config('gpusort.enabled', use_gpusort::text, true);
  FOR plan IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT c.id, c.k FROM %I c ORDER BY c.k DESC, c.id', source) LOOP
    used := used OR plan LIKE '%GpuSort%';
  END LOOP;
  IF used <> use_gpusort THEN
    RAISE EXCEPTION 'the walk with gpusort.enabled = % did not plan as expected', use_gpusort;
  END IF;
  OPEN cur SCROLL FOR EXECUTE format('SELECT c.id, c.k FROM %I c ORDER BY c.k DESC, c.id', source);
  FOR n IN 1..40 LOOP
    IF n % 3 = 0 THEN FETCH PRIOR FROM cur INTO r;
    ELSIF n % 7 = 0 THEN FETCH RELATIVE 5 FROM cur INTO r;
    ELSE FETCH NEXT FROM cur INTO r; END IF;
    i := i + 1; step := i; id := r.id; k := r.k; RETURN NEXT;
  END LOOP;
  FETCH LAST FROM cur INTO r; step := 100; id := r.id; k := r.k; RETURN NEXT;
  FETCH ABSOLUTE 1 FROM cur INTO r; step := 101; id := r.id; k := r.k; RETURN NEXT;
  FETCH ABSOLUTE -500 FROM cur INTO r; step := 102; id := r.id; k := r.k; RETURN NEXT;
  FETCH RELATIVE -7 FROM cur INTO r; step := 103; id := r.id; k := r.k; RETURN NEXT;
  MOVE LAST IN cur; FETCH NEXT FROM cur INTO r; step := 104; id := r.id; k := r.k; RETURN NEXT;
  FETCH PRIOR FROM cur INTO r; step := 105; id := r.id; k := r.k; RETURN NEXT;
  MOVE ABSOLUTE 0 IN cur; FETCH PRIOR FROM cur INTO r; step := 106; id := r.id; k := r.k; RETURN NEXT;
  FETCH NEXT FROM cur INTO r; step := 107; id := r.id; k := r.k; RETURN NEXT;
  CLOSE cur;
END $$;
SELECT count(*) AS steps, bool_and(g.id IS NOT DISTINCT FROM p.id AND g.k IS NOT DISTINCT FROM p.k) AS same_walk
FROM walk(true) g JOIN walk(false) p USING (step);

-- a backward cursor over an input that outgrew work_mem (its runs merged
-- into one file, which is read either way)
CREATE TABLE cbig AS SELECT i AS id, (i * 7919) % 100000 AS k, md5(i::text) AS pad FROM generate_series(1, 60000) i;
ANALYZE cbig;
SET work_mem = '1MB';
SELECT count(*) AS steps, bool_and(g.id IS NOT DISTINCT FROM p.id AND g.k IS NOT DISTINCT FROM p.k) AS same_walk
FROM walk(true, 'cbig') g JOIN walk(false, 'cbig') p USING (step);
SET work_mem = '64kB';
SELECT count(*) AS steps, bool_and(g.id IS NOT DISTINCT FROM p.id AND g.k IS NOT DISTINCT FROM p.k) AS same_walk
FROM walk(true, 'cbig') g JOIN walk(false, 'cbig') p USING (step);
SET work_mem = '1MB';
BEGIN;
DECLARE bc SCROLL CURSOR FOR SELECT id, k FROM cbig ORDER BY k DESC, id;
FETCH 2 FROM bc;
FETCH LAST FROM bc;
FETCH BACKWARD 2 FROM bc;
FETCH ABSOLUTE 30000 FROM bc;
CLOSE bc;
COMMIT;
RESET work_mem;
RESET gpusort.min_rows;
RESET gpusort.gpu_min_elements;
RESET search_path;
SET client_min_messages = warning;
DROP SCHEMA order_by_cursor CASCADE;
RESET client_min_messages;
