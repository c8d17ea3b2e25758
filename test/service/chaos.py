#!/usr/bin/env python3
"""Sorts under fire: the GPU service killed, stopped, restarted under load.

    chaos.py --dsn DSN --seconds N --restart-cmd CMD [--clients C] [--seed S]

For N seconds, C clients run a mix of sorts through GpuSort and the array
functions (ORDER BY with every kind of key, LIMIT, parallel sorts, sorts
beyond work_mem whose rows the service holds, cursors read a batch at a
time, gpu_sort / gpu_argsort / gpu_approx_sort), each checked against what
PostgreSQL's own sort gave for the same query before the chaos began (row
by row; array results against the array sorted by PostgreSQL). Meanwhile a
chaos thread, every few seconds, does one of:
  - kill -9 of a gpusort-gpud;
  - SIGSTOP of a gpusort-gpud for 0.5 to 8 s, then SIGCONT;
  - pg_terminate_backend() of a client;
  - kill -9 of a client's backend (PostgreSQL then restarts every session,
    the GPU service with them);
  - pg_reload_conf() after changing a gpusort setting;
  - CMD (a fast restart of the server), about once a minute.

A client whose connection went (terminated, the server restarting) comes
back; a sort beyond work_mem whose rows died with their process fails with
gpusort's error and is counted apart (that is what gpusort.device = auto
promises for them); any other error, any wrong row, is a failure.

A watcher measures, after every disturbance that took a GPU out, how long
until every GPU was ready again: at most READY_BOUND_S. At the end, with
the clients gone: every GPU is ready, and the service holds no staging
slot, GPU memory, rows job, give-back file, connection or waiter.
The caller checks the server log and the temporary files. Prints a
summary and ends with "N passed, M failed" (N: checked sorts and end
checks; M: wrong rows, unexpected errors, failed end checks).
"""
import argparse
import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time

try:
    import psycopg2 as db
except ImportError:                      # the GPU machine: no psycopg2
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "fuzz"))
    import pgwire as db

# The service restarts a process after a pause that doubles up to 30 s
# while it keeps dying young (worker.c), plus its start.
READY_BOUND_S = 40
# every wait is bounded: a sort taking this long is a failure
STATEMENT_TIMEOUT = "60s"

ROWS = 120000

SETUP = [
    "DROP TABLE IF EXISTS chaos_t, chaos_arrays",
    f"""CREATE TABLE chaos_t AS
        SELECT g AS id,
               CASE WHEN g % 17 = 0 THEN NULL ELSE ((g::int8 * 7919) % 100003)::int4 END AS k,
               CASE WHEN g % 23 = 0 THEN NULL ELSE (g::int8 * 2654435761) % 1000000007 - 500000000 END AS k8,
               CASE WHEN g % 31 = 0 THEN 'NaN'::float8 WHEN g % 37 = 0 THEN 'Infinity'::float8
                    WHEN g % 41 = 0 THEN '-Infinity'::float8
                    ELSE ((g::int8 * 48271) % 2147483647)::float8 / 1000 END AS f,
               (g % 97)::int4 AS g,
               md5(g::text) AS pad
        FROM generate_series(1, {ROWS}) g""",
    "ANALYZE chaos_t",
    """CREATE TABLE chaos_arrays AS
        SELECT n, array_agg(((g::int8 * 7919 + n) % (n * 3 + 1))::int4 ORDER BY g) AS a
        FROM (VALUES (1000), (20000), (150000), (400000)) v(n), generate_series(1, n) g
        GROUP BY n""",
]

# ORDER BY queries: each key list ends in id, so the order is total
ORDER_BY = [
    "SELECT id, k, pad FROM chaos_t ORDER BY k, id",
    "SELECT id, k8 FROM chaos_t ORDER BY k8 DESC NULLS LAST, id",
    "SELECT id, f FROM chaos_t ORDER BY f, id",
    "SELECT id, g, k FROM chaos_t ORDER BY g, k NULLS FIRST, id",
    "SELECT id, k FROM chaos_t ORDER BY k DESC, id LIMIT 1000",
    "SELECT id, k8 FROM chaos_t WHERE id % 3 = 0 ORDER BY k8, id LIMIT 50000",
    "SELECT * FROM chaos_t ORDER BY k, id OFFSET 100000",
]

