#!/usr/bin/env python3
"""Validates META.json against the PGXN Meta Spec 1.0.0 (https://pgxn.org/spec/)
and against the tree:

    test/check_meta.py [META.json]

Checks the spec's required fields and the types of every field present
(optional ones included), then that the versions agree: META.json's version
and provides.gpusort.version are gpusort.control's default_version as semver
(1.0 -> 1.0.0), provides.gpusort.file is that version's install script, and
debian/changelog's upstream version is the same; the licence is the
PostgreSQL Licence in META.json, LICENSE and debian/copyright alike; every
major in debian/pgversions is one META.json's PostgreSQL prereq allows. Python 3 standard library
only. Prints one line per check and ends with "N passed, M failed".
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "META.json")

results = []


def check(ok, what):
    results.append(bool(ok))
    print(("ok     " if ok else "FAILED ") + what)


# Semantic versions as PGXN takes them: semver 2.0.0, and the 1.0.0 form with
# a prerelease suffix glued on (1.0.0beta1).
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*|[A-Za-z][0-9A-Za-z-]*)?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$")
# prereq versions: 0 (any), a version, or comma-separated ranges of them
VERSION_RANGE = re.compile(
    r"^\s*(?:(?:==|!=|>=|<=|>|<)\s*)?[0-9][0-9A-Za-z.+-]*\s*"
    r"(?:,\s*(?:==|!=|>=|<=|>|<)\s*[0-9][0-9A-Za-z.+-]*\s*)*$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
    "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
    "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
    "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
    "restricted", "unrestricted", "unknown",
}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
RELEASE_STATUS = {"stable", "testing", "unstable"}
TOP_KEYS = {"name", "abstract", "description", "version", "maintainer",
            "license", "provides", "prereqs", "resources", "generated_by",
            "meta-spec", "tags", "no_index", "release_status"}


def is_str(v):
    return isinstance(v, str) and v.strip() != ""


def is_str_list(v):
    return isinstance(v, list) and len(v) > 0 and all(is_str(x) for x in v)


def is_url(v):
    return is_str(v) and re.match(r"^[a-z][a-z0-9+.-]*://\S+$", v) is not None


try:
    with open(path, encoding="utf-8") as f:
        meta = json.load(f)
    check(isinstance(meta, dict), "META.json is a JSON object")
except (OSError, ValueError) as e:
    check(False, "META.json parses as JSON: %s" % e)
    meta = {}
if not isinstance(meta, dict):
    meta = {}

# ---- required fields ----
name = meta.get("name")
check(is_str(name) and re.match(r"^[^/\\:\s\x00-\x1f]{2,}$", name or "") is not None,
      "name: a string of 2+ characters without /, \\, :, whitespace or controls")
check(is_str(meta.get("abstract")), "abstract: a non-empty string")
check(is_str(meta.get("version")) and SEMVER.match(meta["version"]) is not None,
      "version: a semantic version (%r)" % meta.get("version"))
m = meta.get("maintainer")
check(is_str(m) or is_str_list(m), "maintainer: a string or a list of strings")
lic = meta.get("license")
if isinstance(lic, dict):
    ok = len(lic) > 0 and all(is_str(k) and is_url(v) for k, v in lic.items())
elif isinstance(lic, list):
    ok = len(lic) > 0 and all(x in LICENSES for x in lic)
else:
    ok = lic in LICENSES
check(ok, "license: one of the spec's license strings, a list of them, or {name: URL} (%r)" % (lic,))
ms = meta.get("meta-spec")
check(isinstance(ms, dict) and ms.get("version") == "1.0.0",
      "meta-spec: an object with version \"1.0.0\"")
check(not isinstance(ms, dict) or "url" not in ms or is_url(ms["url"]),
      "meta-spec.url: a URL when present")
prov = meta.get("provides")
check(isinstance(prov, dict) and len(prov) > 0, "provides: a non-empty object")
if isinstance(prov, dict):
    for ext, p in prov.items():
        check(isinstance(p, dict) and is_str(p.get("file")) and is_str(p.get("version"))
              and SEMVER.match(p.get("version", "")) is not None,
              "provides.%s: file and a semantic version" % ext)
        if not isinstance(p, dict):
            continue
        for k in ("abstract", "docfile"):
            if k in p:
                check(is_str(p[k]), "provides.%s.%s: a string" % (ext, k))
        for k in ("file", "docfile"):
            if is_str(p.get(k)):
                check(os.path.isfile(os.path.join(ROOT, p[k])),
                      "provides.%s.%s: %s is in the tree" % (ext, k, p[k]))
        extra = set(p) - {"file", "version", "abstract", "docfile"}
        check(all(k.startswith(("x_", "X_")) for k in extra),
              "provides.%s: no keys outside the spec (%s)" % (ext, ", ".join(sorted(extra)) or "none"))

# ---- optional fields: types when present ----
for k in ("description", "generated_by"):
    if k in meta:
        check(is_str(meta[k]), "%s: a non-empty string" % k)
if "tags" in meta:
    t = meta["tags"]
    check(is_str_list(t) and all(len(x) <= 255 for x in t),
          "tags: a list of strings of at most 255 characters")
if "release_status" in meta:
    check(meta["release_status"] in RELEASE_STATUS,
          "release_status: stable, testing or unstable (%r)" % meta["release_status"])
if "no_index" in meta:
    ni = meta["no_index"]
    check(isinstance(ni, dict) and set(ni) <= {"file", "directory"}
          and all(is_str(v) or is_str_list(v) for v in ni.values()),
          "no_index: file and/or directory, strings or lists of strings")
if "prereqs" in meta:
    pr = meta["prereqs"]
    ok = isinstance(pr, dict) and set(pr) <= PHASES
    for phase in (pr.values() if isinstance(pr, dict) else []):
        ok = ok and isinstance(phase, dict) and set(phase) <= RELATIONS
        for rel in (phase.values() if isinstance(phase, dict) else []):
            ok = ok and isinstance(rel, dict) and all(
                is_str(n) and (v == 0 or (isinstance(v, str) and VERSION_RANGE.match(v)))
                for n, v in rel.items())
    check(ok, "prereqs: phases -> relations -> {name: version or range}")
    req = (pr.get("runtime", {}) or {}).get("requires", {}) if isinstance(pr, dict) else {}
    check(isinstance(req, dict) and isinstance(req.get("PostgreSQL"), str)
          and req["PostgreSQL"].startswith("15"),
          "prereqs.runtime.requires.PostgreSQL: 15.x (%r)" % (req.get("PostgreSQL") if isinstance(req, dict) else None))
if "resources" in meta:
    r = meta["resources"]
    ok = isinstance(r, dict) and all(k in ("homepage", "bugtracker", "repository") or k.startswith("x_") for k in r)
    if ok and "homepage" in r:
        ok = is_url(r["homepage"])
    if ok and "bugtracker" in r:
        b = r["bugtracker"]
        ok = isinstance(b, dict) and set(b) <= {"web", "mailto"} and len(b) > 0
    if ok and "repository" in r:
        rp = r["repository"]
        ok = isinstance(rp, dict) and set(rp) <= {"url", "web", "type"} and len(rp) > 0
    check(ok, "resources: homepage (URL), bugtracker {web, mailto}, repository {url, web, type}")
extra = {k for k in meta if k not in TOP_KEYS and not k.lower().startswith("x_")}
check(not extra, "no top-level keys outside the spec (%s)" % (", ".join(sorted(extra)) or "none"))

# ---- agreement with the tree ----
control = {}
try:
    with open(os.path.join(ROOT, "gpusort.control")) as f:
        for line in f:
            mm = re.match(r"^\s*(\w+)\s*=\s*'?([^'#]*?)'?\s*(#.*)?$", line)
            if mm:
                control[mm.group(1)] = mm.group(2)
except OSError:
    pass
default_version = control.get("default_version", "")
check(default_version != "", "gpusort.control has a default_version (%r)" % default_version)
parts = default_version.split(".")
as_semver = ".".join((parts + ["0", "0"])[:3]) if default_version else ""
check(meta.get("version") == as_semver,
      "version %r is default_version %r as semver (%r)" % (meta.get("version"), default_version, as_semver))
p = prov.get("gpusort", {}) if isinstance(prov, dict) else {}
check(isinstance(p, dict) and p.get("version") == as_semver,
      "provides.gpusort.version %r is %r" % (p.get("version") if isinstance(p, dict) else None, as_semver))
check(isinstance(p, dict) and p.get("file") == "gpusort--%s.sql" % default_version,
      "provides.gpusort.file is the default version's install script gpusort--%s.sql" % default_version)
check(name == "gpusort", "name is the extension's name, gpusort")
try:
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        first = f.readline()
    mm = re.match(r"^\S+ \(([^)-]+)(?:-[^)]*)?\)", first)
    upstream = mm.group(1) if mm else None
    check(upstream == meta.get("version"),
          "debian/changelog's upstream version %r is META.json's" % upstream)
except OSError:
    check(False, "debian/changelog is readable")

# ---- the licence: META.json, LICENSE and debian/copyright agree ----
check(lic == "postgresql", "license is \"postgresql\" (%r)" % (lic,))
try:
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    check(text.startswith("PostgreSQL License") and "gpusort maintainers" in text
          and "Permission to use, copy, modify, and distribute this software" in text,
          "LICENSE states the PostgreSQL Licence, copyright gpusort maintainers")
except OSError:
    check(False, "LICENSE is at the root of the tree")
try:
    with open(os.path.join(ROOT, "debian", "copyright"), encoding="utf-8") as f:
        text = f.read()
    stanzas = re.findall(r"^Files: (\S+)\n(?:.+\n)*?License: (.+)$", text, re.M)
    check(stanzas and all(lic_name == "PostgreSQL" for _, lic_name in stanzas)
          and "\nLicense: PostgreSQL\n Permission to use" in text,
          "debian/copyright: every Files stanza under the PostgreSQL licence, its text included (%s)"
          % ", ".join("%s: %s" % st for st in stanzas))
except OSError:
    check(False, "debian/copyright is readable")

# ---- the majors packaged are those META.json allows ----
try:
    with open(os.path.join(ROOT, "debian", "pgversions")) as f:
        majors = [int(l) for l in (l.strip() for l in f) if l and not l.startswith("#")]
    minimum = int(str(req.get("PostgreSQL", "0")).split(".")[0]) if isinstance(req, dict) else 0
    check(majors and all(m >= minimum for m in majors),
          "debian/pgversions' majors %s are at least META.json's PostgreSQL %s" % (majors, minimum))
except (OSError, ValueError, NameError) as e:
    check(False, "debian/pgversions lists PostgreSQL majors: %s" % e)

passed = sum(results)
failed = len(results) - passed
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
