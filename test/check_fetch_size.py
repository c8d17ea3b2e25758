#!/usr/bin/env python3
"""check_fetch_size.py - GpuSort for a client that fetches a few rows at a
time: the extended protocol's Execute with a row limit, as a JDBC client
with a fetch size sends it. PostgreSQL then runs the plan in several calls
and so without parallel workers, also where it planned a Gather: a parallel
GpuSort's leader sorts the only share, into a private file that the merging
node takes over (src/parallel_sort.c). Serial GpuSorts, in memory and
spilled, are fetched the same way. Every query's rows are compared with
PostgreSQL's own sort (gpusort.enabled = off) fetched the same way, and its
plan must hold the GpuSort it is meant to test.

  test/check_fetch_size.py      (a server with gpusort, from PG* variables)

Ends with "N passed, M failed".
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))
import pgwire  # noqa: E402

BATCH_ROWS = 97
SETUP = """
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpusort;
DROP SCHEMA IF EXISTS check_fetch_size CASCADE;
CREATE SCHEMA check_fetch_size;
CREATE TABLE check_fetch_size.t AS
  SELECT i AS id, (i * 7919) % 10007 AS k,
         CASE WHEN i % 13 = 0 THEN NULL ELSE (i::int8 * 1000003) % 977 END AS b
  FROM generate_series(1, 30000) i;
ANALYZE check_fetch_size.t;
"""
# every case: parallel plans on a small table; gpusort wherever it can
SETTINGS = """
RESET ALL;
SET search_path = check_fetch_size;
SET gpusort.min_rows = 0;
SET gpusort.gpu_min_elements = 0;
SET parallel_setup_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
"""
# (name, extra settings, query, what its plan must show)
CASES = [
    ("parallel", "", "SELECT id, k FROM t ORDER BY k, id",
     "merges the shares sorted below"),
    ("parallel, shares spilled", "SET work_mem = '64kB';",
     "SELECT id, b, k FROM t ORDER BY b DESC NULLS LAST, k, id",
     "merges the shares sorted below"),
    ("serial, in memory", "SET max_parallel_workers_per_gather = 0;",
     "SELECT id, k FROM t ORDER BY k DESC, id", "GpuSort"),
    ("serial, spilled", "SET max_parallel_workers_per_gather = 0; SET work_mem = '64kB';",
     "SELECT id, b FROM t ORDER BY b NULLS FIRST, id", "GpuSort"),
]


def main():
    conn = pgwire.connect("dbname=" + os.environ.get("PGDATABASE", "postgres"))
    cur = conn.cursor()
    cur.execute(SETUP)
    passed = failed = 0
    for name, extra, query, marker in CASES:
        try:
            cur.execute(SETTINGS + extra + "EXPLAIN (COSTS OFF) " + query)
            plan = "\n".join(row[0] for row in cur.fetchall())
            if marker not in plan:
                raise AssertionError("the plan has no %r:\n%s" % (marker, plan))
            gpusort_rows = conn.fetch_in_batches(query, BATCH_ROWS)
            cur.execute("SET gpusort.enabled = off; EXPLAIN (COSTS OFF) " + query)
            plan = "\n".join(row[0] for row in cur.fetchall())
            if "GpuSort" in plan:
                raise AssertionError("GpuSort used with gpusort.enabled = off")
            postgres_rows = conn.fetch_in_batches(query, BATCH_ROWS)
            if len(gpusort_rows) != 30000 or gpusort_rows != postgres_rows:
                raise AssertionError("rows differ: %d against %d, first %s / %s" % (
                    len(gpusort_rows), len(postgres_rows), gpusort_rows[:3], postgres_rows[:3]))
            print("ok   %s: %d rows in batches of %d" % (name, len(gpusort_rows), BATCH_ROWS))
            passed += 1
        except (AssertionError, pgwire.Error) as e:
            print("FAILED %s: %s" % (name, e))
            failed += 1
    cur.execute("RESET ALL; DROP SCHEMA check_fetch_size CASCADE")
    conn.close()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
