#!/usr/bin/env bash
# PostgreSQL's own regression tests that sort below the top of a plan
# (windows, grouping, DISTINCT, set operations, joins, LIMIT, subqueries,
# grouping sets), run twice against a running server with gpusort
# preloaded: with gpusort.enabled = off and with GpuSort forced everywhere
# (gpusort.min_rows = 0, set with ALTER SYSTEM and put back after). The two
# runs' outputs are compared statement by statement (the blocks between
# empty lines): the same, the same rows in another order, a plan (EXPLAIN)
# that differs, or rows that differ. PostgreSQL's expected files are not
# the reference: a difference between the two runs is.
#
#   test/core_sites.sh OUTDIR
#
# Needs PG_CONFIG (the server's pg_config, with PGXS and pg_regress),
# PGHOST/PGPORT/PGUSER of a server that may be reconfigured, and the
# PostgreSQL source tarball of the same major (SOURCE_TARBALL, default
# ../shared/postgresql/postgresql-18_18.6.orig.tar.bz2): its
# src/test/regress alone is extracted into OUTDIR, where regress.so is
# built. TESTS overrides the list. Rows that differ are printed; they are
# expected only where a query's result depends on the order of ties
# (first_value, last_value, nth_value, lag, lead or a ROWS frame over an
# ORDER BY with peers), which PostgreSQL leaves unspecified. collate,
# collate.icu.utf8 (needs ICU and a UTF-8 database) and collate.linux.utf8
# (skips itself unless the server has the de_DE, en_US, sv_SE and tr_TR
# UTF-8 locales) sort text under collations.
set -euo pipefail
out=${1:?usage: test/core_sites.sh OUTDIR}
pg_config=${PG_CONFIG:?PG_CONFIG must name the pg_config of the server}
tarball=${SOURCE_TARBALL:-$(dirname "$0")/../../shared/postgresql/postgresql-18_18.6.orig.tar.bz2}
tests=${TESTS:-test_setup create_index window aggregates select_distinct select_distinct_on union join limit subselect groupingsets collate collate.icu.utf8 collate.linux.utf8}
bindir=$($pg_config --bindir)
pg_regress=$($pg_config --pkglibdir)/pgxs/src/test/regress/pg_regress
mkdir -p "$out"
tar xjf "$tarball" -C "$out" --wildcards '*/src/test/regress/*'
regress=$(echo "$out"/*/src/test/regress)
mkdir -p "$out/lib"
cp "$regress/regress.c" "$out/lib/"
printf 'MODULES = regress\nPGXS := $(shell %s --pgxs)\ninclude $(PGXS)\n' "$pg_config" > "$out/lib/Makefile"
make -s -C "$out/lib" PG_CONFIG="$pg_config" > /dev/null

psql_q() { "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }
restore() { psql_q -c "ALTER SYSTEM RESET gpusort.min_rows" -c "ALTER SYSTEM RESET gpusort.enabled" \
                   -c "SELECT pg_reload_conf()" > /dev/null; }
trap restore EXIT
for mode in off on; do
  psql_q -c "ALTER SYSTEM SET gpusort.min_rows = 0" -c "ALTER SYSTEM SET gpusort.enabled = $mode" \
         -c "SELECT pg_reload_conf()" > /dev/null
  psql_q -c "DROP DATABASE IF EXISTS regression" -c "DROP TABLESPACE IF EXISTS regress_tblspace" > /dev/null 2>&1 || true
  mkdir -p "$out/$mode"
  # shellcheck disable=SC2086
  "$pg_regress" --inputdir="$regress" --outputdir="$out/$mode" --dlpath="$out/lib" \
    --bindir="$bindir" $tests > "$out/$mode/pg_regress.log" 2>&1 || true
done

python3 - "$out/off/results" "$out/on/results" <<'PY'
import os, sys
off, on = sys.argv[1], sys.argv[2]
total = {"same": 0, "order": 0, "plan": 0, "rows": 0}
for f in sorted(os.listdir(off)):
    a = open(os.path.join(off, f)).read().split("\n\n")
    b = open(os.path.join(on, f)).read().split("\n\n")
    if len(a) != len(b):
        print(f"{f}: the runs have {len(a)} and {len(b)} statements' outputs")
        total["rows"] += 1
        continue
    c = {"same": 0, "order": 0, "plan": 0, "rows": 0}
    for x, y in zip(a, b):
        if x == y:
            c["same"] += 1
        elif "QUERY PLAN" in x or "QUERY PLAN" in y or x.lstrip().lower().startswith("explain"):
            c["plan"] += 1
        elif sorted(x.split("\n")) == sorted(y.split("\n")):
            c["order"] += 1
        else:
            c["rows"] += 1
            print(f"===== {f}: rows differ\n{x}\n----- with GpuSort:\n{y}\n")
    for k in c:
        total[k] += c[k]
    print(f"{f}: {c}")
print("all:", total)
PY
