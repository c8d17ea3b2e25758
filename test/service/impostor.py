#!/usr/bin/env python3
"""An OS user other than the server's tries to take the GPU service's place.

    impostor.py REPORT_DIR SECONDS

Run as another user (test/service/run.sh runs it as `nobody`). For SECONDS
it watches /proc/net/unix for the service's sockets (abstract names
beginning "gpusort-"), and:
  - connects to every one it sees and sends a HELLO-sized message: the
    service must close the connection without a word;
  - binds every name it saw that is free again (its process died) and
    listens there, as a squatter: a backend may connect, but must leave
    without sending a byte.
It writes REPORT_DIR/bound once it holds a name, and at the end
REPORT_DIR/report with the counts: names seen, connections it made, bytes
the service sent it, names it bound, connections it accepted, bytes
backends sent it. Stops early on SIGTERM.
"""
import os
import select
import signal
import socket
import sys
import time

report_dir, seconds = sys.argv[1], float(sys.argv[2])
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)

counts = {"seen": 0, "connected": 0, "service_bytes": 0,
          "bound": 0, "accepted": 0, "backend_bytes": 0}
seen = set()
tried = set()
held = {}           # name -> listening socket
accepted = []       # connections backends made to us


def live_names():
    names = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[7].startswith("@gpusort-"):
                names.add(parts[7][1:])
    return names


def knock(name):
    """Connects to a service socket and says hello: nothing must come back."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(1.0)
    try:
        s.connect("\0" + name)
    except OSError:
        return
    counts["connected"] += 1
    try:
        s.send(b"dspg" + b"\x01\x00\x00\x00" + b"\x00" * 4000)
        while True:
            data = s.recv(65536)
            if not data:
                break
            counts["service_bytes"] += len(data)
    except OSError:
        pass
    finally:
        s.close()


def squat(name):
    """Binds a name the service left, and listens there."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.bind("\0" + name)
        s.listen(64)
    except OSError:
        s.close()
        return
    s.setblocking(False)
    held[name] = s
    counts["bound"] += 1
    open(os.path.join(report_dir, "bound"), "w").close()


deadline = time.time() + seconds
while not stop and time.time() < deadline:
    live = live_names()
    mine = set(held)
    for name in live - mine:
        if name not in seen:
            seen.add(name)
            counts["seen"] += 1
        if name not in tried:
            tried.add(name)
            knock(name)
    for name in seen - live - mine:
        squat(name)
    readable, _, _ = select.select(list(held.values()) + accepted, [], [], 0.02)
    for s in readable:
        if s in accepted:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                counts["backend_bytes"] += len(data)
            else:
                accepted.remove(s)
                s.close()
        else:
            try:
                connection, _ = s.accept()
            except OSError:
                continue
            counts["accepted"] += 1
            accepted.append(connection)

with open(os.path.join(report_dir, "report"), "w") as f:
    f.write(" ".join("%s=%d" % (k, v) for k, v in counts.items()) + "\n")