SESSION = [
    "SET gpusort.min_rows = 0",
    "SET gpusort.gpu_min_elements = 0",
    "SET enable_sort = off",
    f"SET statement_timeout = '{STATEMENT_TIMEOUT}'",
]
SHAPES = [
    # (work_mem, parallel workers): sorts in memory, beyond work_mem (rows
    # in the service, or runs), and parallel sorts
    ("64MB", 0), ("256kB", 0), ("1MB", 0), ("4MB", 2), ("256kB", 2),
]


def text_of(rows):
    digest = hashlib.md5()
    for row in rows:
        digest.update(("|".join("" if v is None else str(v) for v in row) + "\n").encode())
    return digest.hexdigest(), len(rows)


class Interrupted(Exception):
    """The connection went: terminated, or the server restarting."""


INTERRUPTED_CODES = ("57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004")
ROWS_LOST = "the GPU service lost the rows of a sort beyond work_mem"
# (a backend's crash closes every connection: some drivers say only this)
CONNECTION_GONE = ("server closed the connection unexpectedly", "terminating connection",
                   "connection already closed", "the database system is")


def connect(dsn, deadline):
    while True:
        try:
            connection = db.connect(dsn)
            connection.autocommit = True
            return connection
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def run(connection, sqls):
    cursor = connection.cursor()
    rows = None
    for sql in sqls:
        cursor.execute(sql)
        if cursor.description is not None:
            rows = cursor.fetchall()
    cursor.close()
    return rows


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.passed = 0
        self.wrong = []
        self.errors = []
        self.interrupted = 0
        self.rows_lost = 0

    def add(self, field, item=None):
        with self.lock:
            if field in ("wrong", "errors"):
                getattr(self, field).append(item)
            else:
                setattr(self, field, getattr(self, field) + 1)


def expected_results(dsn):
    """PostgreSQL's own answers, before the chaos."""
    connection = connect(dsn, time.time() + 30)
    run(connection, SETUP)
    expected = {}
    for sql in ORDER_BY:
        expected[sql] = text_of(run(connection, ["SET gpusort.enabled = off", sql]))
    connection.close()
    return expected


