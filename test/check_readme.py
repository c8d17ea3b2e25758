#!/usr/bin/env python3
"""Checks README.md against a running server that has gpusort installed:

    test/check_readme.py [settings | examples | all]     (default: all)

Connects with psql (PSQL, else PG_CONFIG's bindir, else PATH) and the usual
PGHOST, PGPORT, PGUSER, PGDATABASE (default database: postgres). Leaves
nothing behind: the examples run in transactions that are rolled back.
Prints one line per check and ends with "N passed, M failed".

settings: the table in README's "## Settings" section against pg_settings
  for gpusort.* (after LOAD 'gpusort'): every setting documented, nothing
  documented that does not exist, and for each its default (boot_val), its
  range or values (min_val/max_val with the unit, enumvals, on/off) and who
  may change it (the GUC context in words, CONTEXT_WORDS below). Columns are
  found by their header names, so they may be reordered.

examples: the SQL examples whose result README states, in ```sql blocks:
  - a one-line statement with the result in its comment:
        SELECT gpu_sort(ARRAY[5, 3, 9, 1]);    -- {1,3,5,9}
    The result is the comment's first token when it looks like a value: an
    array {...}, a row (...), a 'quoted' text, a number, t, f or NULL; what
    follows it (": ordinal positions", ", by ...") is prose. A row written
    (a, b) is the statement's columns in order. "..." ending an array,
    {1,2,3,...}, means "then any elements". Comments that start with words
    (-- the GPU found, ...) state no result and are not run.
  - a statement line followed by comment lines holding a table, header
    first:
        SELECT * FROM gpu_sort_pairs(ARRAY[2, 1, 2], ARRAY[5, 9, 3]);
        --  sorted_a | sorted_b
        --  {1,2,2}  | {9,3,5}
  Each runs on its own in BEGIN; CREATE EXTENSION IF NOT EXISTS gpusort;
  LOAD 'gpusort'; ...; ROLLBACK. Whitespace is ignored in the comparison.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.environ.get("GPUSORT_README", os.path.join(ROOT, "README.md"))

# pg_settings.context -> the words README's "who may change it" column uses
CONTEXT_WORDS = {
    "user": "any user (SET)",
    "superuser": "superuser (SET)",
    "superuser-backend": "superuser, at connection start",
    "backend": "any user, at connection start",
    "sighup": "reload",
    "postmaster": "server start",
    "internal": "nobody (fixed)",
}
UNITS = {"B", "kB", "MB", "GB", "TB", "8kB", "16MB", "us", "ms", "s", "min", "h", "d"}

results = []


def check(ok, what, detail=None):
    results.append(bool(ok))
    print(("ok     " if ok else "FAILED ") + what)
    if not ok and detail:
        for line in str(detail).rstrip().splitlines():
            print("         " + line)


def psql_command():
    if os.environ.get("PSQL"):
        return os.environ["PSQL"]
    pg_config = os.environ.get("PG_CONFIG", "/usr/lib/postgresql/15/bin/pg_config")
    try:
        bindir = subprocess.run([pg_config, "--bindir"], capture_output=True,
                                text=True, check=True).stdout.strip()
        if os.access(os.path.join(bindir, "psql"), os.X_OK):
            return os.path.join(bindir, "psql")
    except (OSError, subprocess.CalledProcessError):
        pass
    return "psql"


PSQL = psql_command()
SEP = "\x1f"


def run_sql(script):
    """Runs a script with psql; returns (ok, rows as lists of cells, stderr)."""
    env = dict(os.environ)
    env.setdefault("PGDATABASE", "postgres")
    p = subprocess.run([PSQL, "-X", "-q", "-A", "-F", SEP, "-P", "footer=off",
                        "-v", "ON_ERROR_STOP=1"],
                       input=script, capture_output=True, text=True, env=env)
    rows = [line.split(SEP) for line in p.stdout.splitlines()]
    return p.returncode == 0, rows, p.stderr


def strip_ticks(cell):
    return cell.strip().replace("`", "").strip()


def ticked(cell):
    return re.findall(r"`([^`]*)`", cell)


def section(text, title):
    m = re.search(r"^## " + re.escape(title) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def split_row(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def same_number(a, b):
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------- settings
def check_settings(text):
    print("== README settings table against pg_settings")
    body = section(text, "Settings")
    lines = [l for l in body.splitlines() if l.strip().startswith("|")]
    check(len(lines) >= 3, "README has a table under \"## Settings\"")
    if len(lines) < 3:
        return
    header = [h.lower() for h in split_row(lines[0])]

    def col(*names):
        for n in names:
            if n in header:
                return header.index(n)
        return None

    c_name = col("setting")
    c_default = col("default")
    c_range = col("range / values", "range/values", "range", "values")
    c_who = col("who may change it")
    c_meaning = col("meaning")
    check(None not in (c_name, c_default, c_range, c_who, c_meaning),
          "the table has the columns setting, default, range / values, who may change it, meaning",
          "header: %s" % " | ".join(header))
    if None in (c_name, c_default, c_range, c_who, c_meaning):
        return
    documented = {}
    for line in lines[2:]:
        cells = split_row(line)
        if len(cells) != len(header):
            check(False, "table row has %d cells" % len(header), line)
            continue
        documented[strip_ticks(cells[c_name])] = cells

    ok, rows, err = run_sql(
        "LOAD 'gpusort';\n"
        "SELECT name, vartype, boot_val, coalesce(min_val, ''), coalesce(max_val, ''),\n"
        "       coalesce(array_to_string(enumvals, ','), ''), coalesce(unit, ''), context\n"
        "FROM pg_settings WHERE name LIKE 'gpusort.%' ORDER BY name;\n")
    check(ok and len(rows) > 1, "pg_settings lists gpusort.* settings (gpusort loaded)", err)
    if not ok or len(rows) <= 1:
        return
    gucs = {r[0]: r for r in rows[1:]}

    for name in sorted(set(gucs) | set(documented)):
        if name not in documented:
            check(False, "%s is documented in the README" % name)
            continue
        if name not in gucs:
            check(False, "%s (in the README) is a setting the module defines" % name)
            continue
        _, vartype, boot, vmin, vmax, enumvals, unit, context = gucs[name]
        cells = documented[name]
        check(True, "%s is documented and exists" % name)

        default = strip_ticks(cells[c_default])
        ok = default in (boot, boot + unit, boot + " " + unit) if unit else default == boot
        check(ok, "%s: default %s" % (name, boot + (" " + unit if unit else "")),
              "README says %r" % cells[c_default])

        rng = cells[c_range]
        if vartype == "bool":
            check(set(ticked(rng)) == {"on", "off"}, "%s: values on, off" % name,
                  "README says %r" % rng)
        elif vartype == "enum":
            want = enumvals.split(",")
            check(sorted(ticked(rng)) == sorted(want), "%s: values %s" % (name, ", ".join(want)),
                  "README says %r" % rng)
        elif vartype in ("integer", "real"):
            m = re.match(r"^\s*(-?[0-9][0-9.e+-]*) to (-?[0-9][0-9.e+-]*)(?:\s+([A-Za-z0-9]+))?", rng)
            got_unit = m.group(3) if m and m.group(3) in UNITS else ""
            ok = (m is not None and same_number(m.group(1), vmin) and same_number(m.group(2), vmax)
                  and got_unit == unit)
            check(ok, "%s: range %s to %s%s" % (name, vmin, vmax, " " + unit if unit else ""),
                  "README says %r (written \"MIN to MAX [UNIT]\")" % rng)
        else:  # string: no range to check
            check(True, "%s: %s setting, no range" % (name, vartype))

        words = CONTEXT_WORDS.get(context, context)
        check(strip_ticks(cells[c_who]).lower() == words.lower(),
              "%s: who may change it: %s (context %s)" % (name, words, context),
              "README says %r" % cells[c_who])
        check(strip_ticks(cells[c_meaning]) != "", "%s: has a meaning" % name)


# ---------------------------------------------------------------- examples
VALUE_START = re.compile(r"""^(?:[{('0-9]|-[0-9]|[tf](?=$|[\s:,.;])|NULL(?=$|[\s:,.;]))""")


def leading_value(comment):
    """The result at the start of a comment, or None if it starts with prose."""
    c = comment.strip()
    if not VALUE_START.match(c):
        return None
    if c[0] in "{(":
        depth = 0
        quote = False
        for i, ch in enumerate(c):
            if ch == '"':
                quote = not quote
            elif not quote and ch in "{(":
                depth += 1
            elif not quote and ch in "})":
                depth -= 1
                if depth == 0:
                    return c[:i + 1]
        return None
    if c[0] == "'":
        end = c.find("'", 1)
        return c[:end + 1] if end > 0 else None
    m = re.match(r"^(-?[0-9][0-9.e+-]*|[tf]|NULL)", c)
    return m.group(1) if m else None


def squash(s):
    return re.sub(r"\s+", "", s)


def split_code_comment(line):
    """(code, comment) for a line, the comment after the first -- outside quotes."""
    quote = False
    for i, ch in enumerate(line):
        if ch == "'":
            quote = not quote
        elif not quote and line.startswith("--", i):
            return line[:i], line[i + 2:]
    return line, None


def examples_in(text):
    """(section, statement, expected) where expected is ('value', v) or ('table', rows)."""
    out = []
    heading = ""
    in_sql = False
    block = []
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("```"):
            if in_sql:
                out.extend(examples_in_block(heading, block))
                in_sql = False
                block = []
            elif line.strip() == "```sql":
                in_sql = True
            continue
        if in_sql:
            block.append(line)
    return out


def examples_in_block(heading, block):
    out = []
    i = 0
    while i < len(block):
        code, comment = split_code_comment(block[i])
        stmt = code.strip()
        if stmt and not stmt.startswith("--"):
            if comment is not None:
                v = leading_value(comment)
                if v is not None:
                    out.append((heading, stmt, ("value", v)))
            else:
                # a table in the comment lines that follow, header first
                j = i + 1
                table = []
                while j < len(block) and block[j].lstrip().startswith("--"):
                    table.append(block[j].lstrip()[2:])
                    j += 1
                if table and "|" in table[0] and not re.match(r"^\s*[-+|]+\s*$", table[0]):
                    rows = [[c.strip() for c in t.split("|")] for t in table
                            if not re.match(r"^\s*[-+|]+\s*$", t)]
                    out.append((heading, stmt, ("table", rows)))
        i += 1
    return out


def value_matches(expected, actual):
    e, a = squash(expected), squash(actual)
    if e.startswith("{") and e.endswith(",...}"):
        return a.startswith(e[:-4])
    if e.startswith("'") and e.endswith("'"):
        e = e[1:-1]
    return e == a


def check_examples(text):
    print("== README SQL examples against their stated results")
    examples = examples_in(text)
    check(len(examples) > 0, "README has SQL examples with stated results")
    for heading, stmt, (kind, want) in examples:
        sql = stmt.rstrip().rstrip(";")
        ok, rows, err = run_sql(
            "SET client_min_messages = warning;\nBEGIN;\n"
            "CREATE EXTENSION IF NOT EXISTS gpusort;\nLOAD 'gpusort';\n"
            "%s;\nROLLBACK;\n" % sql)
        label = "%s: %s" % (heading, stmt)
        if not ok:
            check(False, label, "error: " + err.strip())
            continue
        if kind == "value":
            data = rows[1:]
            if len(data) != 1:
                check(False, label, "expected one row, got %d" % len(data))
                continue
            cells = data[0]
            actual = cells[0] if len(cells) == 1 else "(" + ",".join(cells) + ")"
            check(value_matches(want, actual), "%s  -> %s" % (label, want),
                  "got %s" % actual)
        else:
            got = [[squash(c) for c in r] for r in rows]
            exp = [[squash(c) for c in r] for r in want]
            check(got == exp, "%s  -> table of %d row(s)" % (label, len(want) - 1),
                  "got:\n" + "\n".join(" | ".join(r) for r in rows))


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what not in ("settings", "examples", "all"):
        print(__doc__)
        return 2
    with open(README, encoding="utf-8") as f:
        text = f.read()
    if what in ("settings", "all"):
        check_settings(text)
    if what in ("examples", "all"):
        check_examples(text)
    passed = sum(results)
    failed = len(results) - passed
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
