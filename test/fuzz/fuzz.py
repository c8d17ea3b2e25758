#!/usr/bin/python3
"""Differential fuzzer for gpusort's ORDER BY (issue #14).

Builds random tables (every key type, NULLs, duplicates, extremes; text of
random Unicode under C, ICU, nondeterministic ICU and libc collations) in
its own schema, generates random ORDER BY queries (1-8 keys, ASC/DESC, NULLS
FIRST/LAST, expressions, LIMIT/OFFSET/WITH TIES, subqueries, CTEs, joins,
UNION ALL, window functions, GROUP BY, DISTINCT, SRFs, LATERAL, IN/EXISTS,
scroll cursors, prepared statements with generic plans), and queries whose
sorts are elsewhere in the plan (issue #45: windows, sort-based grouping,
DISTINCT and DISTINCT ON, set operations, merge joins, top-N per group
through a window function filtered outside it, with the planner's
hash alternatives sometimes off), under random
settings (work_mem 64kB..1GB, parallel query off/on/forced, the leader's
participation, up to two of the planner's enable_* switches off) and runs each
with gpusort.enabled = on and off. The results must agree: the sequence of
the ORDER BY keys position by position, and the rows as multisets within
each run of equal keys (PostgreSQL's sort is not stable, GpuSort is; rows
in the tie groups cut by a LIMIT/OFFSET boundary are compared by keys only).

  test/fuzz/fuzz.py --dsn 'host=/tmp port=5432 user=postgres dbname=x' \
      [--seed N] [--seconds S] [--queries N] [--device auto|gpu|cpu]
      [--only I] [--keep] [--verbose] [--approximate]

Every failure prints a self-contained reproduction (setup SQL, settings,
query). Query I of seed S alone: --seed S --only I. Uses psycopg2 (Debian:
python3-psycopg2) when installed, else pgwire.py beside it (plain Python).
The last line is "N passed, M failed" (queries).
"""
import argparse
import collections
import math
import random
import re
import sys
import time

import os

try:
    if os.environ.get("GPUSORT_FUZZ_PGWIRE"):
        raise ImportError("pgwire.py asked for")
    import psycopg2
    import psycopg2.extensions
except ImportError:
    # no psycopg2 (the GPU machine): the same calls over the wire protocol
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pgwire as psycopg2

# ---------------------------------------------------------------- data

KEY_COLS = [("i2", "smallint"), ("i4", "integer"), ("i8", "bigint"),
            ("dt", "date"), ("ts", "timestamp"), ("tz", "timestamptz"),
            ("f4", "real"), ("f8", "double precision"),
            ("bo", "boolean"), ("u", "uuid"), ("iv", "interval"), ("ttz", "timetz"),
            ("nu", "numeric"), ("ip", "inet")]
GPU_TYPES = {"smallint", "integer", "bigint", "date", "timestamp",
             "timestamptz", "real", "double precision",
             "boolean", "uuid", "interval", "timetz", "time without time zone",
             "text C", "numeric", "text icu", "text nd", "inet", "cidr", "enum"}
# engine key words a key of the type takes (GpuSort takes at most 8); "text
# C" is text under the C collation (a two-word prefix), which GpuSort takes;
# "text icu" under an ICU collation and "text nd" under a nondeterministic
# one (prefixes of ICU sort keys), which it takes too; "text libc" under a
# libc collation (en_US.UTF-8), which stays PostgreSQL's; plain "text" has
# the database's collation, which it may not
TWO_WORD_TYPES = {"uuid", "interval", "timetz", "text C", "numeric", "text icu", "text nd"}
THREE_WORD_TYPES = {"inet", "cidr"}
# the collations this server has, found before the first query
# (Fuzzer.create_schema): ICU's (with "fuzz_ci", nondeterministic, made in
# the fuzzer's schema) and a libc one that does not order by bytes
COLLATIONS = {"icu": False, "libc": None}


def key_words(types):
    return sum(3 if t in THREE_WORD_TYPES else 2 if t in TWO_WORD_TYPES else 1 for t in types)


EXTREMES = {
    "smallint": "'{-32768,32767,0,-1,1}'::int2[]",
    "integer": "'{-2147483648,2147483647,0,-1,1}'::int4[]",
    "bigint": "'{-9223372036854775808,9223372036854775807,0,-1,1}'::int8[]",
    "date": "'{infinity,-infinity,\"4713-11-24 BC\",5874897-12-31,2000-01-01}'::date[]",
    "timestamp": "'{infinity,-infinity,\"4713-11-24 00:00:00 BC\",\"294276-12-31 23:59:59.999999\",\"2000-01-01 00:00:00\"}'::timestamp[]",
    "timestamptz": "'{infinity,-infinity,\"4713-11-25 00:00:00+00 BC\",\"294276-12-30 23:59:59.999999+00\",\"2000-01-01 00:00:00+00\"}'::timestamptz[]",
    "real": "'{NaN,Infinity,-Infinity,-0,0,1.4e-45,3.4e38,-3.4e38,1}'::real[]",
    "double precision": "'{NaN,Infinity,-Infinity,-0,0,5e-324,1.7976931348623157e308,-1.7976931348623157e308,1}'::float8[]",
    "boolean": "'{true,false}'::boolean[]",
    "uuid": "'{00000000-0000-0000-0000-000000000000,ffffffff-ffff-ffff-ffff-ffffffffffff,"
            "80000000-0000-0000-0000-000000000000,7fffffff-ffff-ffff-8000-000000000000,"
            "00000000-0000-0000-ffff-ffffffffffff}'::uuid[]",
    # justified, so that equal intervals print alike (the comparison is by text)
    "interval": "'{\"178000000 years\",\"-178000000 years\",0,\"1 mon\",\"-1 mon -29 days -23:59:59.999999\"}'::interval[]",
    # the same UTC time in different zones: ordered by zone
    "timetz": "'{00:00:00+15:59,24:00:00-15:59,12:00:00+02,11:00:00+01,10:00:00+00}'::timetz[]",
    # numeric prints its scale: values equal under = print alike here
    "numeric": "'{NaN,Infinity,-Infinity,1e-300,-1e300}'::numeric[]",
    "inet": "'{0.0.0.0/0,255.255.255.255,::/0,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,"
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/1}'::inet[]",
}
NEXTREMES = {"smallint": 5, "integer": 5, "bigint": 5, "date": 5, "timestamp": 5,
             "timestamptz": 5, "real": 9, "double precision": 9,
             "boolean": 2, "uuid": 5, "interval": 5, "timetz": 5, "numeric": 5, "inet": 5}


class Hash:
    """hashint8extended(i, salt): a deterministic pseudo-random int8 per row."""

    def __init__(self, rng):
        self.rng = rng

    def h(self):
        return "hashint8extended(i::int8, %d)" % self.rng.randrange(1, 1 << 40)

    def u(self):  # non-negative
        return "(%s & 9223372036854775807)" % self.h()