def one_sort(connection, rng, expected, doing):
    """One random sort, checked; returns (ok, what). doing[0] says what it
    is running, for an error's report."""
    kind = rng.random()
    work_mem, workers = rng.choice(SHAPES)
    doing[0] = f"work_mem {work_mem}, {workers} workers: "
    settings = SESSION + [f"SET work_mem = '{work_mem}'",
                          f"SET max_parallel_workers_per_gather = {workers}",
                          "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                          "SET min_parallel_table_scan_size = 0"]
    if kind < 0.6:
        sql = rng.choice(ORDER_BY)
        doing[0] += sql
        got = text_of(run(connection, settings + [sql]))
        return got == expected[sql], sql
    if kind < 0.8:
        # a cursor read a batch at a time (its rows may be given back to a
        # file while it waits)
        sql = rng.choice(ORDER_BY[:4])
        doing[0] += "cursor: " + sql
        cursor = connection.cursor()
        rows = []
        try:
            for s in settings + ["BEGIN", f"DECLARE c NO SCROLL CURSOR FOR {sql}"]:
                cursor.execute(s)
            while True:
                cursor.execute("FETCH 20000 FROM c")
                batch = cursor.fetchall()
                if not batch:
                    break
                rows.extend(batch)
                time.sleep(rng.random() * 0.05)
            cursor.execute("COMMIT")
        except Exception:
            try:
                connection.rollback()
            except Exception:
                pass
            raise
        finally:
            cursor.close()
        return text_of(rows) == expected[sql], "cursor: " + sql
    n = rng.choice([1000, 20000, 150000, 400000])
    function = rng.choice(["sort", "argsort", "approx", "sort_desc"])
    if function == "sort":
        check = ("SELECT gpu_sort(a) = (SELECT array_agg(x ORDER BY x) FROM unnest(a) x) "
                 f"FROM chaos_arrays WHERE n = {n}")
    elif function == "sort_desc":
        check = ("SELECT gpu_sort(a, 'auto', true) = (SELECT array_agg(x ORDER BY x DESC) "
                 f"FROM unnest(a) x) FROM chaos_arrays WHERE n = {n}")
    elif function == "argsort":
        # (a join, not a[i]: each a[i] would detoast the whole array)
        check = ("SELECT (SELECT array_agg(x ORDER BY o) FROM unnest(p) WITH ORDINALITY u(i, o) "
                 "JOIN unnest(a) WITH ORDINALITY v(x, j) ON v.j = u.i) = "
                 "(SELECT array_agg(x ORDER BY x) FROM unnest(a) x) "
                 f"FROM (SELECT a, gpu_argsort(a) AS p FROM chaos_arrays WHERE n = {n}) z")
    else:
        # interval order: every element of interval i before any of i + 1,
        # and the same elements
        check = ("SELECT (SELECT array_agg(x ORDER BY x) FROM unnest(s) x) = "
                 "(SELECT array_agg(x ORDER BY x) FROM unnest(a) x) "
                 "AND (SELECT bool_and(iv >= prev) FROM (SELECT iv, lag(iv, 1, 0) OVER (ORDER BY o) "
                 "AS prev FROM (SELECT o, ((x::int8 - mn) * 100 / (mx::int8 - mn + 1)) AS iv "
                 "FROM unnest(s) WITH ORDINALITY u(x, o), (SELECT min(x) mn, max(x) mx FROM "
                 "unnest(a) x) m) q) r) "
                 f"FROM (SELECT a, gpu_approx_sort(a, 100) AS s FROM chaos_arrays WHERE n = {n}) z")
    doing[0] = f"{function}({n})"
    # (the checks join unnest()s, which the planner guesses at 10 rows:
    # a nested loop would be quadratic)
    rows = run(connection, SESSION + ["SET enable_nestloop = off", check])
    return rows is not None and len(rows) == 1 and str(rows[0][0]).lower() in ("t", "true"), \
        f"{function}({n})"


def client(number, dsn, seconds, seed, expected, stats, stop):
    rng = random.Random(seed * 1000 + number)
    connection = None
    while not stop.is_set():
        doing = ["connecting"]
        started = time.time()
        try:
            if connection is None:
                connection = connect(dsn, time.time() + 120)
            ok, what = one_sort(connection, rng, expected, doing)
            if ok:
                stats.add("passed")
            else:
                stats.add("wrong", what)
                print(f"WRONG ROWS: client {number}: {what}", flush=True)
        except Exception as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            code = getattr(error, "pgcode", None)
            if isinstance(error, (db.OperationalError, db.InterfaceError)) and \
                    (code is None or code in INTERRUPTED_CODES) or code in INTERRUPTED_CODES or \
                    any(words in message for words in CONNECTION_GONE):
                stats.add("interrupted")
            elif ROWS_LOST in message:
                stats.add("rows_lost")
            else:
                stats.add("errors", message)
                print(f"ERROR: client {number} at {time.strftime('%H:%M:%S')}, after "
                      f"{time.time() - started:.1f} s of {doing[0]}: {message}", flush=True)
            try:
                connection.close()
            except Exception:
                pass
            connection = None
    if connection is not None:
        connection.close()


def service_pids(dsn):
    connection = connect(dsn, time.time() + 60)
    rows = run(connection, [
        "SELECT name, value FROM gpusort_info() WHERE name ~ '^gpu[0-9]+_pid$'"])
    clients = run(connection, [
        "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
        "AND pid <> pg_backend_pid() AND datname = current_database()"])
    connection.close()
    return [int(v) for _, v in rows if int(v) > 0], [int(r[0]) for r in clients]


def chaos(dsn, restart_cmd, seed, stop, log, disturbed, killed):
    rng = random.Random(seed)
    last_restart = time.time()
    while not stop.wait(rng.uniform(2, 6)):
        try:
            gpuds, clients = service_pids(dsn)
            action = rng.choice(["kill", "kill", "stop", "stop", "terminate", "terminate",
                                 "reload", "kill_backend"])
            if time.time() - last_restart > rng.uniform(45, 75):
                action = "restart"
            if action in ("kill", "stop") and not gpuds:
                action = "reload"
            if action in ("terminate", "kill_backend") and not clients:
                action = "reload"
            if action == "kill":
                pid = rng.choice(gpuds)
                os.kill(pid, signal.SIGKILL)
                log.append(f"{time.strftime('%H:%M:%S')} kill -9 gpusort-gpud {pid}")
            elif action == "stop":
                pid = rng.choice(gpuds)
                pause = rng.uniform(0.5, 8)
                os.kill(pid, signal.SIGSTOP)
                log.append(f"{time.strftime('%H:%M:%S')} SIGSTOP gpusort-gpud {pid} for {pause:.1f} s")
                time.sleep(pause)
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    log.append(f"{time.strftime('%H:%M:%S')}   (it was killed meanwhile)")
            elif action == "terminate":
                pid = rng.choice(clients)
                connection = connect(dsn, time.time() + 30)
                run(connection, [f"SELECT pg_terminate_backend({pid})"])
                connection.close()
                log.append(f"{time.strftime('%H:%M:%S')} pg_terminate_backend({pid})")
            elif action == "kill_backend":
                # PostgreSQL restarts every session after a backend's crash:
                # the GPU service's worker and processes with them
                pid = rng.choice(clients)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                log.append(f"{time.strftime('%H:%M:%S')} kill -9 backend {pid}")
            elif action == "reload":
                connection = connect(dsn, time.time() + 30)
                run(connection, [f"ALTER SYSTEM SET gpusort.queue_timeout = '{rng.choice([500, 1000, 2000])}'",
                                 "SELECT pg_reload_conf()"])
                connection.close()
                log.append(f"{time.strftime('%H:%M:%S')} pg_reload_conf()")
            else:
                log.append(f"{time.strftime('%H:%M:%S')} restart -m fast")
                subprocess.run(restart_cmd, shell=True, check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                last_restart = time.time()
            disturbed[0] = time.time()
        except Exception as error:
            log.append(f"{time.strftime('%H:%M:%S')} (chaos step failed: {error})")


def watch_readiness(dsn, stop, disturbed, recoveries):
    """How long after each disturbance every GPU is ready again: from the
    disturbance to the first look that finds them all ready after one that
    did not. A disturbance after which none was seen not ready within 12 s
    cost nothing; one that comes while GPUs are still out counts from the
    earlier one."""
    connection = None
    last = disturbed[0]
    measuring = None            # the disturbance whose outage is measured
    down = False
    while not stop.wait(0.2):
        if disturbed[0] != last:
            last = disturbed[0]
            if measuring is None or not down:
                measuring, down = last, False
        try:
            if connection is None:
                connection = connect(dsn, time.time() + 5)
            rows = run(connection, ["SELECT value FROM gpusort_info() WHERE name ~ '^gpu[0-9]+_state$'"])
            ready = bool(rows) and all(r[0] == "ready" for r in rows)
        except Exception:
            ready = False
            try:
                connection.close()
            except Exception:
                pass
            connection = None
        if measuring is None:
            continue
        if not ready:
            down = True
        elif down:
            recoveries.append(time.time() - measuring)
            measuring, down = None, False
        elif time.time() - measuring > 12:
            measuring = None
    if connection is not None:
        connection.close()


def watch_slow(dsn, stop, log):
    """Sorts running longer than half the statement timeout: what they wait
    for, and (with gdb, as root) where their backend is, for the log."""
    seen = set()
    connection = None
    while not stop.wait(5):
        try:
            if connection is None:
                connection = connect(dsn, time.time() + 5)
            rows = run(connection, [
                "SELECT pid, now() - query_start, wait_event_type, wait_event, left(query, 80) "
                "FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' AND now() - query_start > interval '30 s'"])
        except Exception:
            try:
                connection.close()
            except Exception:
                pass
            connection = None
            continue
        for pid, running, wait_type, wait_event, query in rows:
            if pid in seen:
                continue
            seen.add(pid)
            log.append(f"{time.strftime('%H:%M:%S')} slow: pid {pid} running {running}, waiting "
                       f"on {wait_type}/{wait_event}: {query}")
            try:
                trace = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "bt"],
                                       capture_output=True, text=True, timeout=30).stdout
                log.extend("    " + line for line in trace.splitlines() if line.startswith("#"))
            except Exception:
                pass
    if connection is not None:
        connection.close()


