#!/usr/bin/env python3
"""Checks that the tree's layers depend one way (README, "Layout"):

    test/check_layers.py

1. Includes: every project header a file includes (#include "...") lies in
   a folder its own folder may use: kernels/ only kernels/; engine/ engine/
   and kernels/ (never service/ or src/), and of the kernels' API
   (gpu_api.h) only engine/backend_kernels.c, which makes the kernels one
   of the engine's GPU backends: the rest of the engine reaches a GPU
   through sort_backend.h; service/gpud/ service/, engine/ and kernels/;
   the rest of service/ (the client, the worker) service/ and engine/;
   src/ src/, engine/ and service/ (never kernels/). service/protocol.h,
   the contract between backends and gpusort-gpud, includes no project
   header at all, and PostgreSQL's headers stay out of the kernels, the
   engine and gpusort-gpud.
2. Calls: between the files of src/, the uses of what one file defines for
   the others (the names src/'s headers declare extern) form no cycle.
   Found in the sources, so it needs no build.

Python 3 standard library only. Prints one line per check and ends with
"N passed, M failed".
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["src", "engine", "service", "kernels"]
MAY_INCLUDE = {
    "kernels": {"kernels"},
    "engine": {"engine", "kernels"},
    "service/gpud": {"service", "engine", "kernels"},
    "service": {"service", "engine"},
    "src": {"src", "engine", "service"},
}
# the kernels' API: in the engine, only its adapter includes it
KERNELS_API = os.path.join("kernels", "gpu_api.h")
KERNELS_ADAPTER = os.path.join("engine", "backend_kernels.c")
# files that must not include PostgreSQL: everything gpusort-gpud and the
# engine's unit tests are built from
NO_POSTGRES = re.compile(r"^(kernels/|engine/|service/gpud|service/protocol\.h|service/verify\.)")
POSTGRES_HEADERS = re.compile(r"^(postgres\.h|postgres_fe\.h|fmgr\.h|(access|catalog|commands|executor|nodes|"
                              r"optimizer|parser|storage|utils|port|postmaster|lib)/)")

results = []


def check(ok, what):
    results.append(bool(ok))
    print(("ok     " if ok else "FAILED ") + what)


def sources():
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(names):
                if name.endswith((".c", ".h", ".cu", ".cuh")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def resolve(including, header):
    """The project file an #include "header" in `including` names, or None
    (a system or PostgreSQL header)."""
    here = os.path.dirname(including)
    candidates = [os.path.normpath(os.path.join(here, header))]
    candidates += [os.path.join(folder, header) for folder in FOLDERS]
    for candidate in candidates:
        if os.path.isfile(os.path.join(ROOT, candidate)):
            return candidate
    return None


# ---- 1. includes ----
files = list(sources())
include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
for path in files:
    folder = path.split(os.sep)[0]
    if path.startswith(os.path.join("service", "gpud") + os.sep):
        folder = "service/gpud"
    text = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
    wrong = []
    for header in include_re.findall(text):
        target = resolve(path, header)
        if target is None:
            if NO_POSTGRES.match(path) and POSTGRES_HEADERS.match(header):
                wrong.append(header + " (PostgreSQL)")
            continue
        target_folder = target.split(os.sep)[0]
        if path == os.path.join("service", "protocol.h"):
            wrong.append(target)
        elif target_folder not in MAY_INCLUDE[folder]:
            wrong.append(target)
        elif folder == "engine" and target == KERNELS_API and path != KERNELS_ADAPTER:
            wrong.append(target)
    check(not wrong, "%s includes only what its layer may%s" %
          (path, ": not " + ", ".join(wrong) if wrong else ""))


# ---- 2. calls between src/ files ----
def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return text


src_dir = os.path.join(ROOT, "src")
headers = [n for n in os.listdir(src_dir) if n.endswith(".h")]
c_files = sorted(n for n in os.listdir(src_dir) if n.endswith(".c"))
declared = set()
for name in headers:
    text = strip_comments_and_strings(open(os.path.join(src_dir, name)).read())
    # extern declarations, which may span lines: the name before "(" or ";"
    for decl in re.findall(r"\bextern\b[^;]*;", text):
        m = re.search(r"(\w+)\s*\(", decl) or re.search(r"(\w+)\s*(\[[^\]]*\])?\s*;", decl)
        if m:
            declared.add(m.group(1))
bodies = {n: strip_comments_and_strings(open(os.path.join(src_dir, n)).read()) for n in c_files}
owner = {}
for name, text in bodies.items():
    for symbol in declared:
        # a definition at the start of a line: "name(" for a function (its
        # type on the line before), "type name = ..." or "type name;" for data
        if re.search(r"^%s\s*\(" % re.escape(symbol), text, re.M) or \
                re.search(r"^(?!extern\b|static\b)[A-Za-z_][\w \t\*]*\b%s\s*(=|;|\[)" % re.escape(symbol),
                          text, re.M):
            owner.setdefault(symbol, name)
check(len(owner) > 20, "found where src/'s %d shared names are defined (%d of them)" %
      (len(declared), len(owner)))
edges = {n: set() for n in c_files}
why = {}
for name, text in bodies.items():
    used = set(re.findall(r"\b\w+\b", text))
    for symbol in used & set(owner):
        if owner[symbol] != name:
            edges[name].add(owner[symbol])
            why.setdefault((name, owner[symbol]), symbol)

# a cycle, if any (depth-first search)
state = {}
cycle = []


def visit(node, path):
    state[node] = 1
    for nxt in sorted(edges[node]):
        if state.get(nxt) == 1:
            cycle.extend(path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt])
            return True
        if state.get(nxt) is None and visit(nxt, path + [nxt]):
            return True
    state[node] = 2
    return False


for node in c_files:
    if state.get(node) is None and visit(node, [node]):
        break
detail = ""
if cycle:
    detail = ": " + " -> ".join("%s (%s)" % (a, why.get((a, b), "?")) for a, b in zip(cycle, cycle[1:]))
    detail += " -> " + cycle[-1]
check(not cycle, "the files of src/ call each other one way" + detail)

failed = results.count(False)
print("%d passed, %d failed" % (len(results) - failed, failed))
sys.exit(1 if failed else 0)
