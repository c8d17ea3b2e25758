"""pgwire.py - the few psycopg2 calls the fuzzer makes, over PostgreSQL's
wire protocol in plain Python, for machines that have no psycopg2 (the GPU
machine: nothing can be installed there). fuzz.py imports it only when
psycopg2 is missing.

What it speaks: protocol 3.0, trust authentication, the simple query
protocol (several statements in one string are fine; the last result set is
the one returned, as in psycopg2), every value as text, autocommit; and,
beyond psycopg2, fetch_in_batches(): one query through the extended
protocol, a few rows per Execute, as a JDBC client with a fetch size runs
it. What it does not: passwords, SSL, parameters, COPY.
"""
import os
import socket
import struct


class Error(Exception):
    def __init__(self, message, pgcode=None):
        super().__init__(message)
        self.pgcode = pgcode
        self.pgerror = message if pgcode else None


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class OperationalError(DatabaseError):
    pass


class _Extensions:
    STATUS_READY = 1
    TRANSACTION_STATUS_IDLE = 0
    TRANSACTION_STATUS_INTRANS = 2
    TRANSACTION_STATUS_INERROR = 3

    @staticmethod
    def new_type(oids, name, cast):
        return None                 # every value comes as text already

    @staticmethod
    def register_type(type_, scope=None):
        return None


extensions = _Extensions()


def _parse_dsn(dsn):
    settings = {}
    for part in dsn.split():
        if "=" in part:
            key, value = part.split("=", 1)
            settings[key] = value.strip("'")
    return settings


def connect(dsn=""):
    return Connection(_parse_dsn(dsn))