def end_checks(dsn, disturbed, stats):
    """After the clients left: every GPU ready, nothing held."""
    deadline = disturbed[0] + READY_BOUND_S
    results = []
    connection = connect(dsn, time.time() + 120)
    while True:
        rows = run(connection, ["SELECT name, value FROM gpusort_info() WHERE name ~ '^gpu[0-9]+_state$'"])
        if rows and all(v == "ready" for _, v in rows):
            break
        if time.time() > deadline:
            break
        time.sleep(0.2)
    results.append((bool(rows) and all(v == "ready" for _, v in rows),
                    f"every GPU ready at the end, within {READY_BOUND_S} s of the last "
                    f"disturbance: {rows}"))
    held_sql = ("SELECT string_agg(name || '=' || value, ' ' ORDER BY name) FROM gpusort_info() "
                "WHERE name ~ '^gpu[0-9]+_(slots_used|memory_used_mb|rows_jobs|given_back_files|"
                "connections|jobs_waiting)$' AND value <> '0'")
    held = None
    for _ in range(100):
        held = run(connection, [held_sql])[0][0]
        if not held:
            break
        time.sleep(0.1)
    results.append((not held, f"nothing left in the service ({held or 'none'})"))
    sorts = run(connection, ["SELECT jobs FROM gpusort_stats WHERE gpu = 'total'"])
    results.append((True, f"jobs the service finished since the last restart: {sorts[0][0]}"))
    connection.close()
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--restart-cmd", required=True)
    parser.add_argument("--killed-file", help="where to list the backends killed with -9")
    args = parser.parse_args()

    expected = expected_results(args.dsn)
    stats = Stats()
    stop = threading.Event()
    log = []
    disturbed = [time.time()]
    threads = [threading.Thread(target=client, args=(i, args.dsn, args.seconds, args.seed,
                                                     expected, stats, stop))
               for i in range(args.clients)]
    killed = []
    chaos_thread = threading.Thread(target=chaos, args=(args.dsn, args.restart_cmd, args.seed,
                                                        stop, log, disturbed, killed))
    recoveries = []
    watcher = threading.Thread(target=watch_readiness, args=(args.dsn, stop, disturbed, recoveries))
    slow_stop = threading.Event()
    slow_watcher = threading.Thread(target=watch_slow, args=(args.dsn, slow_stop, log))
    slow_watcher.start()
    for t in threads:
        t.start()
    chaos_thread.start()
    watcher.start()
    time.sleep(args.seconds)
    stop.set()
    chaos_thread.join()
    watcher.join()
    for t in threads:
        t.join()
    slow_stop.set()
    slow_watcher.join()

    if args.killed_file:
        with open(args.killed_file, "w") as f:
            f.write("".join(f"{pid}\n" for pid in killed))
    print(f"chaos for {args.seconds:.0f} s, {args.clients} clients, seed {args.seed}:")
    for line in log:
        print("  " + line)
    print(f"sorts right: {stats.passed}; wrong: {len(stats.wrong)}; unexpected errors: "
          f"{len(stats.errors)}; interrupted (connection gone): {stats.interrupted}; "
          f"rows lost with their process (sorts beyond work_mem): {stats.rows_lost}")
    failed = len(stats.wrong) + len(stats.errors)
    passed = stats.passed
    worst = max(recoveries) if recoveries else 0.0
    ok = worst <= READY_BOUND_S
    print(("ok - " if ok else "not ok - ") +
          f"after each of {len(recoveries)} outages every GPU was ready again within "
          f"{worst:.1f} s (bound {READY_BOUND_S} s)")
    passed += ok
    failed += not ok
    for ok, what in end_checks(args.dsn, disturbed, stats):
        print(("ok - " if ok else "not ok - ") + what)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