def column_expr(rng, typ):
    """SQL for one column of generated data (row number i)."""
    H = Hash(rng)
    dist = rng.choice(["full", "full", "few", "few", "mid", "extreme", "extreme"])
    n = rng.choice([1, 2, 3, 5, 10, 20])
    if typ == "smallint":
        full = "((%s & 65535) - 32768)" % H.h()
        few = "(%s %% %d - %d)" % (H.u(), n, n // 2)
        mid = "(%s %% 1000 - 500)" % H.u()
    elif typ == "integer":
        full = "((%s & 4294967295) - 2147483648)" % H.h()
        few = "(%s %% %d - %d)" % (H.u(), n, n // 2)
        mid = "(%s %% 1000 - 500)" % H.u()
    elif typ == "bigint":
        full = H.h()
        few = "(%s %% %d - %d) * 1000000000000" % (H.u(), n, n // 2)
        mid = "(%s %% 1000 - 500)" % H.u()
    elif typ == "date":
        full = "(date '2000-01-01' + (%s %% 2000000 - 1000000)::int)" % H.u()
        few = "(date '2020-01-01' + (%s %% %d)::int)" % (H.u(), n)
        mid = "(date '2020-01-01' + (%s %% 1000)::int)" % H.u()
    elif typ in ("timestamp", "timestamptz"):
        base = "timestamp '2000-01-01'" if typ == "timestamp" else "timestamptz '2000-01-01 00:00:00+00'"
        full = "(%s + (%s %% 8000000000000000 - 4000000000000000) * interval '1 microsecond')" % (base, H.u())
        few = "(%s + (%s %% %d) * interval '1 hour')" % (base, H.u(), n)
        mid = "(%s + (%s %% 1000) * interval '1 second')" % (base, H.u())
    elif typ == "boolean":
        full = "(%s %% 2 = 0)" % H.u()
        few = "(%s %% %d = 0)" % (H.u(), n + 1)
        mid = "(%s %% 7 < 3)" % H.u()
    elif typ == "uuid":
        hexes = "lpad(to_hex(%s), 16, '0') || lpad(to_hex(%s), 16, '0')" % (H.h(), H.h())
        full = "(%s)::uuid" % hexes
        few = "md5((%s %% %d)::text)::uuid" % (H.u(), n)
        # a shared high word: the low word decides
        mid = "('12345678-9abc-def0-' || substr(md5((%s %% 1000)::text), 1, 4) || '-' || " \
              "substr(md5((%s %% 1000)::text), 5, 12))::uuid" % (H.u(), H.u())
    elif typ == "numeric":
        # one scale per column, so that equal values print alike (the
        # comparison is by text); many digits, far weights
        full = "round(((%s::numeric - 4611686018427387904) * power(10::numeric, %s %% 60 - 30)), 40)" % (
            H.h(), H.u())
        few = "((%s %% %d - %d)::numeric / 4)" % (H.u(), n, n // 2)
        mid = "((%s %% 100000 - 50000)::numeric / 100)::numeric(12, 2)" % H.u()
    elif typ == "inet":
        # IPv4 and IPv6 of every netmask length (host bits kept); few
        # networks; IPv6 /64s whose host bits go beyond the 47 the key
        # holds (ties for the comparator)
        full = "CASE WHEN %s %% 2 = 0 THEN set_masklen('0.0.0.0'::inet + (%s %% 4294967296), (%s %% 33)::int) " \
               "ELSE (to_hex(%s %% 65536) || ':' || to_hex(%s %% 65536) || '::' || to_hex(%s %% 65536) || ':' " \
               "|| to_hex(%s %% 65536) || '/' || (%s %% 129))::inet END" % tuple(H.u() for _ in range(8))
        few = "set_masklen('10.0.0.0'::inet + (%s %% %d), 8 + (%s %% 3)::int * 8)" % (H.u(), n, H.u())
        mid = "('fe80::' || to_hex(%s %% 4) || ':0:0:' || to_hex(%s %% 1000) || '/64')::inet" % (H.u(), H.u())
    elif typ == "interval":
        full = "justify_interval(make_interval(months => (%s %% 4000 - 2000)::int, days => (%s %% 100 - 50)::int, " \
               "secs => (%s %% 200000000000 - 100000000000) / 1e6))" % (H.u(), H.u(), H.u())
        few = "((%s %% %d - %d) * interval '1 day')" % (H.u(), n, n // 2)
        mid = "justify_interval((%s %% 1000 - 500) * interval '7 hours')" % H.u()
    elif typ == "timetz":
        zone = "to_char((%s %% 27 - 13)::int, 'S00') || ':' || CASE WHEN %s %% 4 = 0 THEN '30' ELSE '00' END" % (
            H.u(), H.u())
        full = "((time '00:00' + (%s %% 86400000000) * interval '1 microsecond')::text || %s)" % (H.u(), zone)
        few = "((time '00:00' + (%s %% %d) * interval '1 hour')::text || %s)" % (H.u(), n, zone)
        mid = "((time '12:00' + (%s %% 1000) * interval '1 minute')::text || '+00')" % H.u()
    else:
        full = "((%s::float8 / 9.3e18) * power(10::float8, %s %% %d - %d))" % (
            H.h(), H.u(), 60 if typ == "real" else 600, 30 if typ == "real" else 300)
        few = "(((%s %% %d) - %d) * 0.5 * CASE WHEN %s %% 2 = 0 THEN 1 ELSE -1 END)" % (
            H.u(), n, n // 2, H.u())
        mid = "(((%s %% 1000) - 500) * 0.25 * CASE WHEN %s %% 2 = 0 THEN 1 ELSE -1 END)" % (H.u(), H.u())
    if dist == "extreme":
        pct = rng.choice([5, 20, 50])
        # (cast: some expressions above are text spelling the type's values)
        val = "CASE WHEN %s %% 100 < %d THEN (%s)[1 + %s %% %d] ELSE (%s)::%s END" % (
            H.u(), pct, EXTREMES[typ], H.u(), NEXTREMES[typ], rng.choice([full, few, mid]), typ)
    else:
        val = {"full": full, "few": few, "mid": mid}[dist]
    nullpct = rng.choice([0, 0, 1, 5, 20, 50])
    if nullpct:
        val = "CASE WHEN %s %% 100 < %d THEN NULL ELSE %s END" % (H.u(), nullpct, val)
    return "(%s)::%s" % (val, typ)


def random_chars(H, salt):
    """A random string of 0..24 characters of row i: Latin with accents,
    combining marks, Greek and Cyrillic, CJK, emoji and skin tones,
    punctuation and spaces (never a surrogate or a zero)."""
    return ("(SELECT coalesce(string_agg(chr(CASE hashint8extended(i::int8 * 64 + j, %d) & 7 "
            "WHEN 0 THEN 65 + (hashint8extended(i::int8 * 64 + j, %d) & 25) "
            "WHEN 1 THEN 97 + (hashint8extended(i::int8 * 64 + j, %d) & 25) "
            "WHEN 2 THEN 192 + (hashint8extended(i::int8 * 64 + j, %d) & 63) "
            "WHEN 3 THEN 768 + (hashint8extended(i::int8 * 64 + j, %d) & 63) "
            "WHEN 4 THEN 880 + (hashint8extended(i::int8 * 64 + j, %d) & 255) "
            "WHEN 5 THEN 19968 + (hashint8extended(i::int8 * 64 + j, %d) & 1023) "
            "WHEN 6 THEN 127744 + (hashint8extended(i::int8 * 64 + j, %d) & 1023) "
            "ELSE 32 + (hashint8extended(i::int8 * 64 + j, %d) & 15) END::int), ''), '') "
            "FROM generate_series(1, (%s %% 25)::int) j)" % (
                (salt,) * 9 + (H.u(),)))


def unicode_text(H):
    """Text for collations: random Unicode, empty strings, NULLs, case
    variants, an accent precomposed or as a combining mark, emoji, long
    shared prefixes, strings longer than a prefix."""
    salt = H.rng.randrange(1, 1 << 30)
    return ("CASE %s %% 9 WHEN 0 THEN '' WHEN 1 THEN NULL "
            "WHEN 2 THEN (ARRAY['a', 'A', 'b', 'B', 'é', 'É', e'e\\u0301', e'E\\u0301', 'ß', 'ss', 'SS', "
            "'Å', e'A\\u030A', 'æ', 'ae', 'ﬁ', 'fi', 'Ω', 'ω', '日本', '😀', '😀🏽', ' ', '-'])[1 + (%s %% 24)::int] "
            "WHEN 3 THEN 'Shared prefix longer than fifteen bytes ' || (ARRAY['x', 'X', 'é', e'e\\u0301'])[1 + (%s %% 4)::int] "
            "|| (%s %% 50) "
            "WHEN 4 THEN upper(%s) WHEN 5 THEN lower(%s) "
            "ELSE %s END" % (H.u(), H.u(), H.u(), H.u(), random_chars(H, salt), random_chars(H, salt + 1),
                             random_chars(H, salt + 2)))


def table_setup(rng, name, nrows):
    H = Hash(rng)
    cols = ["i AS id", "(CASE WHEN %s %% 100 < 3 THEN NULL ELSE %s %% 10 END)::int AS g" % (H.u(), H.u())]
    for c, typ in KEY_COLS:
        cols.append("%s AS %s" % (column_expr(rng, typ), c))
    txt = rng.choice(["md5(i::text)", "'v' || (%s %% 5)" % H.u(),
                      "CASE WHEN %s %% 10 = 0 THEN NULL ELSE md5(i::text) END" % H.u(),
                      # long shared prefixes, empty strings, case and
                      # multibyte variants, strings shorter than a prefix
                      "CASE WHEN %s %% 7 = 0 THEN '' WHEN %s %% 7 = 1 THEN NULL "
                      "WHEN %s %% 7 = 2 THEN 'Customer_' || lpad((%s %% 300)::text, 20, '0') "
                      "WHEN %s %% 7 = 3 THEN 'customer_' || lpad((%s %% 300)::text, 20, '0') || 'é' "
                      "WHEN %s %% 7 = 4 THEN repeat('ü', (%s %% 12)::int) || 'x' "
                      "ELSE left(md5(i::text), (%s %% 20)::int) END" % tuple(H.u() for _ in range(9)),
                      unicode_text(H)])
    cols.append("%s AS txt" % txt)
    cols.append("%s AS ut" % unicode_text(H))
    return [
        "CREATE TABLE %s (id int NOT NULL, g int, i2 smallint, i4 integer, i8 bigint, dt date, "
        "ts timestamp, tz timestamptz, f4 real, f8 double precision, bo boolean, u uuid, "
        "iv interval, ttz timetz, nu numeric, ip inet, txt text, ut text)" % name,
        # rows stored in hash order: physical order is not id order
        "INSERT INTO %s SELECT %s FROM generate_series(1, %d) i ORDER BY %s, i" % (
            name, ", ".join(cols), nrows, H.h()),
    ]


class Schema:
    def __init__(self, seed, small_ci):
        rng = random.Random("tables-%d" % seed)
        self.name = "fuzz_%d" % seed
        self.setup = ["CREATE SCHEMA %s" % self.name, "SET search_path = %s, public" % self.name,
                      # keys cast to domains sort as their base types
                      "CREATE DOMAIN int_domain AS integer",
                      "CREATE DOMAIN numeric_domain AS numeric",
                      "CREATE DOMAIN uuid_domain AS uuid",
                      # an enum whose OIDs are not in its order (values
                      # added BEFORE and AFTER others)
                      "CREATE TYPE level AS ENUM ('low', 'mid', 'high')",
                      "ALTER TYPE level ADD VALUE 'lowest' BEFORE 'low'",
                      "ALTER TYPE level ADD VALUE 'midhigh' AFTER 'mid'"]
        big = rng.choice([40000, 80000, 120000, 200000]) if not small_ci else rng.choice([40000, 60000, 100000])
        self.sizes = {"tiny": rng.choice([0, 1, 2, 7, 20]),
                      "small": rng.randint(300, 3000),
                      "medium": rng.randint(5000, 30000),
                      "big": big}
        for t, n in self.sizes.items():
            self.setup += table_setup(rng, t, n)
        self.setup += [
            "CREATE TABLE dim (g int PRIMARY KEY, w int, name text)",
            "INSERT INTO dim SELECT g, (g * 7) % 11, 'name' || g FROM generate_series(0, 15) g",
            "CREATE TABLE pt (LIKE medium) PARTITION BY RANGE (id)",
            "CREATE TABLE pt_1 PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (%d)" % (self.sizes["medium"] // 3),
            "CREATE TABLE pt_2 PARTITION OF pt FOR VALUES FROM (%d) TO (%d)" % (
                self.sizes["medium"] // 3, 2 * self.sizes["medium"] // 3),
            "CREATE TABLE pt_d PARTITION OF pt DEFAULT",
            "INSERT INTO pt SELECT * FROM medium",
            "CREATE INDEX ON small (i4)",
            "CREATE INDEX ON medium (g, i8)",
            "CREATE INDEX ON big (i4)",
            "CREATE INDEX ON pt (i8)",
        ]
        self.sizes["pt"] = self.sizes["medium"]
        for t in ["tiny", "small", "medium", "big", "dim", "pt"]:
            if t == "small" and rng.random() < 0.3:
                continue  # sometimes no statistics: other estimates, other plans
            self.setup.append("ANALYZE %s" % t)


# ---------------------------------------------------------------- queries

class Key:
    def __init__(self, expr, typ, volatile=False, shown=None):
        self.expr, self.typ, self.volatile = expr, typ, volatile
        # what the select list shows for the key: under a nondeterministic
        # collation its hash (hashtext hashes the collation's sort key), so
        # that keys it calls equal compare equal here
        self.shown = expr if shown is None else shown


def key_exprs(rng, c, typ, x):
    """Expressions of column c (type typ) of alias x: (sql, type)."""
    col = "%s.%s" % (x, c)
    if typ == "smallint":
        opts = [(col, typ)] * 4 + [("%s %% 7" % col, typ), ("-(%s::int4)" % col, "integer"),
                                   ("(enum_range(NULL::level))[1 + abs(%s %% 5)]" % col, "enum"),
                                   ("abs(%s::int4)" % col, "integer"), ("%s / 10" % col, typ)]
    elif typ == "integer":
        opts = [(col, typ)] * 4 + [("%s %% 100" % col, typ), ("%s / 1000" % col, typ),
                                   ("abs(%s::int8)" % col, "bigint"), ("-(%s::int8)" % col, "bigint"),
                                   ("coalesce(%s, 0)" % col, typ), ("%s::int8 + 1" % col, "bigint"),
                                   ("CASE WHEN %s.g < 5 THEN %s END" % (x, col), typ),
                                   ("greatest(%s, 0)" % col, typ), ("%s::int_domain" % col, typ),
                                   ("(enum_range(NULL::level))[1 + abs(%s %% 5)]" % col, "enum")]
    elif typ == "bigint":
        opts = [(col, typ)] * 4 + [("%s %% 1000" % col, typ), ("%s / 1000000" % col, typ),
                                   ("%s >> 40" % col, typ), ("coalesce(%s, -1)" % col, typ),
                                   ("(%s %% 10)::int2" % col, "smallint"), ("abs(%s %% 1000000)" % col, typ)]
    elif typ == "date":
        opts = [(col, typ)] * 4 + [("coalesce(%s, 'infinity')" % col, typ),
                                   ("greatest(%s, date '2000-01-01')" % col, typ),
                                   ("CASE WHEN %s.g %% 2 = 0 THEN %s END" % (x, col), typ)]
    elif typ == "timestamp":
        opts = [(col, typ)] * 4 + [("date_trunc('day', %s)" % col, typ), ("%s::date" % col, "date"),
                                   ("coalesce(%s, '-infinity')" % col, typ),
                                   ("greatest(%s, timestamp '2000-01-01')" % col, typ)]
    elif typ == "timestamptz":
        opts = [(col, typ)] * 4 + [("date_trunc('month', %s)" % col, typ),
                                   ("%s::timestamp" % col, "timestamp"),
                                   ("coalesce(%s, 'infinity')" % col, typ)]
    elif typ == "real":
        opts = [(col, typ)] * 4 + [("-%s" % col, typ), ("abs(%s)" % col, typ),
                                   ("%s::float8" % col, "double precision"),
                                   ("floor(%s)" % col, "double precision"),
                                   ("coalesce(%s, 'NaN')" % col, typ)]
    elif typ == "numeric":
        opts = [(col, typ)] * 4 + [("-%s" % col, typ), ("coalesce(%s, 'NaN')" % col, typ),
                                   ("abs(%s)" % col, typ), ("%s::numeric_domain" % col, typ)]
    elif typ == "boolean":
        opts = [(col, typ)] * 4 + [("NOT %s" % col, typ), ("coalesce(%s, true)" % col, typ)]
    elif typ == "uuid":
        opts = [(col, typ)] * 4 + [("coalesce(%s, '00000000-0000-0000-0000-000000000000')" % col, typ),
                                   ("md5(%s::text)::uuid" % col, typ), ("%s::uuid_domain" % col, typ)]
    elif typ == "inet":
        opts = [(col, typ)] * 4 + [("network(%s)" % col, "cidr"), ("coalesce(%s, '::1')" % col, typ),
                                   ("masklen(%s)" % col, "integer")]
    elif typ == "interval":
        opts = [(col, typ)] * 4 + [("-%s" % col, typ), ("justify_interval(%s / 2)" % col, typ),
                                   ("coalesce(%s, '0')" % col, typ)]
    elif typ == "timetz":
        opts = [(col, typ)] * 4 + [("%s + interval '90 minutes'" % col, typ),
                                   ("%s AT TIME ZONE '+03'" % col, typ),
                                   ("%s::time" % col, "time without time zone")]
    else:
        opts = [(col, typ)] * 4 + [("-%s" % col, typ), ("abs(%s)" % col, typ),
                                   ("floor(%s)" % col, typ), ("round(%s)" % col, typ),
                                   ("coalesce(%s, '-Infinity')" % col, typ)]
    return rng.choice(opts)


def random_key(rng, x, allow_text=True, allow_nd=False):
    r = rng.random()
    if allow_text and (COLLATIONS["icu"] or COLLATIONS["libc"]) and rng.random() < 0.2:
        e = rng.choice(["%s.ut" % x, "%s.ut" % x, "%s.ut" % x, "%s.txt" % x, "upper(%s.ut)" % x,
                        "(%s.ut || %s.i2)" % (x, x), "left(%s.ut, 2)" % x])
        choices = []
        if COLLATIONS["icu"]:
            choices += ["icu", "icu", "und"] + (["nd", "nd"] if allow_nd else [])
        if COLLATIONS["libc"]:
            choices.append("libc")
        c = rng.choice(choices)
        if c == "icu":
            return Key('%s COLLATE "en-x-icu"' % e, "text icu")
        if c == "und":
            return Key('%s COLLATE "und-x-icu"' % e, "text icu")
        if c == "nd":
            return Key("%s COLLATE fuzz_ci" % e, "text nd", shown="hashtext(%s COLLATE fuzz_ci)" % e)
        return Key('%s COLLATE "%s"' % (e, COLLATIONS["libc"]), "text libc")
    if r < 0.08:
        return Key("%s.g" % x, "integer")
    if r < 0.12:
        return Key("%s.id %% 10" % x, "integer")
    if r < 0.15 and allow_text:
        return Key(rng.choice(["%s.txt" % x, "left(%s.txt, 1)" % x]), "text")
    if r < 0.22 and allow_text:
        # bytes order: prefixes that tie (long shared ones, longer strings
        # than the prefix), resolved by PostgreSQL's comparator
        return Key(rng.choice(["%s.txt COLLATE \"C\"" % x, "upper(%s.txt) COLLATE \"C\"" % x,
                               "(%s.txt || %s.i4) COLLATE \"C\"" % (x, x),
                               "left(%s.txt, 3) COLLATE \"C\"" % x]), "text C")
    c, typ = rng.choice(KEY_COLS)
    e, t = key_exprs(rng, c, typ, x)
    return Key(e, t)


def dirs(rng):
    # (USING < and > are ASC and DESC, by the type's default operators)
    d = rng.choice(["", "", " ASC", " DESC", " DESC", " USING <", " USING >"])
    n = rng.choice(["", "", "", " NULLS FIRST", " NULLS LAST"])
    return d + n


class Query:
    """One generated query and how to compare its results."""

    def __init__(self):
        self.kind = ""
        self.sql = ""
        self.ordered = True      # top-level order decided by the first nkeys columns
        self.nkeys = 0           # output columns 0..nkeys-1 are ORDER BY keys
        self.exact = []          # more columns compared position by position (row_number)
        self.first_partial = False  # the first tie group may be cut (OFFSET)
        self.last_partial = False   # the last tie group may be cut (LIMIT)
        # an inner ORDER BY's LIMIT/OFFSET chose among rows it ties: which
        # ones is either sort's choice, and the outer ORDER BY may place
        # them anywhere, so only the keys are compared
        self.inner_cut = False
        self.normalize = False   # -0/0 in any column are the same (grouping picks either)
        self.eligible = False    # we expect GpuSort with min_rows = 0
        self.mode = "plain"      # plain, cursor, prepared
        self.prepare = None      # (param types, list of (params, per-exec SET lines))
        self.fetches = None
        self.scroll = True
        self.settings = []       # more SET lines for both runs (the shape's)
        # the approximate opt-in (mode "approx"): (mode, intervals, column
        # type, descending, nulls first, limit or None, the query without
        # its LIMIT)
        self.approx = None


def limit_clause(rng, nrows):
    """(SQL, first_partial, last_partial)"""
    n = rng.choice([0, 1, 2, 3, 5, 10, 10, 50, 100, 1000, max(1, nrows // 2), nrows + 5])
    m = rng.choice([1, 2, 5, 10, 100, max(1, nrows // 3), nrows + 1])
    r = rng.random()
    if r < 0.25:
        return " LIMIT %d" % n, False, n > 0
    if r < 0.35:
        return " OFFSET %d" % m, True, False
    if r < 0.5:
        return " LIMIT %d OFFSET %d" % (n, m), True, n > 0
    if r < 0.62:
        if rng.random() < 0.5:
            return " FETCH FIRST %d ROWS WITH TIES" % max(n, 1), False, False
        return " OFFSET %d ROWS FETCH FIRST %d ROWS WITH TIES" % (m, max(n, 1)), True, False
    if r < 0.67:
        return " FETCH FIRST %d ROWS ONLY" % n, False, n > 0
    if r < 0.71:
        return rng.choice([" LIMIT ALL", " LIMIT NULL", " OFFSET 0", " LIMIT ALL OFFSET 0"]), False, False
    return "", False, False


class Gen:
    def __init__(self, schema, rng, approximate_only=False):
        self.s = schema
        self.rng = rng
        self.approximate_only = approximate_only

    def table(self, allow_big=True):
        r = self.rng
        choices = ["tiny", "small", "small", "medium", "medium", "pt"]
        if allow_big and r.random() < 0.15:
            return "big"
        return r.choice(choices)

    def where(self, x):
        r = self.rng
        opts = ["", "", "", " WHERE %s.g < %d" % (x, r.randint(0, 10)),
                " WHERE %s.i4 IS NOT NULL" % x,
                " WHERE %s.id %% %d = %d" % (x, r.choice([2, 3, 7]), r.randint(0, 1)),
                " WHERE %s.f8 > 0" % x,
                " WHERE %s.g IN (SELECT g FROM dim WHERE w < %d)" % (x, r.randint(0, 11)),
                " WHERE EXISTS (SELECT 1 FROM dim d2 WHERE d2.g = %s.g AND d2.w > %d)" % (x, r.randint(0, 11)),
                " WHERE %s.id IN (SELECT y.id FROM %s y ORDER BY %s%s, y.id LIMIT %d)" % (
                    x, r.choice(["small", "medium"]), random_key(r, "y", False).expr, dirs(r),
                    r.choice([10, 100, 1000]))]
        return r.choice(opts)

    def source(self, q):
        """FROM clause with alias x (all table columns); returns (with, from, extra payload, rows)."""
        r = self.rng
        t = self.table()
        rows = self.s.sizes[t]
        kind = r.random()
        if kind < 0.55:
            return "", "%s x" % t, [], rows, t
        if kind < 0.65:
            j = r.choice(["JOIN", "LEFT JOIN"])
            return "", "%s x %s dim d ON d.g = x.g" % (t, j), ["d.name", "d.w"], rows, t + "+dim"
        if kind < 0.72:
            t2 = r.choice(["small", "medium", "tiny"])
            return "", "%s x JOIN %s y ON y.id = x.id" % (t, t2), ["y.i4 AS y_i4", "y.txt AS y_txt"], \
                min(rows, self.s.sizes[t2]), t + "+" + t2
        if kind < 0.82:
            t2 = r.choice(["small", "medium", "tiny", "pt"])
            return "", "(SELECT * FROM %s UNION ALL SELECT * FROM %s) x" % (t, t2), [], \
                rows + self.s.sizes[t2], t + "|" + t2
        mat = r.choice(["", "MATERIALIZED ", "NOT MATERIALIZED "])
        w = self.where("c0")
        return "WITH c AS %s(SELECT * FROM %s c0%s) " % (mat, t, w), "c x", [], rows, "cte"

    def payload(self, rows, extra, limited):
        r = self.rng
        if rows > 30000 and not limited:
            return ["x.id"] + extra[:1]
        if r.random() < 0.3:
            return ["x.*"] + extra
        cols = ["x.id", "x.g", "x.txt"] + ["x.%s" % c for c, _ in KEY_COLS]
        return r.sample(cols, r.randint(1, 5)) + extra

    def order_keys(self, x, allow_junk=True, allow_nd=False):
        """List of (Key, dirs, output?)"""
        r = self.rng
        nk = r.choice([1, 1, 1, 2, 2, 2, 3, 3, 4, 5, 6, 7, 8])
        keys = []
        for i in range(nk):
            k = random_key(r, x, allow_nd=allow_nd)
            out = not (allow_junk and i > 0 and r.random() < 0.1)
            keys.append((k, dirs(r), out))
        if allow_junk and r.random() < 0.05:
            # a volatile last key: PostgreSQL's, after a unique key
            keys.append((Key("%s.id" % x, "integer"), "", True))
            keys.append((Key("random()", "double precision", True), "", False))
        return keys

    @staticmethod
    def eligible(keys):
        return key_words(k.typ for k, _, _ in keys) <= 8 and \
            all(k.typ in GPU_TYPES and not k.volatile for k, _, _ in keys)

    def select_core(self, q, limited_hint=None, force_total=False, allow_srf=True):
        """SELECT keys..., payload FROM source ORDER BY ... [LIMIT]; fills q."""
        r = self.rng
        with_, frm, extra, rows, tname = self.source(q)
        keys = self.order_keys("x", allow_nd=True)
        if force_total:
            keys.append((Key("x.id", "integer"), "", True))
        outkeys = [k for k in keys if k[2]]
        sel = []
        refs = []
        j = 0
        for k, d, out in keys:
            if out:
                j += 1
                sel.append("%s AS k%d" % (k.shown, j))
                # a key shown as its hash is ordered by its expression
                refs.append(r.choice(["k%d" % j, str(j), None, None]) if k.shown == k.expr else None)
            else:
                refs.append(None)
        q.nkeys = len(outkeys)
        lim, fp, lp = limit_clause(r, rows) if limited_hint is None else limited_hint
        pay = self.payload(rows, extra, bool(lim.strip()) and "ALL" not in lim and "NULL" not in lim)
        sel += pay
        if allow_srf and r.random() < 0.06:
            sel.append("generate_series(1, (x.id % 3)) AS srf")
            q.kind += "+srf"
        items = []
        for (k, d, out), ref in zip(keys, refs):
            items.append((ref if (out and ref) else k.expr) + d)
        where = self.where("x") if r.random() < 0.4 else ""
        sql = "%sSELECT %s FROM %s%s ORDER BY %s%s" % (with_, ", ".join(sel), frm, where, ", ".join(items), lim)
        q.first_partial |= fp
        q.last_partial |= lp
        q.eligible = self.eligible(keys)
        q.kind = tname + q.kind
        return sql, keys

    def ordered_inner(self, q):
        """An ordered query to select from, and the outer ORDER BY of its
        output keys (k1, k2, ...) in the same directions."""
        inner, keys = self.select_core(q, allow_srf=False)
        q.inner_cut = q.first_partial or q.last_partial
        outs = [(k, d) for k, d, o in keys if o]
        return inner, ", ".join("k%d%s" % (i + 1, d) for i, (k, d) in enumerate(outs))

    def gen(self):
        r = self.rng
        q = Query()
        if r.random() < 0.06 or self.approximate_only:
            self.approximate(q)
            return q
        shape = r.random()
        if shape < 0.36:
            q.sql, _ = self.select_core(q)
            q.kind = "plain:" + q.kind
        elif shape < 0.44:
            inner, ob = self.ordered_inner(q)
            lim, fp, lp = limit_clause(r, 100) if r.random() < 0.5 else ("", False, False)
            q.first_partial |= fp
            q.last_partial |= lp
            q.sql = "SELECT * FROM (%s) s ORDER BY %s%s" % (inner, ob, lim)
            q.kind = "subquery:" + q.kind
        elif shape < 0.50:
            inner, ob = self.ordered_inner(q)
            q.sql = "WITH s AS %s(%s) SELECT * FROM s ORDER BY %s" % (
                r.choice(["MATERIALIZED ", ""]), inner, ob)
            q.kind = "cte-sorted:" + q.kind
        elif shape < 0.56:
            inner, keys = self.select_core(q, allow_srf=False)
            # row_number() over the ordered subquery: its order is the input's
            extra = r.choice(["row_number() OVER () AS rn", "count(*) OVER (ROWS UNBOUNDED PRECEDING) AS rn"])
            q.sql = "SELECT s.*, %s FROM (%s) s" % (extra, inner)
            q.exact = ["rn"]
            q.kind = "window:" + q.kind
        elif shape < 0.62:
            self.union_top(q)
        elif shape < 0.68:
            self.group_by(q)
        elif shape < 0.72:
            self.distinct(q)
        elif shape < 0.77:
            self.lateral(q)
        elif shape < 0.80:
            self.unordered_subquery(q)
        elif shape < 0.86:
            self.sort_site(q)
        elif shape < 0.92:
            q.sql, _ = self.select_core(q, allow_srf=False)
            q.kind = "cursor:" + q.kind
            q.mode = "cursor"
            q.scroll = r.random() < 0.8
        else:
            self.prepared(q)
        return q

    def approximate(self, q):
        """The approximate opt-in (gpusort.approximate_intervals): one
        integer key, or a float key in quantile mode, at the top level; the
        output is checked against its guarantee, not position by position
        (Fuzzer.approx)."""
        r = self.rng
        mode = r.choice(["width", "quantile"])
        cols = [("i2", "smallint"), ("i4", "integer"), ("i8", "bigint")]
        if mode == "quantile":
            cols += [("f4", "real"), ("f8", "double precision")]
        c, typ = r.choice(cols)
        intervals = r.choice([1, 2, 3, 10, 100, 1000, 5000])
        desc = r.random() < 0.5
        nulls = r.choice(["", "", " NULLS FIRST", " NULLS LAST"])
        nulls_first = nulls == " NULLS FIRST" or (nulls == "" and desc)
        t = self.table()
        full = "SELECT x.%s AS k, x.id FROM %s x ORDER BY x.%s%s%s" % (
            c, t, c, " DESC" if desc else "", nulls)
        limit = r.choice([None, None, 0, 1, 10, 100, max(1, self.s.sizes[t] // 2)])
        q.sql = full + ("" if limit is None else " LIMIT %d" % limit)
        q.settings = ["SET gpusort.approximate_mode = %s" % mode,
                      "SET gpusort.approximate_intervals = %d" % intervals]
        q.mode = "approx"
        q.approx = (mode, intervals, typ, desc, nulls_first, limit, full)
        q.kind = "approx:%s:%s" % (mode, t)

    def union_top(self, q):
        r = self.rng
        x = "x"
        nk = r.randint(1, 4)
        cols = [r.choice(KEY_COLS) for _ in range(nk)]
        keys = []
        for c, typ in cols:
            keys.append(key_exprs(r, c, typ, x))
        arms = []
        rows = 0
        for a in range(r.randint(2, 3)):
            t = self.table(allow_big=False)
            rows += self.s.sizes[t]
            arm = "SELECT %s, x.id, x.txt FROM %s x%s" % (
                ", ".join("%s AS k%d" % (e, i + 1) if a == 0 else e for i, (e, t_) in enumerate(keys)),
                t, self.where("x") if r.random() < 0.3 else "")
            if r.random() < 0.2:
                arm = "(%s ORDER BY %s, x.id LIMIT %d)" % (arm, keys[0][0], r.choice([5, 50]))
            arms.append(arm)
        lim, fp, lp = limit_clause(r, rows)
        ob = ", ".join("%d%s" % (i + 1, dirs(r)) for i in range(nk))
        q.sql = " UNION ALL ".join(arms) + " ORDER BY " + ob + lim
        q.nkeys = nk
        q.first_partial, q.last_partial = fp, lp
        q.eligible = False  # the ORDER BY of a set operation is PostgreSQL's
        q.kind = "union-all-top"

    def group_by(self, q):
        r = self.rng
        with_, frm, extra, rows, tname = self.source(q)
        ng = r.randint(1, 3)
        groups = []
        for _ in range(ng):
            c, typ = r.choice(KEY_COLS + [("g", "integer")])
            if c == "g":
                groups.append(("x.g", "integer"))
            elif r.random() < 0.5:
                groups.append(key_exprs(r, c, typ, "x"))
            else:
                groups.append(("x.%s" % c, typ))
        aggs = [("count(*)", "bigint"), ("min(x.i4)", "integer"), ("max(x.i8)", "bigint"),
                ("sum(x.i2)", "bigint"), ("count(x.f8)", "bigint"), ("max(x.dt)", "date")]
        agg = r.sample(aggs, r.randint(1, 3))
        items = groups + agg
        r.shuffle(items)
        nk = r.randint(1, len(items))
        ordered = items[:nk]
        sel = ["%s AS k%d" % (e, i + 1) for i, (e, t) in enumerate(ordered)] + [e for e, t in items[nk:]]
        ob = ", ".join(r.choice([e, "k%d" % (i + 1)]) + dirs(r) for i, (e, t) in enumerate(ordered))
        lim, fp, lp = limit_clause(r, 100)
        having = " HAVING count(*) > %d" % r.choice([0, 1, 5]) if r.random() < 0.2 else ""
        q.sql = "%sSELECT %s FROM %s GROUP BY %s%s ORDER BY %s%s" % (
            with_, ", ".join(sel), frm, ", ".join(e for e, t in groups), having, ob, lim)
        q.nkeys = nk
        q.first_partial, q.last_partial = fp, lp
        q.normalize = True
        q.eligible = key_words(t for e, t in ordered) <= 8 and all(t in GPU_TYPES for e, t in ordered)
        q.kind = "group-by:" + tname

    def distinct(self, q):
        r = self.rng
        with_, frm, extra, rows, tname = self.source(q)
        keys = [random_key(r, "x") for _ in range(r.randint(1, 4))]
        ds = [dirs(r) for _ in keys]
        lim, fp, lp = limit_clause(r, 100)
        if r.random() < 0.3 and len(keys) > 1:
            # DISTINCT ON the first key: the rest of the keys pick the row
            q.sql = "%sSELECT DISTINCT ON (%s) %s FROM %s ORDER BY %s%s" % (
                with_, keys[0].expr, ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys)),
                frm, ", ".join(k.expr + d for k, d in zip(keys, ds)), lim)
            q.kind = "distinct-on:" + tname
        else:
            q.sql = "%sSELECT DISTINCT %s FROM %s ORDER BY %s%s" % (
                with_, ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys)),
                frm, ", ".join(k.expr + d for k, d in zip(keys, ds)), lim)
            q.kind = "distinct:" + tname
        q.nkeys = len(keys)
        q.first_partial, q.last_partial = fp, lp
        q.normalize = True
        q.eligible = key_words(k.typ for k in keys) <= 8 and all(k.typ in GPU_TYPES for k in keys)

    def lateral(self, q):
        r = self.rng
        t = r.choice(["small", "medium", "pt", "big"])
        keys = [random_key(r, "y", False) for _ in range(r.randint(1, 3))]
        ds = [dirs(r) for _ in keys]
        n = r.choice([1, 3, 10, 100])
        inner = "SELECT %s, y.id FROM %s y WHERE y.g = x.g ORDER BY %s, y.id LIMIT %d" % (
            ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys)), t,
            ", ".join(k.expr + d for k, d in zip(keys, ds)), n)
        rep = "CROSS JOIN generate_series(1, 2) rr " if r.random() < 0.5 else ""
        outer_ob = ", ".join(["x.g"] + ["s.k%d%s" % (i + 1, d) for i, d in enumerate(ds)] + ["s.id"])
        q.sql = "SELECT x.g AS k0, %s, s.id AS kid, x.w FROM dim x %s, LATERAL (%s) s ORDER BY %s" % (
            ", ".join("s.k%d" % (i + 1) for i in range(len(keys))), rep, inner, outer_ob)
        q.sql = q.sql.replace("dim x , LATERAL", "dim x, LATERAL")
        q.nkeys = len(keys) + 2
        q.eligible = True
        q.kind = "lateral:" + t

    def unordered_subquery(self, q):
        """Sorted subquery (total order) below an aggregate: compare as a multiset."""
        r = self.rng
        inner, keys = self.select_core(q, force_total=True, allow_srf=False)
        q.sql = "SELECT s.k1, count(*) AS c FROM (%s) s GROUP BY s.k1" % inner
        q.ordered = False
        q.normalize = True
        q.kind = "agg-over-sorted:" + q.kind

    def sort_site(self, q):
        """A sort below the top of the plan (sort_sites.c), no ORDER BY on
        top: windows whose functions do not depend on the order of ties,
        grouping, DISTINCT, DISTINCT ON (total order inside), set
        operations, merge joins. Compared as multisets."""
        r = self.rng
        q.ordered = False
        q.normalize = True
        if r.random() < 0.6:
            q.settings.append("SET enable_hashagg = off")
        kind = r.choice(["window", "window", "group", "distinct", "distinct-on", "setop", "join", "join",
                         "topn", "topn"])
        if kind == "topn":
            self.top_n_per_group(q)
            return
        if kind in ("window", "group", "distinct"):
            with_, frm, extra, rows, tname = self.source(q)
            # mostly keys GpuSort takes; a text key now and then stays PostgreSQL's
            keys = [random_key(r, "x", r.random() < 0.15) for _ in range(r.randint(1, 3))]
            exprs = ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys))
            if kind == "window":
                part = keys[0].expr
                order = ", ".join(k.expr + dirs(r) for k in keys[1:]) or "x.g" + dirs(r)
                w = "PARTITION BY %s ORDER BY %s" % (part, order)
                if r.random() < 0.3:
                    w = "ORDER BY %s" % order
                funcs = ["rank() OVER w AS r", "dense_rank() OVER w AS dr", "sum(x.i2) OVER w AS s",
                         "count(*) OVER (PARTITION BY %s) AS c" % keys[-1].expr,
                         "percent_rank() OVER w AS pr", "max(x.i4) OVER w AS mx"]
                sel = r.sample(funcs, r.randint(1, 4))
                q.sql = "%sSELECT x.id, %s, %s FROM %s%s WINDOW w AS (%s)" % (
                    with_, exprs, ", ".join(sel), frm, self.where("x") if "x" in frm.split()[-1:] else "", w)
            elif kind == "group":
                groups = ", ".join(k.expr for k in keys)
                q.sql = "%sSELECT %s, count(*), min(x.i4), max(x.i8), sum(x.i2) FROM %s GROUP BY %s%s" % (
                    with_, exprs, frm, groups, " HAVING count(*) > 1" if r.random() < 0.2 else "")
            else:
                q.sql = "%sSELECT DISTINCT %s FROM %s" % (with_, exprs, frm)
            q.eligible = all(k.typ in GPU_TYPES for k in keys)
            q.kind = "sort-site-%s:%s" % (kind, tname)
            return
        if kind == "distinct-on":
            t = self.table(allow_big=False)
            keys = [random_key(r, "x", False) for _ in range(r.randint(1, 3))]
            ob = ", ".join(k.expr + dirs(r) for k in keys) + ", x.id" + dirs(r)
            q.sql = "SELECT DISTINCT ON (%s) %s, x.id, x.txt FROM %s x%s ORDER BY %s" % (
                keys[0].expr, ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys)),
                t, self.where("x"), ob)
            q.eligible = all(k.typ in GPU_TYPES for k in keys)
            q.kind = "sort-site-distinct-on:" + t
            return
        # the same column of two tables (a set operation may take the few
        # values of g, a join on them, on i2's or dt's would make too many rows)
        if kind == "setop":
            c, typ = r.choice(KEY_COLS + [("g", "integer")])
        else:
            c, typ = r.choice([ct for ct in KEY_COLS if ct[0] not in ("i2", "dt")])
        t1, t2 = self.table(allow_big=False), self.table(allow_big=False)
        if kind == "setop":
            op = r.choice(["UNION", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"])
            k1, k2 = "x.%s" % c, "y.%s" % c
            more = r.random() < 0.5
            q.sql = "SELECT %s%s FROM %s x %s SELECT %s%s FROM %s y" % (
                k1, ", x.g" if more else "", t1, op, k2, ", y.g" if more else "", t2)
            q.eligible = typ in GPU_TYPES
            q.kind = "sort-site-setop:%s+%s" % (t1, t2)
            return
        # the left side thinned out: a key with few values makes many rows
        t1 = r.choice(["tiny", "small"])
        if r.random() < 0.8:
            q.settings.append("SET enable_hashjoin = off")
        if r.random() < 0.6:
            q.settings.append("SET enable_nestloop = off")
        join = r.choice(["JOIN", "JOIN", "LEFT JOIN", "FULL JOIN"])
        cond = "x.%s = y.%s" % (c, c)
        if r.random() < 0.3:
            cond += " AND x.g = y.g"
        q.sql = "SELECT x.id, y.id AS yid, x.%s, y.%s AS y%s FROM %s x %s %s y ON %s WHERE x.id %% %d = 0" % (
            c, c, c, t1, join, t2, cond, r.choice([7, 13, 29]))
        q.eligible = typ in GPU_TYPES
        q.kind = "sort-site-join:%s+%s" % (t1, t2)

    def top_n_per_group(self, q):
        """Top-N per group (sort_sites.c's mark_top_n()): a window function
        filtered in an outer WHERE, which PostgreSQL makes the top
        WindowAgg's run condition, so that GpuSort passes on only the rows
        of each partition it keeps; now and then with another function of
        the window that rules the cut out, and beyond work_mem (prunes,
        runs). row_number() over a total order, so the multiset is
        defined."""
        r = self.rng
        with_, frm, extra, rows, tname = self.source(q)
        keys = [random_key(r, "x", r.random() < 0.1) for _ in range(r.randint(1, 3))]
        exprs = ", ".join("%s AS k%d" % (k.expr, i + 1) for i, k in enumerate(keys))
        func = r.choice(["row_number", "rank", "dense_rank"])
        order = ", ".join(k.expr + dirs(r) for k in keys[1:]) or "x.g" + dirs(r)
        if func == "row_number":
            order += ", x.id" + dirs(r)
        w = "ORDER BY %s" % order
        if r.random() < 0.8:
            w = "PARTITION BY %s %s" % (keys[0].expr, w)
        sel = ["%s() OVER w AS r" % func]
        others = ["rank() OVER w AS r2", "dense_rank() OVER w AS d2", "sum(x.i2) OVER w AS s2",
                  "count(*) OVER (PARTITION BY x.g) AS c2"]
        if func == "row_number":
            others.append("row_number() OVER w AS n2")
        if r.random() < 0.4:
            sel.append(r.choice(others))
        n = r.choice([0, 1, 2, 3, 10, 1000])
        cond = r.choice(["s.r <= %d", "s.r < %d", "%d >= s.r", "%d > s.r"])
        cond = cond % n
        if r.random() < 0.2:
            cond += " AND s.r < %d" % r.choice([2, 5])
        if r.random() < 0.3:
            q.settings.append("SET work_mem = '%s'" % r.choice(["64kB", "256kB"]))
        q.sql = "%sSELECT * FROM (SELECT x.id, %s, %s FROM %s%s WINDOW w AS (%s)) s WHERE %s" % (
            with_, exprs, ", ".join(sel), frm, self.where("x") if "x" in frm.split()[-1:] else "", w, cond)
        q.eligible = all(k.typ in GPU_TYPES for k in keys)
        q.kind = "sort-site-topn:%s" % tname

    def prepared(self, q):
        r = self.rng
        q.mode = "prepared"
        t = self.table()
        rows = self.s.sizes[t]
        keys = self.order_keys("x", allow_junk=False)
        outs = [k for k in keys if k[2]]
        sel = ["%s AS k%d" % (k.expr, i + 1) for i, (k, d, o) in enumerate(outs)]
        sel += self.payload(rows, [], True)
        ob = ", ".join(k.expr + d for k, d, o in keys)
        style = r.choice(["param", "param", "setting", "offset"])
        gmax = r.randint(0, 10)
        if style != "setting" and r.random() < 0.3:
            # the LIMIT's parameter is an output column too: the plan's
            # bound then refers to a column of the sort's input
            sel.append("$1::int8 AS lim")
        if style == "param":
            sql = "SELECT %s FROM %s x WHERE x.g < $2 ORDER BY %s LIMIT $1" % (", ".join(sel), t, ob)
            types = "(int, int)"
            q.first_partial, q.last_partial = False, True
        elif style == "offset":
            sql = "SELECT %s FROM %s x WHERE x.g < $3 ORDER BY %s LIMIT $1 OFFSET $2" % (", ".join(sel), t, ob)
            types = "(int, int8, int)"
            q.first_partial, q.last_partial = True, True
        else:
            sql = "SELECT %s FROM %s x WHERE x.g < $1 ORDER BY %s LIMIT current_setting('fuzz.n')::int" % (
                ", ".join(sel), t, ob)
            types = "(int)"
            q.first_partial, q.last_partial = False, True
        execs = []
        for _ in range(r.randint(2, 6)):
            n = r.choice([0, 1, 3, 10, 100, 1000, rows])
            g = r.randint(0, 10)
            sets = []
            if r.random() < 0.3:
                sets.append("SET work_mem = '%s'" % r.choice(["64kB", "1MB", "64MB"]))
            if style == "param":
                params = "(%s, %d)" % (r.choice([str(n), str(n), "NULL"]), g)
            elif style == "offset":
                params = "(%d, %d, %d)" % (n, r.choice([0, 1, 5, 50]), g)
            else:
                params = "(%d)" % g
                sets.append("SET fuzz.n = '%d'" % n)
            execs.append((params, sets))
        q.sql = sql
        q.nkeys = len(outs)
        q.prepare = (types, execs, r.choice(["force_generic_plan"] * 3 + ["auto", "force_custom_plan"]))
        q.eligible = self.eligible(keys)
        q.kind = "prepared-%s:%s" % (style, t)


# the paths GpuSort competes with come twice
PLANNER_TOGGLES = ["enable_sort", "enable_sort", "enable_incremental_sort", "enable_incremental_sort",
                   "enable_gathermerge", "enable_gathermerge", "enable_hashjoin", "enable_mergejoin",
                   "enable_nestloop", "enable_indexscan", "enable_seqscan", "enable_hashagg",
                   "enable_material", "enable_memoize", "enable_bitmapscan", "enable_parallel_hash",
                   "enable_parallel_append"]


def random_settings(rng, device):
    """Settings for both runs (the GpuSort run adds gpusort.enabled = on)."""
    s = []
    s.append("SET work_mem = '%s'" % rng.choice(["64kB", "64kB", "256kB", "1MB", "4MB", "4MB", "64MB", "1GB"]))
    par = rng.choice(["off", "on", "on", "zero", "zero"])
    if par == "off":
        s.append("SET max_parallel_workers_per_gather = 0")
    elif par == "zero":
        s += ["SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
              "SET min_parallel_table_scan_size = 0", "SET min_parallel_index_scan_size = 0",
              "SET max_parallel_workers_per_gather = %d" % rng.choice([2, 2, 4])]
    if par != "off" and rng.random() < 0.2:
        s.append("SET parallel_leader_participation = off")
    # the planner's other choices: a path that wins only with one of them off
    # (a Gather Merge off, say) must plan and run as well as the usual ones
    for toggle in sorted(set(rng.sample(PLANNER_TOGGLES, rng.choice([0, 0, 1, 1, 2])))):
        s.append("SET %s = off" % toggle)
    g = []
    g.append("SET gpusort.min_rows = %d" % rng.choice([0, 0, 0, 0, 100, 50000]))
    g.append("SET gpusort.gpu_min_elements = %d" % rng.choice([0, 0, 16384]))
    g.append("SET gpusort.algorithm = %s" % rng.choice(["auto", "auto", "bitonic", "butterfly", "radix"]))
    g.append("SET gpusort.device = %s" % device)
    g.append("SET gpusort.read_table_pages = %s" % rng.choice(["on", "on", "off"]))
    return s, g, par


# ---------------------------------------------------------------- running

class ConnectionLost(Exception):
    pass


class QueryError(Exception):
    def __init__(self, code, msg):
        Exception.__init__(self, msg)
        self.code, self.msg = code, msg


NUMERIC_TEXT = re.compile(r"^-?[0-9]+\.[0-9]+$")


def norm(v):
    """A value as its sort key compares: float -0 is 0; a numeric prints
    its scale, and 0.00 = 0.0000 (rows of tables drawn with other scales
    meet in a UNION), so trailing zeros go."""
    if v == "-0":
        return "0"
    if isinstance(v, str) and NUMERIC_TEXT.match(v):
        v = v.rstrip("0").rstrip(".")
        return "0" if v in ("", "-0") else v
    return v


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.conn = None
        self.setup_printed = False
        self.passed = self.failed = 0
        self.used = 0
        self.eligible = self.eligible_used = 0
        self.errors_both = 0
        self.inconsistent = 0
        self.unused = collections.Counter()
        self.failed_kinds = collections.Counter()

    # -- connection
    def connect(self):
        """Connects, waiting up to a minute: after a backend's crash the
        server restarts, and a connection made just before the restart
        breaks in its first statements."""
        deadline = time.time() + 60
        while True:
            try:
                self.conn = psycopg2.connect(self.args.dsn)
                self.setup_session()
                break
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                if time.time() > deadline:
                    raise
                time.sleep(1)

    def setup_session(self):
        self.conn.autocommit = True
        cur = self.conn.cursor()
        cur.execute("SELECT oid FROM pg_type")
        oids = tuple(r[0] for r in cur.fetchall())
        raw = psycopg2.extensions.new_type(oids, "FUZZRAW", lambda v, c: v)
        psycopg2.extensions.register_type(raw, self.conn)
        self.x("LOAD 'gpusort'")
        self.x("SET search_path = %s, public" % self.schema.name)
        self.x("SET TimeZone = 'UTC'")
        self.x("SET statement_timeout = '%ds'" % self.args.statement_timeout)

    def x(self, sql):
        cur = self.conn.cursor()
        cur.execute(sql)
        return cur

    def run(self, sql):
        """rows (tuples of text) and column names; QueryError on an error."""
        try:
            cur = self.conn.cursor()
            cur.execute(sql)
            if cur.description is None:
                return [], []
            return cur.fetchall(), [d[0] for d in cur.description]
        except psycopg2.Error as e:
            if self.conn.closed or e.pgcode is None:
                raise ConnectionLost(str(e))
            try:
                self.conn.rollback()
            except psycopg2.Error:
                pass
            if self.conn.status != psycopg2.extensions.STATUS_READY or not self.conn.autocommit:
                pass
            try:
                if self.conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                    self.x("ROLLBACK")
            except psycopg2.Error:
                pass
            raise QueryError(e.pgcode, (e.pgerror or str(e)).strip().splitlines()[0])

    def reset(self):
        self.x("RESET ALL")
        self.x("SET search_path = %s, public" % self.schema.name)
        self.x("SET TimeZone = 'UTC'")
        self.x("SET statement_timeout = '%ds'" % self.args.statement_timeout)

    # -- schema
    def create_schema(self):
        conn = psycopg2.connect(self.args.dsn)
        conn.autocommit = True
        cur = conn.cursor()
        # ICU in a UTF-8 database; en_US.UTF-8 (test/setup.sh), else
        # another libc collation that does not order by bytes
        cur.execute("SELECT getdatabaseencoding() = 'UTF8' AND "
                    "EXISTS (SELECT FROM pg_collation WHERE collname = 'und-x-icu')")
        COLLATIONS["icu"] = cur.fetchone()[0] in (True, "t")
        cur.execute("SELECT collname FROM pg_collation WHERE collprovider = 'c' "
                    "AND collname NOT IN ('C', 'POSIX', 'ucs_basic', 'default') AND collname NOT ILIKE 'C.%' "
                    "AND collencoding IN (-1, pg_char_to_encoding(getdatabaseencoding())) "
                    "ORDER BY collname <> 'en_US.utf8', collname LIMIT 1")
        row = cur.fetchone()
        COLLATIONS["libc"] = row[0] if row else None
        self.schema = Schema(self.args.seed, self.args.small)
        cur.execute("CREATE EXTENSION IF NOT EXISTS gpusort")
        cur.execute("DROP SCHEMA IF EXISTS %s CASCADE" % self.schema.name)
        t0 = time.time()
        for s in self.schema.setup:
            cur.execute(s)
        if COLLATIONS["icu"]:
            cur.execute("CREATE COLLATION %s.fuzz_ci (provider = icu, locale = 'und-u-ks-level2', "
                        "deterministic = false)" % self.schema.name)
        conn.close()
        return time.time() - t0

    def drop_schema(self):
        conn = psycopg2.connect(self.args.dsn)
        conn.autocommit = True
        conn.cursor().execute("DROP SCHEMA IF EXISTS %s CASCADE" % self.schema.name)
        conn.close()

    # -- comparing
    def keyof(self, q, cols, row):
        return tuple(norm(row[i]) for i in range(q.nkeys)) + tuple(norm(row[cols.index(c)]) for c in q.exact)

    def rowof(self, q, cols, row):
        skip = set(cols.index(c) for c in q.exact)
        if q.normalize:
            return tuple(norm(v) for i, v in enumerate(row) if i not in skip)
        return tuple(v for i, v in enumerate(row) if i not in skip)

    def compare(self, q, cols, A, B, first_partial=None, last_partial=None):
        """None if the GpuSort rows A agree with the reference rows B, else what differs."""
        fp = q.first_partial if first_partial is None else first_partial
        lp = q.last_partial if last_partial is None else last_partial
        if not q.ordered:
            ca = collections.Counter(self.rowof(q, cols, r) for r in A)
            cb = collections.Counter(self.rowof(q, cols, r) for r in B)
            if ca != cb:
                return "rows differ (unordered): %d rows against %d; only in gpusort: %s; only in reference: %s" % (
                    len(A), len(B), fmt(list((ca - cb).elements())[:3]), fmt(list((cb - ca).elements())[:3]))
            return None
        ka = [self.keyof(q, cols, r) for r in A]
        kb = [self.keyof(q, cols, r) for r in B]
        for i in range(min(len(ka), len(kb))):
            if ka[i] != kb[i]:
                return "keys differ at position %d (of %d gpusort, %d reference rows): gpusort %s, reference %s" % (
                    i + 1, len(A), len(B), fmt(ka[i]), fmt(kb[i]))
        if len(ka) != len(kb):
            i = min(len(ka), len(kb))
            return "row count differs: gpusort %d, reference %d; first extra row at position %d: %s" % (
                len(A), len(B), i + 1, fmt(A[i] if len(A) > i else B[i]))
        if q.inner_cut:
            return None
        runs = tie_runs([k[:q.nkeys] for k in ka])
        for ri, (a, b) in enumerate(runs):
            if (ri == 0 and fp) or (ri == len(runs) - 1 and lp):
                continue
            ca = collections.Counter(self.rowof(q, cols, r) for r in A[a:b])
            cb = collections.Counter(self.rowof(q, cols, r) for r in B[a:b])
            if ca != cb:
                return ("rows differ in the tie group at positions %d..%d (keys %s): only in gpusort: %s; "
                        "only in reference: %s" % (a + 1, b, fmt(ka[a][:q.nkeys]),
                                                   fmt(list((ca - cb).elements())[:3]),
                                                   fmt(list((cb - ca).elements())[:3])))
        return None

    def explain_used(self, sql):
        try:
            rows, _ = self.run("EXPLAIN (COSTS OFF) " + sql)
        except QueryError:
            return False
        return any("GpuSort" in r[0] for r in rows)

    # -- one query
    def one(self, idx):
        rng = random.Random("query-%d-%d" % (self.args.seed, idx))
        q = Gen(self.schema, rng, self.args.approximate).gen()
        common, gset, par = random_settings(rng, self.args.device)
        common = common + q.settings
        if q.mode == "cursor":
            q.fetches = cursor_ops(rng, q.scroll)
        self.reset()
        t0 = time.time()
        try:
            if q.mode == "plain":
                res = self.plain(q, common, gset)
            elif q.mode == "cursor":
                res = self.cursor(q, common, gset)
            elif q.mode == "approx":
                res = self.approx(q, common, gset)
            else:
                res = self.prepared(q, common, gset)
        except (ConnectionLost, psycopg2.OperationalError, psycopg2.InterfaceError) as e:
            res = ("connection lost (server crash?): %s" % (str(e).strip().splitlines() or ["?"])[0], False)
            self.connect()
        except psycopg2.Error as e:
            res = ("statement of the fuzzer failed: %s %s" % (e.pgcode, str(e).strip()), False)
            if self.conn.closed:
                self.connect()
            elif self.conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                self.x("ROLLBACK")
        problem, used = res
        q.used = used
        self.used += used
        if q.eligible and "SET gpusort.min_rows = 0" in gset:
            self.eligible += 1
            self.eligible_used += used
            if not used:
                self.unused[(par, "limit" if q.last_partial or q.first_partial else "no limit")] += 1
                if os.environ.get("GPUSORT_FUZZ_SHOW_UNUSED"):
                    print("-- not GpuSort (%s): %s" % (par, q.sql))
        if problem:
            self.failed += 1
            self.failed_kinds[q.kind.split(":")[0]] += 1
            self.report(idx, q, common, gset, problem)
        else:
            self.passed += 1
        if self.args.verbose:
            print("query %d [%s] %s %.2fs%s: %s" % (idx, q.kind, "FAIL" if problem else "ok", time.time() - t0,
                                                    " GpuSort" if used else "", q.sql[:300]))
            sys.stdout.flush()

    def set_all(self, lines):
        for s in lines:
            self.x(s)

    def both(self, q, common, gset, fn):
        """fn() under gpusort on, then under off: ((rows, cols) or QueryError) each."""
        out = []
        for on in (True, False):
            self.set_all(common + gset + ["SET gpusort.enabled = %s" % ("on" if on else "off")])
            try:
                out.append(fn(on))
            except QueryError as e:
                out.append(e)
        return out

    def errors(self, a, b):
        """Handles errors on either side: (done, problem)."""
        ea, eb = isinstance(a, QueryError), isinstance(b, QueryError)
        if not ea and not eb:
            return False, None
        if ea and eb:
            self.errors_both += 1
            if a.code == b.code:
                return True, None
            return True, "both failed, differently: gpusort %s %s; reference %s %s" % (a.code, a.msg, b.code, b.msg)
        if ea:
            return True, "gpusort run failed: %s %s (reference ran: %d rows)" % (a.code, a.msg, len(b[0]))
        if eb.code == "57014":  # reference timed out: nothing to compare
            return True, None
        return True, "reference run failed: %s %s (gpusort ran: %d rows)" % (b.code, b.msg, len(a[0]))

    def plain(self, q, common, gset):
        used = [False]

        def fn(on):
            if on:
                used[0] = self.explain_used(q.sql)
            return self.run(q.sql)
        a, b = self.both(q, common, gset, fn)
        done, problem = self.errors(a, b)
        if done:
            return problem, used[0]
        return self.compare(q, a[1], a[0], b[0]), used[0]

    def approx(self, q, common, gset):
        """The approximate opt-in: the GpuSort run against the exact order
        of all rows (gpusort.enabled = off, no LIMIT). Checked: the rows come
        from the input (all of them without a LIMIT, as many as the LIMIT
        asks with one); NULLs where the ORDER BY puts them; width mode: two
        rows out of order differ by less than one interval width,
        (max - min + 1) / intervals over the non-NULL keys, and with a LIMIT
        no row is a width or more past the exact boundary; quantile mode:
        every non-NULL row's position within D(n, m, s) of its exact rank
        (interval_map.h; the same formula here)."""
        mode, m, typ, desc, nulls_first, limit, full = q.approx
        used = [False]

        def fn(on):
            if on:
                used[0] = self.explain_used(q.sql)
                return self.run(q.sql)
            return self.run(full)
        a, b = self.both(q, common, gset, fn)
        done, problem = self.errors(a, b)
        if done:
            return problem, used[0]
        return approx_problem(mode, m, typ, desc, nulls_first, limit, a[0], b[0]), used[0]

    def prepared(self, q, common, gset):
        types, execs, cache = q.prepare
        used = [False]

        def fn(on):
            name = "fz_%s" % ("on" if on else "off")
            self.x("SET plan_cache_mode = %s" % cache)
            self.x("DEALLOCATE ALL")
            self.run("PREPARE %s%s AS %s" % (name, types, q.sql))
            results = []
            try:
                for i, (params, sets) in enumerate(execs):
                    self.set_all(sets)
                    try:
                        results.append(self.run("EXECUTE %s%s" % (name, params)))
                    except QueryError as e:
                        results.append(e)
                    if on and i == 0:
                        used[0] = self.explain_used("EXECUTE %s%s" % (name, params))
                    if on and i == 0 and self.rngx.random() < 0.3:
                        # planned with GpuSort; later executions under other settings
                        self.x("SET gpusort.enabled = off")
                        self.x("SET gpusort.algorithm = %s" % self.rngx.choice(["bitonic", "radix", "butterfly"]))
            finally:
                self.x("DEALLOCATE ALL")
            return results, None
        self.rngx = random.Random(q.sql)
        a, b = self.both(q, common, gset, fn)
        done, problem = self.errors(a, b)
        if done:
            return problem, used[0]
        for i, (ra, rb) in enumerate(zip(a[0], b[0])):
            done, problem = self.errors(ra, rb)
            if done:
                if problem:
                    return "EXECUTE #%d %s: %s" % (i + 1, execs[i][0], problem), used[0]
                continue
            p = self.compare(q, ra[1], ra[0], rb[0])
            if p:
                return "EXECUTE #%d %s: %s" % (i + 1, execs[i][0], p), used[0]
        return None, used[0]

    def cursor(self, q, common, gset):
        used = [False]
        # the number of rows, for the model of the cursor's position
        self.set_all(common + gset + ["SET gpusort.enabled = off"])
        try:
            n = int(self.run("SELECT count(*) FROM (%s) s" % q.sql)[0][0][0])
        except QueryError as e:
            return None, False
        expected = simulate(q.fetches, n)

        decl = "DECLARE c %sCURSOR FOR %s" % ("SCROLL " if q.scroll else "NO SCROLL ", q.sql)

        def fn(on):
            if on:
                used[0] = self.explain_used(decl)
            self.x("BEGIN")
            try:
                self.run(decl)
                out = []
                cols = None
                for op in q.fetches:
                    rows, c = self.run(op + " FROM c")
                    if c:
                        cols = c
                    out.append(rows)
            finally:
                if self.conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                    self.x("COMMIT")
            return out, cols
        a, b = self.both(q, common, gset, fn)
        done, problem = self.errors(a, b)
        if done:
            return problem, used[0]
        cols = a[1] or b[1]
        side = {}
        for name, (res, _) in (("reference", b), ("gpusort", a)):
            pos = {}
            for op, rows, exp in zip(q.fetches, res, expected):
                if op.startswith("MOVE"):
                    continue
                if len(rows) != len(exp):
                    return "%s: %s returned %d rows, expected %d (of %d)" % (name, op, len(rows), len(exp), n), used[0]
                for p, r in zip(exp, rows):
                    if p in pos and pos[p] != r:
                        if name == "reference" or not used[0]:
                            # PostgreSQL's own plan (seen: an index scan read
                            # backward from its end) is not ours to judge
                            self.inconsistent += 1
                            return None, used[0]
                        return "%s: row %d read twice, differently: %s then %s (%s)" % (
                            name, p, fmt(pos[p]), fmt(r), op), used[0]
                    pos[p] = r
            side[name] = pos
        ga, rb = side["gpusort"], side["reference"]
        positions = sorted(ga)
        for p in positions:
            if self.keyof(q, cols, ga[p]) != self.keyof(q, cols, rb[p]):
                return "keys differ at row %d: gpusort %s, reference %s" % (
                    p, fmt(self.keyof(q, cols, ga[p])), fmt(self.keyof(q, cols, rb[p]))), used[0]
        # rows: tie groups strictly inside a contiguous range of rows read
        for lo, hi in contiguous(positions):
            A = [ga[p] for p in range(lo, hi + 1)]
            B = [rb[p] for p in range(lo, hi + 1)]
            p = self.compare(q, cols, A, B, first_partial=True, last_partial=True)
            if p:
                return "rows %d..%d: %s" % (lo, hi, p), used[0]
        return None, used[0]

    # -- reporting
    def report(self, idx, q, common, gset, problem):
        out = []
        out.append("=" * 72)
        out.append("FAILURE: seed %d query %d [%s]: %s" % (self.args.seed, idx, q.kind, problem))
        out.append("-- rerun just this one: test/fuzz/fuzz.py --seed %d --only %d --dsn ..." % (self.args.seed, idx))
        if not self.setup_printed or self.args.verbose:
            out.append("-- setup (once):")
            out += ["%s;" % s for s in self.schema.setup] + ["LOAD 'gpusort';"]
            self.setup_printed = True
        else:
            out.append("-- setup: as printed for the first failure (schema %s)" % self.schema.name)
        out.append("-- settings:")
        out += ["SET search_path = %s, public;" % self.schema.name, "SET TimeZone = 'UTC';"]
        out += ["%s;" % s for s in common + gset]
        out.append("-- compare: SET gpusort.enabled = on;  against  SET gpusort.enabled = off;")
        if q.mode == "plain":
            out.append("%s;" % q.sql)
        elif q.mode == "approx":
            out.append("%s;" % q.sql)
            out.append("-- (checked against the guarantee of the approximate opt-in, not row by row;"
                       " the reference: %s)" % q.approx[6])
        elif q.mode == "cursor":
            out.append("BEGIN; DECLARE c %sCURSOR FOR %s;" % ("SCROLL " if q.scroll else "NO SCROLL ", q.sql))
            out += ["%s FROM c;" % f for f in q.fetches]
            out.append("COMMIT;")
        else:
            types, execs, cache = q.prepare
            out.append("SET plan_cache_mode = %s;" % cache)
            out.append("PREPARE fz%s AS %s;" % (types, q.sql))
            for params, sets in execs:
                out += ["%s;" % s for s in sets]
                out.append("EXECUTE fz%s;" % params)
            out.append("-- (in the gpusort run, 30% of the time gpusort settings change after the first EXECUTE)")
        out.append("-- GpuSort used: %s" % ("yes" if q.used else "no"))
        print("\n".join(out))
        sys.stdout.flush()


def quantile_rank_bound(n, m):
    """D(n, m, s) of kernels/interval_map.h (gs_quantile_rank_bound, with
    gs_quantile_sample_size's s)."""
    if n <= 1:
        return 0
    s = min(m * 256, n // 4)
    s = min(max(s, m), 1 << 24)
    s = max(s, 1)
    a = math.log(n / 1e-6)
    g = math.ceil(s / m)
    root = (math.sqrt(2 * a) + math.sqrt(2 * a + 4 * g)) / 2
    rows = math.ceil(root * root * n / s)
    return n - 1 if rows - 1 >= n - 1 else int(rows) - 1


def approx_problem(mode, m, typ, desc, nulls_first, limit, got, exact):
    """None if the approximate output `got` keeps the opt-in's guarantee
    against `exact` (all rows in exact order), else what is wrong."""
    floats = typ in ("real", "double precision")

    def value(v):
        return None if v is None else (float(v) if floats else int(v))

    def order(v):  # ascending sort key; NaN after everything, -0 = 0
        return (1, 0.0) if floats and math.isnan(v) else (0, v)
    got = [(value(k), i) for k, i in got]
    exact = [(value(k), i) for k, i in exact]
    want = len(exact) if limit is None else min(limit, len(exact))
    if len(got) != want:
        return "%d rows, not %d" % (len(got), want)
    rows = collections.Counter((order(k) if k is not None else None, i) for k, i in exact)
    out = collections.Counter((order(k) if k is not None else None, i) for k, i in got)
    if out - rows:
        return "rows not in the input: %s" % fmt(list((out - rows).elements())[:3])
    nulls = sum(1 for k, _ in exact if k is None)
    placed = [k is None for k, _ in got]
    if nulls_first:
        expect = [p < nulls for p in range(len(got))]
    else:
        expect = [p >= len(exact) - nulls for p in range(len(got))]
    if placed != expect:
        return "NULLs misplaced (%d NULLs, %s)" % (nulls, "first" if nulls_first else "last")
    keys = [order(k) for k, _ in exact if k is not None]
    seq = [order(k) for k, _ in got if k is not None]
    if desc:
        # descending: the same checks on the mirrored order
        keys = [(-f, -v) for f, v in keys]
        seq = [(-f, -v) for f, v in seq]
    if not keys:
        return None
    if mode == "width":
        low, high = keys[0][1], keys[-1][1]
        span = abs(high - low) + 1    # (max - min + 1), in key units
        highest = None
        for p, key in enumerate(seq):
            if highest is not None and highest > key and (highest[1] - key[1]) * m >= span:
                return "width: position %d (%s) after %s: one width is %s" % (
                    p, fmt(key[1]), fmt(highest[1]), span / m)
            highest = key if highest is None or key > highest else highest
        if limit is not None and seq:
            boundary = keys[len(seq) - 1]
            for p, key in enumerate(seq):
                if key > boundary and (key[1] - boundary[1]) * m >= span:
                    return "width: LIMIT row %d (%s) a width past the exact boundary %s" % (
                        p, fmt(key[1]), fmt(boundary[1]))
        return None
    first, last = {}, {}
    for r, key in enumerate(sorted(keys)):
        first.setdefault(key, r)
        last[key] = r
    bound = quantile_rank_bound(len(keys), m)
    for p, key in enumerate(seq):
        error = max(first[key] - p, p - last[key], 0)
        if error > bound:
            return "quantile: position %d (%s) %d from its exact rank, past the bound %d (n %d, %d intervals)" % (
                p, fmt(key[1]), error, bound, len(keys), m)
    return None


def fmt(v):
    s = repr(v)
    return s if len(s) < 400 else s[:400] + "..."


def tie_runs(keys):
    runs = []
    a = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[a]:
            runs.append((a, i))
            a = i
    return runs


def contiguous(positions):
    out = []
    for p in positions:
        if out and p == out[-1][1] + 1:
            out[-1][1] = p
        else:
            out.append([p, p])
    return out


def cursor_ops(rng, scroll):
    ops = []
    for _ in range(rng.randint(3, 9)):
        k = rng.choice([1, 2, 3, 5, 10, 50, 500])
        if not scroll:
            ops.append(rng.choice(["FETCH %d" % k, "FETCH NEXT", "FETCH FORWARD %d" % k, "MOVE FORWARD %d" % k,
                                   "FETCH FORWARD 0"]))
            continue
        ops.append(rng.choice([
            "FETCH %d" % k, "FETCH NEXT", "FETCH PRIOR", "FETCH FIRST", "FETCH LAST",
            "FETCH ABSOLUTE %d" % rng.choice([k, -k, 0]), "FETCH RELATIVE %d" % rng.choice([k, -k, 0]),
            "FETCH FORWARD %d" % k, "FETCH BACKWARD %d" % k, "FETCH BACKWARD %d" % k, "FETCH FORWARD ALL",
            "FETCH BACKWARD ALL", "MOVE FORWARD %d" % k, "MOVE BACKWARD %d" % k, "MOVE LAST",
            "MOVE ABSOLUTE %d" % k, "FETCH BACKWARD 0", "FETCH FORWARD 0"]))
    return ops


def simulate(ops, n):
    """Row numbers (1-based) each FETCH returns, by PostgreSQL's cursor rules."""
    pos = 0
    out = []
    for op in ops:
        w = op.split()
        verb, rest = w[0], w[1:]
        if rest == ["NEXT"]:
            rest = ["FORWARD", "1"]
        elif rest == ["PRIOR"]:
            rest = ["BACKWARD", "1"]
        elif rest == ["FIRST"]:
            rest = ["ABSOLUTE", "1"]
        elif rest == ["LAST"]:
            rest = ["ABSOLUTE", "-1"]
        elif len(rest) == 1:
            rest = ["FORWARD", rest[0]]
        how, cnt = rest
        rows = []
        if how in ("FORWARD", "BACKWARD") and cnt == "0":
            how, cnt = "RELATIVE", "0"
        if how == "FORWARD":
            k = n + 2 if cnt == "ALL" else int(cnt)
            rows = list(range(pos + 1, min(pos + k, n) + 1))
            pos = pos + k if len(rows) == k else n + 1
        elif how == "BACKWARD":
            k = n + 2 if cnt == "ALL" else int(cnt)
            rows = list(range(pos - 1, max(pos - k, 1) - 1, -1)) if pos > 1 else []
            rows = [r for r in rows if 1 <= r <= n]
            pos = pos - k if len(rows) == k else 0
        elif how == "ABSOLUTE":
            k = int(cnt)
            t = k if k >= 0 else n + 1 + k
            if k == 0:
                pos = 0
            elif 1 <= t <= n:
                rows, pos = [t], t
            else:
                pos = 0 if k < 0 else n + 1
        elif how == "RELATIVE":
            k = int(cnt)
            if k == 0:
                rows = [pos] if 1 <= pos <= n else []
            else:
                t = pos + k
                if 1 <= t <= n:
                    rows, pos = [t], t
                else:
                    pos = 0 if t < 1 else n + 1
        out.append(rows)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="default: a fresh random seed (printed)")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this long (default 60 unless --queries)")
    ap.add_argument("--queries", type=int, default=None, help="stop after this many queries")
    ap.add_argument("--dsn", default="", help="libpq connection string (default: from PG* environment)")
    ap.add_argument("--device", default="auto", choices=["auto", "gpu", "cpu"],
                    help="gpusort.device for the GpuSort run")
    ap.add_argument("--only", type=int, default=None, help="run only query number I of this seed")
    ap.add_argument("--keep", action="store_true", help="keep the schema fuzz_<seed> at the end")
    ap.add_argument("--small", action="store_true", help="smaller big table (CI)")
    ap.add_argument("--statement-timeout", type=int, default=120, help="seconds per statement")
    ap.add_argument("--verbose", action="store_true", help="print every query")
    ap.add_argument("--approximate", action="store_true",
                    help="only the approximate opt-in's queries (checked against its guarantee)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10 ** 9)
    print("fuzz seed %d (rerun with --seed %d)" % (args.seed, args.seed))
    sys.stdout.flush()
    if args.seconds is None and args.queries is None and args.only is None:
        args.seconds = 60
    f = Fuzzer(args)
    t_setup = f.create_schema()
    print("schema %s: tables %s, set up in %.1fs; collations: ICU %s, libc %s" % (
        f.schema.name, ", ".join("%s %d rows" % kv for kv in f.schema.sizes.items()), t_setup,
        "yes" if COLLATIONS["icu"] else "no", COLLATIONS["libc"] or "none"))
    f.connect()
    t0 = time.time()
    i = 0
    try:
        if args.only is not None:
            args.verbose = True
            f.one(args.only)
        else:
            while True:
                if args.queries is not None and i >= args.queries:
                    break
                if args.seconds is not None and time.time() - t0 >= args.seconds:
                    break
                f.one(i)
                i += 1
    finally:
        if not args.keep:
            try:
                f.drop_schema()
            except psycopg2.Error:
                pass
    el = time.time() - t0
    total = f.passed + f.failed
    print("fuzz seed %d: %d queries in %.0fs (%.0f/min), %d failed (GpuSort used in %d; "
          "in %d of %d eligible with min_rows = 0; %d errored on both sides; %d cursors skipped, PostgreSQL's plan read rows inconsistently)" % (
              args.seed, total, el, total * 60.0 / max(el, 1e-9), f.failed, f.used,
              f.eligible_used, f.eligible, f.errors_both, f.inconsistent))
    if f.unused:
        print("eligible with min_rows = 0 but GpuSort not in the plan, by parallel mode: %s" % ", ".join(
            "%s/%s %d" % (k[0], k[1], v) for k, v in sorted(f.unused.items())))
    if f.failed_kinds:
        print("failures by shape: %s" % ", ".join("%s %d" % kv for kv in f.failed_kinds.most_common()))
    print("%d passed, %d failed" % (f.passed, f.failed))
    sys.exit(1 if f.failed else 0)


if __name__ == "__main__":
    main()