class Connection:
    def __init__(self, settings):
        host = settings.get("host", os.environ.get("PGHOST", "/var/run/postgresql"))
        port = int(settings.get("port", os.environ.get("PGPORT", "5432")))
        user = settings.get("user", os.environ.get("PGUSER", os.environ.get("USER", "postgres")))
        database = settings.get("dbname", os.environ.get("PGDATABASE", user))
        self.closed = 0
        self.autocommit = True
        self.status = extensions.STATUS_READY
        self._transaction = b"I"
        try:
            if host.startswith("/"):
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(os.path.join(host, ".s.PGSQL.%d" % port))
            else:
                self._sock = socket.create_connection((host, port))
        except OSError as e:
            self.closed = 1
            raise OperationalError("could not connect: %s" % e)
        body = struct.pack("!i", 196608)
        for key, value in (("user", user), ("database", database),
                           ("application_name", "gpusort fuzz")):
            body += key.encode() + b"\0" + value.encode() + b"\0"
        body += b"\0"
        try:
            self._sock.sendall(struct.pack("!i", len(body) + 4) + body)
        except OSError as e:
            self.closed = 1
            raise OperationalError("could not connect: %s" % e)
        self._read_until_ready()

    # -- messages --
    def _recv_exact(self, count):
        data = b""
        while len(data) < count:
            try:
                chunk = self._sock.recv(count - len(data))
            except OSError:  # reset by a backend that crashed: as closed
                chunk = b""
            if not chunk:
                self.closed = 2
                raise OperationalError("server closed the connection unexpectedly")
            data += chunk
        return data

    def _message(self):
        header = self._recv_exact(5)
        kind, length = header[:1], struct.unpack("!i", header[1:])[0]
        return kind, self._recv_exact(length - 4)

    @staticmethod
    def _error_fields(payload):
        fields = {}
        for item in payload.split(b"\0"):
            if item:
                fields[item[:1]] = item[1:].decode("utf-8", "replace")
        return fields

    @staticmethod
    def _data_row(payload):
        count = struct.unpack("!h", payload[:2])[0]
        values, at = [], 2
        for _ in range(count):
            length = struct.unpack("!i", payload[at:at + 4])[0]
            at += 4
            if length < 0:
                values.append(None)
            else:
                values.append(payload[at:at + length].decode("utf-8", "replace"))
                at += length
        return tuple(values)

    def _send(self, kind, body):
        try:
            self._sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)
        except OSError as e:
            self.closed = 2
            raise OperationalError("could not send: %s" % e)

    def fetch_in_batches(self, sql, batch_rows):
        """Runs one query through the extended protocol (unnamed statement
        and portal), batch_rows rows per Execute: the server runs its plan
        in several calls, and so without parallel workers. Returns the
        rows."""
        self._send(b"P", b"\0" + sql.encode() + b"\0" + struct.pack("!h", 0))
        self._send(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0))
        self._send(b"E", b"\0" + struct.pack("!i", batch_rows))
        self._send(b"H", b"")
        rows = []
        while True:
            kind, payload = self._message()
            if kind == b"D":
                rows.append(self._data_row(payload))
            elif kind == b"s":  # portal suspended: the next batch
                self._send(b"E", b"\0" + struct.pack("!i", batch_rows))
                self._send(b"H", b"")
            elif kind in (b"C", b"E"):
                break
        self._send(b"S", b"")
        if kind == b"E":
            fields = self._error_fields(payload)
            self._read_until_ready()
            raise DatabaseError(fields.get(b"M", "error"), fields.get(b"C"))
        self._read_until_ready()
        return rows

    def _read_until_ready(self):
        """Reads one response to the end; returns (rows, description)."""
        rows, description, error = None, None, None
        while True:
            kind, payload = self._message()
            if kind == b"R":
                code = struct.unpack("!i", payload[:4])[0]
                if code != 0:
                    raise OperationalError("pgwire.py speaks trust authentication only")
            elif kind == b"T":
                count = struct.unpack("!h", payload[:2])[0]
                description, at = [], 2
                for _ in range(count):
                    end = payload.index(b"\0", at)
                    name = payload[at:end].decode()
                    type_oid = struct.unpack("!i", payload[end + 7:end + 11])[0]
                    description.append((name, type_oid, None, None, None, None, None))
                    at = end + 19
                rows = []
            elif kind == b"D":
                rows.append(self._data_row(payload))
            elif kind == b"E":
                fields = self._error_fields(payload)
                error = DatabaseError(fields.get(b"M", "error"), fields.get(b"C"))
                error.pgerror = "%s:  %s" % (fields.get(b"S", "ERROR"), fields.get(b"M", ""))
            elif kind == b"Z":
                self._transaction = payload[:1]
                if error is not None:
                    raise error
                return rows, description
            # S (parameter status), K (key data), C (command complete),
            # N (notice), I (empty query): nothing to keep

    def _query(self, sql):
        if self.closed:
            raise InterfaceError("connection already closed")
        data = sql.encode() + b"\0"
        try:
            self._sock.sendall(b"Q" + struct.pack("!i", len(data) + 4) + data)
        except OSError as e:
            self.closed = 2
            raise OperationalError("could not send the query: %s" % e)
        return self._read_until_ready()

    # -- the psycopg2 surface --
    def cursor(self):
        return Cursor(self)

    def get_transaction_status(self):
        return {b"I": extensions.TRANSACTION_STATUS_IDLE,
                b"T": extensions.TRANSACTION_STATUS_INTRANS,
                b"E": extensions.TRANSACTION_STATUS_INERROR}.get(self._transaction, 4)

    def rollback(self):
        if self._transaction != b"I":
            self._query("ROLLBACK")

    def close(self):
        if not self.closed:
            try:
                self._sock.sendall(b"X" + struct.pack("!i", 4))
            except OSError:
                pass
            self._sock.close()
            self.closed = 1


class Cursor:
    def __init__(self, connection):
        self.connection = connection
        self.description = None
        self._rows = []

    def execute(self, sql, params=None):
        if params is not None:
            raise InterfaceError("pgwire.py takes no query parameters")
        rows, self.description = self.connection._query(sql)
        self._rows = rows or []

    def fetchall(self):
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None

    def close(self):
        self._rows = []
